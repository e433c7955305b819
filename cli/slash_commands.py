"""Custom slash commands in the front doors: read when a command opens a session, listed by ``/help``,
``system/init`` and the SDK's ``initialize``, and named when a prompt invokes one that does not exist.

Invoking one is only submitting ``/name args``: the engine expands it and runs its lines
(:mod:`workflows.engine.commands`), whoever submits it (interactive mode, ``-p``, ``send``, an SDK client).
"""

from __future__ import annotations

import click

from cli.session_service import service
from workflows.commands import CommandDefinition, parse_invocation

__all__ = ["custom_help", "read_commands", "sdk_commands", "unknown_command_note"]


def read_commands(rt, sid: str) -> dict[str, CommandDefinition]:
    """Read the session's command files afresh (a new or resumed session sees today's files); each file left
    out, and each project command a user command replaces, is said on stderr."""
    for problem in service(rt).refresh_commands(sid):
        click.secho(f"Warning: custom command {problem}", fg="yellow", err=True)
    return rt.store.commands(sid)


def custom_help(commands: dict[str, CommandDefinition], builtins) -> list[str]:
    """``/help``'s lines for the session's custom commands: name, argument hint, description, where from."""
    if not commands:
        return ["No custom commands: add .claude/commands/NAME.md (this project) or ~/.claude/commands/NAME.md "
                "(yours) to make /NAME."]
    out = ["Custom commands (.claude/commands/ of the workspace, ~/.claude/commands/):"]
    for c in commands.values():
        usage = f"/{c.name}" + (f" {c.argument_hint}" if c.argument_hint else "")
        hidden = f" [hidden by the built-in /{c.name}]" if f"/{c.name.lower()}" in builtins else ""
        out.append(f"  {usage:<13} {c.description} ({c.scope}){hidden}")
    return out


def sdk_commands(commands: dict[str, CommandDefinition]) -> list[dict]:
    """The ``commands`` of the SDK's ``initialize`` response, as Claude Code lists its custom commands."""
    return [{"name": c.name, "description": f"{c.description} ({c.scope})".lstrip(), "argumentHint": c.argument_hint}
            for c in commands.values()]


def unknown_command_note(prompt: str, commands: dict[str, CommandDefinition]) -> str | None:
    """For a prompt that looks like ``/name args`` naming no custom command: the line that says so (it is sent
    to the model as written, as Claude Code sends it)."""
    parsed = parse_invocation(prompt or "")
    if parsed is None or parsed[0] in commands:
        return None
    known = ", ".join(f"/{n}" for n in commands) or "none"
    return (f"No custom command /{parsed[0]} here (custom commands: {known}; they are .claude/commands/*.md files "
            "of the workspace and ~/.claude/commands/*.md); the prompt is sent to the model as written.")
