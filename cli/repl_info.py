"""The interactive loop's read-only commands: /help, /status, /cost, /memory and /permissions (each a
function of the loop, :class:`cli.interactive.Interactive`, registered in its command table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from cli.figures import breakdown_lines, money, run_figures
from cli.repl_text import duration, usage_line
from cli.session_service import service
from cli.sessions import describe
from cli.slash_commands import custom_help
from workflows.permissions.bypass import effective_mode

if TYPE_CHECKING:
    from cli.repl_state import Repl


def help_(ui: Repl, arg: str) -> None:
    """/help: the commands, keys and habits."""
    click.echo("Type a message to send it to the session. Commands:")
    for name, (_, text) in ui.commands.items():
        if text:
            click.echo(f"  {name:<13} {text}")
    for line in custom_help(ui.store.commands(ui.sid), ui.commands):
        click.echo(line)
    click.echo("Keys: Esc or Ctrl-C interrupts a running turn; Shift+Tab cycles the permission mode; \\+Enter "
               "or Alt+Enter starts a new line; Tab completes /commands and @files; Ctrl-C or Ctrl-D at the "
               "prompt leaves. On a terminal, what you type while a turn runs is queued and runs next.")
    click.echo("!COMMAND runs COMMAND in the workspace (bash mode: its output joins the conversation); "
               "# NOTE saves NOTE to CLAUDE.md; @FILE attaches a file to your message.")
    click.echo("A line starting with a path (/tmp/x fails) is sent as a message.")


def status(ui: Repl, arg: str) -> None:
    """/status: the session's facts."""
    rec = ui.record()
    for line in describe(rec, ui.store.inbox(rec.id)):
        click.echo(line)


def cost(ui: Repl, arg: str) -> None:
    """/cost: cost, tokens and API time, per model."""
    rec = ui.record()
    click.echo(f"Total cost:            {money(rec.cost_usd)} (main loop, compactions and memory forks)")
    click.echo(f"Total duration (API):  {duration(rec.api_ms)}")
    click.echo(f"Model turns:           {rec.turns}")
    click.echo(f"Usage:                 {usage_line(rec.usage)}")
    for line in breakdown_lines(rec, indent=""):
        click.echo(line)
    if rec.run_started_at:
        click.echo(f"Last run:              {run_figures(rec)}")
    if rec.usage_by_model:
        click.echo("Usage by model:")
        width = max(len(m) for m in rec.usage_by_model)
        for model, usage in rec.usage_by_model.items():
            click.echo(f"  {model:<{width}}  {usage_line(usage)}  ({money(rec.cost_by_model.get(model, 0.0))})")


def memory(ui: Repl, arg: str) -> None:
    """/memory: the session's notes and the project's MEMORY.md."""
    rec = ui.record()
    notes = ui.store.session_memory(rec.id)
    click.echo(click.style("Session memory", bold=True) + f" ({rec.memory_updates} update(s))")
    click.echo(notes.rstrip() if notes else "  none yet: it is written once the context passes "
               f"{ui.settings.session_memory_init_tokens:,} tokens")
    if not (rec.auto_memory and rec.project_id):
        click.echo(click.style("Auto-memory is off for this session.", dim=True))
        return
    index = service(ui.rt).memory_index(rec)
    click.echo(click.style(f"\nMEMORY.md of {rec.project_root}", bold=True))
    click.echo(index.rstrip() if index else "  no records yet")


def permissions(ui: Repl, arg: str) -> None:
    """/permissions: the mode and the allow / ask / deny rules."""
    rec = ui.record()
    mode = effective_mode(rec)
    click.echo(f"Permission mode: {mode.value}" + ("" if mode is rec.permission_mode else
                                                   " (bypassPermissions is disabled by settings)"))
    for kind in ("allow", "ask", "deny"):
        rules = getattr(rec.rules, kind)
        if not rules:
            click.echo(f"{kind.capitalize()} rules: none")
            continue
        click.echo(f"{kind.capitalize()} rules:")
        width = max(len(r.rule) for r in rules)
        for r in rules:
            click.echo(f"  {r.rule:<{width}}  from {r.source or 'unknown'}")


__all__ = ["cost", "help_", "memory", "permissions", "status"]
