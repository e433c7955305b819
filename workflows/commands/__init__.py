"""Custom slash commands: Claude Code's ``.claude/commands/*.md`` files, invoked as ``/name args``.

- :mod:`~workflows.models.commands`: a command file parsed, and one run of it (kept in the session record);
- :mod:`~workflows.commands.definitions`: reading the files (frontmatter, namespaces, user over project);
- :mod:`~workflows.commands.expand`: arguments, ``!`` lines, ``@`` references, and the prompt it sends.

The engine runs a command's ``!`` lines and ``@`` references as calls on the tools worker before its
prompt is sent (:mod:`workflows.engine.commands`).
"""

from workflows.commands.definitions import (
    CommandFileError,
    CommandSet,
    load_commands,
    parse_command_file,
)
from workflows.commands.expand import (
    CommandError,
    expand,
    parse_invocation,
    prompt_blocks,
)
from workflows.models.commands import CommandDefinition, CommandLine, CommandRun

__all__ = ["CommandDefinition", "CommandError", "CommandFileError", "CommandLine", "CommandRun", "CommandSet",
           "expand", "load_commands", "parse_command_file", "parse_invocation", "prompt_blocks"]
