"""A session's slash commands: its command files and its skills, together (the one list ``/name``, the Skill
tool and the SDK's ``slash_commands`` read)."""

from __future__ import annotations

from workflows.commands.definitions import CommandSet, load_command_files
from workflows.commands.skills import load_skills

__all__ = ["load_commands"]


def load_commands(workspace: str, home: str, plugins=()) -> CommandSet:
    """The commands a session in ``workspace`` offers: its skills, then its command files (a skill wins over a
    command of the same name, as in Claude Code), its plugins' as ``PLUGIN:NAME`` among them
    (:func:`workflows.plugins.plugin_commands`); what was wrong with the files left out."""
    from workflows.plugins import plugin_commands

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
