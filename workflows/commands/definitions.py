"""Custom slash commands from files, as Claude Code reads them.

- ``<workspace>/.claude/commands/**/*.md`` (project) and ``~/.claude/commands/**/*.md`` (user). A file's
  name without ``.md`` is the command's name; folders namespace it with ``:``
  (``frontend/test.md`` → ``/frontend:test``).
- A user command wins over a project command of the same name: Claude Code 2.1.330 does so (personal
  over project, as its docs say of skills), and it keeps a cloned repository from replacing a command
  you rely on.
- Optional YAML frontmatter: ``description``, ``argument-hint``, ``allowed-tools`` (permission rules,
  a comma-separated string or a list), ``model``, ``disable-model-invocation``. Claude Code's files
  often hold values strict YAML refuses (``argument-hint: [file] [focus]``, ``description: Fix: x``),
  so a frontmatter YAML cannot read is read as plain ``key: value`` lines, as Claude Code does.
- The body is the prompt template (see :mod:`workflows.commands.expand`).

A file that cannot be used is left out with a problem naming the file and the fix; it never stops the
session. Other frontmatter keys (skills' ``context``, ``agent``, ``hooks``...) are reported as ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflows.frontmatter import flag, split_frontmatter
from workflows.models.commands import CommandDefinition

__all__ = ["CommandFileError", "CommandSet", "load_command_files", "name_problem", "parse_command_file", "MAX_FILE_BYTES",
           "MAX_COMMANDS", "MAX_DEPTH"]

MAX_FILE_BYTES = 256 * 1024  # a bigger command file is left out (its whole body would be one prompt)
MAX_COMMANDS = 500  # per folder; more are left out
MAX_DEPTH = 5  # folders below commands/ that are looked into

KNOWN_KEYS = ("description", "argument-hint", "allowed-tools", "model", "disable-model-invocation")
SKILL_KEYS = KNOWN_KEYS + ("name",)  # a skill's frontmatter may name it (workflows.commands.skills)
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*))?$")


class CommandFileError(ValueError):
    """A command file that cannot be used; the message names it and the fix."""


@dataclass
class CommandSet:
    """The commands a session offers, and what was wrong with the files left out."""

    commands: dict[str, CommandDefinition] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _raw_lines(block: str) -> dict[str, str] | None:
    """``key: value`` lines as written (None when a line is not of that form and not blank or a comment)."""
    out: dict[str, str] = {}
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line.rstrip())
        if m is None:
            return None
        out[m.group(1)] = (m.group(2) or "").strip()
    return out


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _frontmatter(block: str, where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The frontmatter as YAML values (falling back to the raw lines) and as the raw lines."""
    import yaml  # (~20 ms to load: where a command file is read)

    raw = _raw_lines(block) or {}
    try:
        fields = yaml.safe_load(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        if _raw_lines(block) is None:
            problem = str(exc).splitlines()[0]
            raise CommandFileError(f"{where}: the frontmatter is neither YAML ({problem}) nor 'key: value' "
                                   "lines. Quote the value, or put each key on a line of its own.") from None
        fields = {k: _unquote(v) for k, v in raw.items()}
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        raise CommandFileError(f"{where}: the frontmatter must be 'key: value' lines, not a "
                               f"{type(fields).__name__}.")
    return fields, raw


def _text(fields: dict, raw: dict, key: str, where: str) -> str:
    """A text field: YAML's string, or the line as written when YAML read something else (``[a] [b]``)."""
    value = fields.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, int, float, bool)) and raw.get(key):
        return _unquote(raw[key])
    raise CommandFileError(f"{where}: '{key}' must be text, not {type(value).__name__}.")


def _allowed_tools(value: Any, where: str) -> list[str]:
    from workflows.permissions.rules.rules import RuleSyntaxError, parse_rule, split_rules

    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        rules = [r for v in value for r in split_rules(v)]
    elif isinstance(value, str):
        rules = split_rules(value)
    else:
        raise CommandFileError(f"{where}: 'allowed-tools' must be permission rules, comma-separated or a list "
                               f"(e.g. Bash(git status:*), Read), not {type(value).__name__}.")
    for rule in rules:
        try:
            parse_rule(rule)
        except RuleSyntaxError as exc:
            raise CommandFileError(f"{where}: 'allowed-tools': {exc}.") from None
    return rules


