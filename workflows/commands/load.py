"""A session's slash commands: its command files and its skills, together (the one list ``/name``, the Skill
tool and the SDK's ``slash_commands`` read)."""

from __future__ import annotations

import os
from pathlib import Path

from workflows.commands import definitions, skills
from workflows.commands.definitions import CommandSet, load_command_files
from workflows.commands.skills import load_skills
from workflows.permissions.rules.paths import inside

__all__ = ["load_commands", "plugin_commands"]


def plugin_commands(plugins: list, workspace: str, out: CommandSet) -> tuple[dict, dict]:
    """The plugins' command files and skills, named ``PLUGIN:NAME`` (:mod:`workflows.plugins`): ``(commands,
    skills)``. A plugin inside the workspace is the project's (its ``allowed-tools`` count only in a trusted
    workspace, as a project command's)."""
    commands: dict = {}
    found_skills: dict = {}
    for p in plugins:
        root = Path(p.path)
        scope = "project" if inside(os.path.realpath(p.path), os.path.realpath(workspace)) else "plugin"
        for name, c in definitions._load_folder(root / "commands", scope, out).items():
            commands[f"{p.name}:{name}"] = c.model_copy(update={"name": f"{p.name}:{name}"})
        for name, c in skills._load_folder(root / "skills", scope, out).items():
            short = name.removeprefix(f"{p.name}:")
            found_skills[f"{p.name}:{short}"] = c.model_copy(update={"name": f"{p.name}:{short}"})
    return commands, found_skills


def load_commands(workspace: str, home: str, plugins=()) -> CommandSet:
    """The commands a session in ``workspace`` offers: its skills, then its command files (a skill wins over a
    command of the same name, as in Claude Code), its plugins' as ``PLUGIN:NAME`` among them
    (:func:`plugin_commands`); what was wrong with the files left out."""
    out = CommandSet()
    commands = load_command_files(workspace, home, out)
    skills = load_skills(workspace, home, out)
    from_plugins, plugin_skills = plugin_commands(list(plugins), workspace, out)
    for name in sorted(set(commands) & set(skills)):
        out.problems.append(f"/{name}: the skill {skills[name].path} is used; the command {commands[name].path} is "
                            "not (a skill wins over a command of the same name, as in Claude Code).")
    # In Claude Code's order (its init's slash_commands): skills, commands, then the plugins' commands and skills.
    out.commands = {**dict(sorted(skills.items())), **{n: c for n, c in sorted(commands.items()) if n not in skills},
                    **from_plugins, **plugin_skills}
    return out
