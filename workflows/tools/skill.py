"""Skill: the model invokes one of the session's skills (or custom commands) by name, as in Claude Code.

The session's skills and commands (:mod:`workflows.commands.load`) are listed to the model in a reminder
(:func:`skill_listing`); a call loads the named one's text into the turn: the result says ``Launching skill:
NAME`` and the text follows it as a block of its own (``ToolOutput.followup``; Claude Code's synthetic user
message), with the skill's folder named first. The skill's ``allowed-tools`` hold for the rest of the run, as
a command's do (not from a repository's file in an untrusted workspace). It needs no worker: the engine
applies it where the reply is committed (:attr:`Tool.inline`), with the session's commands.

Not done here, and said so to the model: a skill whose text runs shell lines (``!`…```) runs only when a
person types ``/NAME`` (the engine runs those lines as checked Bash calls before the prompt); one with
``disable-model-invocation: true`` is for a person only, as in Claude Code.
"""

from __future__ import annotations

import difflib

from pydantic import Field

from workflows.commands.expand import CommandError, expand
from workflows.exceptions import ToolError
from workflows.models import RuleSpec
from workflows.models.commands import CommandDefinition
from workflows.tools.base import Tool, ToolInput, ToolOutput, register

__all__ = ["LISTING_HEADER", "Skill", "SkillInput", "model_skills", "skill_listing"]

DESCRIPTION = (
    "Invoke a skill.\n\n"
    "A skill is a packaged set of instructions the user or project has set up for a particular kind of task (deploy "
    "steps, a review checklist, a repo-specific workflow). Available skills appear in a system-reminder listing with "
    "one-line descriptions. When the task at hand is one a listed skill covers, call this tool first \u2014 the "
    "skill's instructions load into the turn for you to follow in place of your default approach. Users may also ask "
    "for one by name (`/<name>`, or \"slash command\"); that's a request to invoke it.\n\n"
    "- `skill`: exact name from the listing, no leading slash.\n"
    "- `args`: optional arguments to pass through.\n\n"
    "Only names from the listing (or that the user typed explicitly) are valid. Built-in CLI commands (`/help`, "
    "`/clear`, \u2026) aren't skills. If a `<command-name>` block is already present this turn, the skill is loaded "
    "\u2014 follow it directly rather than calling again.\n")

LISTING_HEADER = "The following skills are available for use with the Skill tool:"


class SkillInput(ToolInput):
    skill: str = Field(description="The name of a skill from the available-skills list. Do not guess names.")
    args: str | None = Field(default=None, description="Optional arguments for the skill")


def model_skills(commands: dict[str, CommandDefinition]) -> dict[str, CommandDefinition]:
    """The skills and commands the model may invoke (not those that say ``disable-model-invocation``)."""
    return {n: c for n, c in commands.items() if not c.disable_model_invocation}


def skill_listing(commands: dict[str, CommandDefinition]) -> str:
    """The reminder that lists the skills to the model ("" when there is none), Claude Code's text."""
    offered = model_skills(commands)
    if not offered:
        return ""
    lines = [f"- {name}: {c.description}" if c.description else f"- {name}" for name, c in offered.items()]
    return "<system-reminder>\n" + LISTING_HEADER + "\n\n" + "\n".join(lines) + "\n</system-reminder>"


@register
class Skill(Tool):
    name = "Skill"
    description = DESCRIPTION
    input_model = SkillInput
    read_only = True
    inline = True
    reads_commands = True

    def summary(self, args: dict) -> str:
        return str(args.get("skill", ""))

    def apply(self, rec, args: SkillInput, commands: dict[str, CommandDefinition] | None = None) -> ToolOutput:
        name = args.skill.strip().lstrip("/")
        found = (commands or {}).get(name)
        if found is None:
            close = difflib.get_close_matches(name, list(model_skills(commands or {})), n=1)
            raise ToolError(f"Unknown skill: {name}." + (f" Did you mean {close[0]}?" if close else ""))
        if found.disable_model_invocation:
            raise ToolError(f"Skill {name} cannot be used with the Skill tool: it sets disable-model-invocation "
                            f"(only a person invokes it, as /{name}).")
        given = args.args or ""
        try:
            run = expand(found, f"/{name} {given}".strip(), given)
        except CommandError as exc:
            raise ToolError(str(exc)) from None
        if any(line.kind == "bash" for line in run.lines):
            raise ToolError(f"Skill {name} runs shell lines (!`\u2026`) before its text, which Mainsail runs only "
                            f"when a person invokes it: ask the user to type /{name}" + (f" {given}" if given else "")
                            + ".")
        display = f"Launching skill: {name}"
        if found.allowed_tools:
            if found.scope == "project" and rec.untrusted_workspace:
                display += " (its allowed-tools not applied: the workspace is not trusted)"
            else:
                rec.run_allow = [*rec.run_allow, *(RuleSpec(rule=r, source=f"allowed-tools of skill {name} "
                                                                          f"({found.path})")
                                                   for r in found.allowed_tools)]
        return ToolOutput(content=f"Launching skill: {name}", display=display, followup="".join(run.texts))
