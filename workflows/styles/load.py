"""Output styles, as Claude Code 2.1.332 reads them.

- built in: ``default`` (no style), and Proactive, Concise, Explanatory and Learning, whose texts are Claude Code's
  own (``workflows/styles/builtin/*.md``, taken from the bundled CLI);
- ``~/.claude/output-styles/*.md`` (user), then ``<workspace>/.claude/output-styles/*.md`` (project: it wins over a
  user style of the same name, as in Claude Code); a plugin's ``output-styles/`` as ``PLUGIN:NAME``;
- frontmatter ``name`` (else the file's name), ``description``, ``keep-coding-instructions``; the body is the style's
  prompt.

The setting ``outputStyle`` picks one by name. A file that cannot be read is left out with a problem naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from workflows.frontmatter import flag, read_file, split_frontmatter, yaml_mapping
from workflows.models.session import OutputStyle

__all__ = ["DEFAULT_STYLE", "OUTPUT_STYLE_INTRO", "StyleSet", "styled", "builtin_styles", "load_styles", "parse_style", "session_styles"]

DEFAULT_STYLE = "default"
BUILTIN_DIR = Path(__file__).with_name("builtin")
BUILTIN_ORDER = ("Proactive", "Concise", "Explanatory", "Learning")  # as Claude Code lists them
MAX_FILE_BYTES = 1024 * 1024  # Claude Code's limit for a style file
#: The first paragraph of the default prompt with an output style on: Claude Code 2.1.332's words.
OUTPUT_STYLE_INTRO = ('You are an interactive agent that helps users according to your "Output Style", which '
                      'describes how you should respond to user queries.')


class StyleFileError(ValueError):
    """An output style file that cannot be used; the message names it and the fix."""


@dataclass
class StyleSet:
    """The output styles a session can pick from (by name, in Claude Code's order), and what was left out."""

    styles: dict[str, OutputStyle] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        return [DEFAULT_STYLE, *self.styles]


def parse_style(text: str, stem: str, where: str, source: str, prefix: str = "") -> OutputStyle:
    """A style from a markdown file (frontmatter optional); ``stem``: the file's name without ``.md``;
    ``prefix``: a plugin's name (its styles are named ``PLUGIN:NAME``).

    Raises:
        StyleFileError: the frontmatter is not ``key: value`` lines, or a field has the wrong type.
    """
    fields: dict = {}
    body = text.lstrip("\ufeff")
    split = split_frontmatter(body) if body.startswith("---") else None
    if split is not None:
        fields = yaml_mapping(split[0], where, StyleFileError)
        body = split[1]
    name = fields.get("name")
    name = str(name).strip() if name is not None and str(name).strip() else stem
    description = fields.get("description")
    if description is not None and not isinstance(description, str):
        raise StyleFileError(f"{where}: 'description' must be text, not {type(description).__name__}.")
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return OutputStyle(name=f"{prefix}:{name}" if prefix else name, source=source,
                       description=(description or "").strip() or first[:100] or f"Custom {stem} output style",
                       prompt=body.strip(),
                       keep_coding_instructions=flag(fields.get("keep-coding-instructions"),
                                                                "keep-coding-instructions", where, StyleFileError))


def _from_dir(folder: Path, source: str, out: StyleSet, prefix: str = "") -> dict[str, OutputStyle]:
    found: dict[str, OutputStyle] = {}
    try:
        files = sorted(p for p in folder.glob("*.md") if p.is_file())
    except OSError:
        return found  # no folder (or not readable: nothing to offer)
    for path in files:
        where = str(path)
        if (text := read_file(path, MAX_FILE_BYTES, out.problems)) is None:
            continue
        try:
            style = parse_style(text, path.stem, where, source, prefix)
        except StyleFileError as exc:
            out.problems.append(f"{exc} (left out)")
            continue
        found[style.name] = style
    return found


def builtin_styles() -> dict[str, OutputStyle]:
    """Claude Code 2.1.332's built-in styles (besides ``default``), in its order."""
    found = _from_dir(BUILTIN_DIR, "built-in", StyleSet())
    return {name: found[name] for name in BUILTIN_ORDER}


def load_styles(workspace: str, home: str, plugins: tuple = ()) -> StyleSet:
    """The styles a session in ``workspace`` can use: built in, its plugins', the user's, then the project's
    (later ones win a name). ``plugins``: the session's plugins (:class:`~workflows.models.session.Plugin`)."""
    out = StyleSet()
    styles = builtin_styles()
    for plugin in plugins:
        styles.update(_from_dir(Path(plugin.path) / "output-styles", "plugin", out, plugin.name))
    user_dir = Path(home or os.path.expanduser("~")) / ".claude" / "output-styles"
    project_dir = Path(workspace) / ".claude" / "output-styles"
    styles.update(_from_dir(user_dir, "userSettings", out))
    if os.path.realpath(project_dir) != os.path.realpath(user_dir):
        styles.update(_from_dir(project_dir, "projectSettings", out))
    styles.pop(DEFAULT_STYLE, None)  # ("default" is no style; a file cannot take its name)
    out.styles = styles
    return out


def session_styles(rec) -> tuple[str, list[str]]:
    """A session's output style's name and the names of the styles it could use (the SDK's ``initialize``)."""
    return (rec.output_style.name if rec.output_style else DEFAULT_STYLE,
            load_styles(rec.workspace, rec.home, tuple(rec.plugins)).names())


def styled(prompt: str | None, default: str, system_context: str, style: tuple[str, str] | None
           ) -> tuple[str | None, str]:
    """The system prompt (None: ``default``, unchanged) and the system context with ``style`` (``(name, prompt)``)
    on, as Claude Code 2.1.332 sends them: the default prompt's first paragraph becomes :data:`OUTPUT_STYLE_INTRO`,
    and, whatever the prompt (the SDK sends ``--system-prompt ""``), ``# Output Style: NAME`` and the style's
    prompt follow the environment."""
    if style is None:
        return prompt, system_context
    if prompt is None:
        prompt = OUTPUT_STYLE_INTRO + default[default.index("\n\n"):]
    return prompt, "\n\n".join(t for t in (system_context, f"# Output Style: {style[0]}\n{style[1]}") if t)
