"""Output styles (Claude Code's ``outputStyle``): built in, ``.claude/output-styles/*.md`` and a plugin's; see
:mod:`workflows.styles.load`. A session's style is picked once, when it starts (``session.output_style``), and its
prompt joins the system prompt (:func:`styled`, from :func:`workflows.context.assemble.system_blocks`)."""

from workflows.styles.load import (
    DEFAULT_STYLE,
    OUTPUT_STYLE_INTRO,
    StyleSet,
    builtin_styles,
    load_styles,
    parse_style,
    session_styles,
    styled,
)

__all__ = ["DEFAULT_STYLE", "OUTPUT_STYLE_INTRO", "StyleSet", "styled", "builtin_styles", "load_styles", "parse_style", "session_styles"]
