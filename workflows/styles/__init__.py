"""Output styles (Claude Code's ``outputStyle``): built in, ``.claude/output-styles/*.md`` and a plugin's; see
:mod:`workflows.styles.load`. A session's style is picked once, when it starts (``session.output_style``), and its
prompt joins the system prompt (:func:`workflows.context.files.system_prompt`)."""

from workflows.styles.load import DEFAULT_STYLE, StyleSet, builtin_styles, load_styles, parse_style, session_styles

__all__ = ["DEFAULT_STYLE", "StyleSet", "builtin_styles", "load_styles", "parse_style", "session_styles"]
