"""Custom slash commands: Claude Code's ``.claude/commands/*.md`` files and ``.claude/skills/*/SKILL.md`` skills,
invoked as ``/name args`` (and skills, by the model, with the Skill tool).

- :mod:`~workflows.models.commands`: a command file parsed, and one run of it (kept in the session record);
- :mod:`~workflows.commands.definitions`: reading the files (frontmatter, namespaces, user over project);
- :mod:`~workflows.commands.skills`: reading the skills' folders; :mod:`~workflows.commands.load`: both together;
- :mod:`~workflows.commands.expand`: arguments, ``!`` lines, ``@`` references, and the prompt it sends.

The engine runs a command's ``!`` lines and ``@`` references as calls on the tools worker before its
prompt is sent (:mod:`workflows.engine.commands`).
"""

from workflows.commands.definitions import (
    CommandFileError,
    CommandSet,
    parse_command_file,
)
from workflows.commands.expand import (
    CommandError,
    expand,
    parse_invocation,
    prompt_blocks,
)
from workflows.commands.load import load_commands
from workflows.models.commands import CommandDefinition, CommandLine, CommandRun

__all__ = ["CommandDefinition", "CommandError", "CommandFileError", "CommandLine", "CommandRun", "CommandSet",
           "expand", "load_commands", "parse_command_file", "parse_invocation", "prompt_blocks"]
