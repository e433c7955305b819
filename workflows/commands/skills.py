"""Skills, as Claude Code reads them: ``<workspace>/.claude/skills/NAME/SKILL.md`` (project) and
``~/.claude/skills/NAME/SKILL.md`` (user).

A skill is a command with a folder: the same frontmatter (``name``, ``description``, ``allowed-tools``,
``model``, ``disable-model-invocation``, ``argument-hint``), the same body template
(:mod:`workflows.commands.expand`), invoked by a person as ``/NAME`` or by the model with the Skill tool
(:mod:`workflows.tools.skill`). Its text reaches the model after ``Base directory for this skill: <folder>``,
so the files beside SKILL.md can be read. ``name`` in the frontmatter names it; else its folder does.
A skill wins over a command file of the same name, as in Claude Code (its docs: "if a skill and a command
share the same name, the skill takes precedence"); a user skill over a project skill, as for commands.
"""

from __future__ import annotations

import os
from pathlib import Path

from workflows.commands.definitions import (
    MAX_COMMANDS,
    MAX_FILE_BYTES,
    CommandFileError,
    CommandSet,
    name_problem,
    parse_command_file,
)
from workflows.frontmatter import read_file
from workflows.models.commands import CommandDefinition

__all__ = ["SKILL_FILE", "load_skills"]

SKILL_FILE = "SKILL.md"


def _load_folder(root: Path, scope: str, out: CommandSet) -> dict[str, CommandDefinition]:
    found: dict[str, CommandDefinition] = {}
    try:
        folders = sorted(d for d in os.listdir(root) if not d.startswith(".") and (root / d / SKILL_FILE).is_file())
    except OSError:
        return found  # no skills folder (or not readable: nothing to offer)
    if len(folders) > MAX_COMMANDS:
        out.problems.append(f"{root}: {len(folders)} skills; only the first {MAX_COMMANDS} (by name) are loaded.")
        folders = folders[:MAX_COMMANDS]
    for folder in folders:
        path = root / folder / SKILL_FILE
        where = str(path)
        if (text := read_file(path, MAX_FILE_BYTES, out.problems)) is None:
            continue
        try:
            definition, notes = parse_command_file(text, folder, where, scope, skill=True)
        except CommandFileError as exc:
            out.problems.append(f"{exc} (left out)")
            continue
        name = definition.name
        if (problem := name_problem(name)) is not None:
            out.problems.append(f"{where}: left out: {problem}")
            continue
        out.problems.extend(notes)
        found[name] = definition.model_copy(update={"skill_dir": str(root / folder)})
    return found


def load_skills(workspace: str, home: str, out: CommandSet) -> dict[str, CommandDefinition]:
    """The skills a session in ``workspace`` offers: the project's, with the user's over them; what was wrong
    with the folders left out goes to ``out.problems``."""
    project_dir = Path(workspace) / ".claude" / "skills"
    user_dir = Path(home or os.path.expanduser("~")) / ".claude" / "skills"
    same = os.path.realpath(project_dir) == os.path.realpath(user_dir)
    project = {} if same else _load_folder(project_dir, "project", out)
    user = _load_folder(user_dir, "user", out)
    for name in sorted(set(project) & set(user)):
        out.problems.append(f"skill {name}: your {user[name].path} is used; the project's {project[name].path} is "
                            "not (a user skill wins over a project skill of the same name).")
    return {**project, **user}
