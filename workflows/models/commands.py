"""What a custom slash command is (its file, parsed) and one run of it (held in the session record).

No imports from the rest of ``workflows``: :mod:`workflows.models` keeps a :class:`CommandRun` in the
session record, so this module must load before it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from workflows.models.valid_text import ValidJson


class _Model(ValidJson):
    model_config = ConfigDict(extra="ignore")


class CommandDefinition(_Model):
    """One command file: ``.claude/commands/NAME.md`` (project) or ``~/.claude/commands/NAME.md`` (user).

    ``name`` is the file's path under the commands folder without ``.md``, folders joined by ``:``
    (``frontend/test.md`` → ``frontend:test``), as in Claude Code.
    """

    name: str
    body: str  # the markdown after the frontmatter: the prompt template
    description: str = ""  # the frontmatter's, else the body's first line
    argument_hint: str = ""
    allowed_tools: list[str] = Field(default_factory=list)  # permission rules, for the run it starts
    model: str | None = None  # the model of the run it starts (None: the session's)
    disable_model_invocation: bool = False  # True: the Skill tool refuses it; only a person invokes it (/name)
    scope: Literal["project", "user", "plugin"] = "project"  # plugin: a --plugin-dir outside the workspace
    path: str = ""  # the file it came from
    # A skill (``.claude/skills/NAME/SKILL.md``): its folder, named to the model before its text ("Base directory
    # for this skill: ..."), as Claude Code does; "" for a command file.
    skill_dir: str = ""


class CommandLine(_Model):
    """One ``!`cmd``` line (a Bash call) or ``@path`` reference (a Read call) of a run, before the prompt.

    ``pattern`` is its text in the command's body; ``tool_use_id`` names its call in
    ``SessionRecord.tool_calls`` while it runs (never a tool_use of the transcript).
    """

    kind: Literal["bash", "file"]
    pattern: str  # "!`git status`" or "@src/a.py"
    tool_input: dict = Field(default_factory=dict)
    tool_use_id: str = ""
    output: str | None = None  # the call's result text, once it ran
    error: str | None = None  # why it failed (a bash line: the command is refused; a file: left out)


class CommandRun(_Model):
    """A command invoked by a prompt (``/name args``), held in the session record from the run's start until
    its prompt is sent: its ``!`` lines and ``@`` references run first, as calls on the tools worker.

    The same run carries interactive mode's two habits (``kind``): ``mention``, a plain prompt whose ``@path``
    words attach files (each a Read call; one that cannot be attached is left out with a warning), and
    ``bash``, Claude Code's bash mode (``<bash-input>cmd</bash-input>``: one Bash call whose output joins the
    conversation, without a model call)."""

    kind: Literal["command", "mention", "bash"] = "command"
    name: str
    typed: str  # the prompt as submitted: "/review src/a.py"
    args: str = ""
    texts: list[str]  # the body with the arguments in place, split around its ``!`…``` lines
    lines: list[CommandLine] = Field(default_factory=list)
    allowed_tools: list[str] = Field(default_factory=list)
    model: str | None = None
    path: str = ""
    context: list[str] = Field(default_factory=list)  # UserPromptSubmit context, added after the prompt
    failure: str | None = None  # the run ends with this instead of calling the model


__all__ = ["CommandDefinition", "CommandLine", "CommandRun"]