def _model(value: str, where: str) -> str | None:
    from workflows.models.model_names import valid_name

    if value in ("", "inherit"):
        return None
    if not valid_name(value):
        raise CommandFileError(f"{where}: 'model' {value!r} is not a model name; use sonnet, opus, haiku, a model "
                               "id, or inherit.")
    return value


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a command or a skill (None: it can)."""
    if all(_SEGMENT.match(part) for part in name.split(":")):
        return None
    return ("a command name is letters, digits, '-', '_' and '.' (and folders for namespaces); rename the file "
            "(or, for a skill, its folder or its 'name').")


def parse_command_file(text: str, name: str, where: str, scope: str = "project",
                       skill: bool = False) -> tuple[CommandDefinition, list[str]]:
    """A command from a markdown file (frontmatter optional), and notes about keys it ignores. ``skill``: a
    SKILL.md, whose frontmatter ``name`` (when given) names it instead of ``name``.

    Raises:
        CommandFileError: unreadable frontmatter or an invalid field value.
    """
    text = text.lstrip("\ufeff")
    fields: dict[str, Any] = {}
    raw: dict[str, str] = {}
    body = text
    if text.startswith("---"):
        split = split_frontmatter(text)
        if split is None:
            raise CommandFileError(f"{where}: the frontmatter opened by '---' on the first line is never closed. "
                                   "End it with a line '---', or remove the first line.")
        fields, raw = _frontmatter(split[0], where)
        body = split[1]
    description = _text(fields, raw, "description", where)
    if not description:
        first = next((line.strip() for line in body.splitlines() if line.strip()), "")
        description = first if len(first) <= 100 else first[:99] + "…"
    known = SKILL_KEYS if skill else KNOWN_KEYS
    if skill and _text(fields, raw, "name", where):
        name = _text(fields, raw, "name", where)
    definition = CommandDefinition(
        name=name, body=body, description=description, argument_hint=_text(fields, raw, "argument-hint", where),
        allowed_tools=_allowed_tools(fields.get("allowed-tools"), where),
        model=_model(_text(fields, raw, "model", where), where),
        disable_model_invocation=flag(fields.get("disable-model-invocation"), "disable-model-invocation", where,
                                      CommandFileError), scope=scope, path=where)
    ignored = [k for k in fields if k not in known]
    notes = [f"{where}: frontmatter key{'s' if len(ignored) > 1 else ''} {', '.join(map(repr, ignored))} "
             f"{'are' if len(ignored) > 1 else 'is'} not supported by Mainsail and ignored."] if ignored else []
    return definition, notes


def _files(root: Path) -> list[tuple[str, Path]]:
    """``(name, path)`` of the ``.md`` files under ``root``, folders as ``:``-joined namespaces, sorted."""
    out: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root):  # (symlinked folders are not entered: no loops)
        rel = Path(folder).relative_to(root).parts
        if len(rel) >= MAX_DEPTH:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.endswith(".md") and not f.startswith("."):
                out.append((":".join([*rel, f[:-3]]), Path(folder) / f))
    return out


def _load_folder(root: Path, scope: str, out: CommandSet) -> dict[str, CommandDefinition]:
    found: dict[str, CommandDefinition] = {}
    if not root.is_dir():
        return found
    files = _files(root)
    if len(files) > MAX_COMMANDS:
        out.problems.append(f"{root}: {len(files)} command files; only the first {MAX_COMMANDS} (by name) are "
                            "loaded.")
        files = files[:MAX_COMMANDS]
    for name, path in files:
        where = str(path)
        if (problem := name_problem(name)) is not None:
            out.problems.append(f"{where}: left out: {problem}")
            continue
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                out.problems.append(f"{where}: left out: larger than {MAX_FILE_BYTES // 1024} KiB.")
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            out.problems.append(f"{where}: left out: cannot be read as UTF-8 text ({exc}).")
            continue
        try:
            definition, notes = parse_command_file(text, name, where, scope)
        except CommandFileError as exc:
            out.problems.append(f"{exc} (left out)")
            continue
        out.problems.extend(notes)
        found[name] = definition
    return found


def load_command_files(workspace: str, home: str, out: CommandSet) -> dict[str, CommandDefinition]:
    """The command files a session in ``workspace`` offers: the project's, with the user's over them (see
    :func:`workflows.commands.load.load_commands` for commands and skills together)."""
    project_dir = Path(workspace) / ".claude" / "commands"
    user_dir = Path(home or os.path.expanduser("~")) / ".claude" / "commands"
    same = os.path.realpath(project_dir) == os.path.realpath(user_dir)  # a session in the home folder
    project = {} if same else _load_folder(project_dir, "project", out)
    user = _load_folder(user_dir, "user", out)
    shadowed = sorted(set(project) & set(user))
    for name in shadowed:
        out.problems.append(f"/{name}: your {user[name].path} is used; the project's {project[name].path} is not "
                            "(a user command wins over a project command of the same name, as in Claude Code).")
    return {**project, **user}
