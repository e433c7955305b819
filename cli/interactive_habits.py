"""Claude Code's interactive habits beyond the prompt loop: ``/init``, ``/config``, ``/doctor``, ``/mcp``,
Shift+Tab to cycle the permission mode, and ``mainsail --resume`` with no id (a picker).

Kept apart from cli/interactive.py (the loop itself); :func:`commands` adds these to its table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import click

from cli.session_service import service
from workflows.models import PermissionMode

if TYPE_CHECKING:
    from cli.repl_state import Repl

#: Claude Code's /init request, in substance: the model writes CLAUDE.md itself, with its tools.
INIT_PROMPT = (
    "Please analyze this codebase and create a CLAUDE.md file in the workspace root, which will be given to "
    "future instances of a coding agent working in this repository.\n\n"
    "What to add:\n"
    "1. Commands that will be commonly used, such as how to build, lint, and run tests, including how to run "
    "a single test.\n"
    "2. High-level code architecture and structure, so that future instances can be productive more quickly: "
    "the big picture that requires reading several files to understand.\n\n"
    "Usage notes:\n"
    "- If there's already a CLAUDE.md, suggest improvements to it rather than replacing it.\n"
    "- Don't repeat yourself, and don't include obvious instructions or generic development practices.\n"
    "- If there are Cursor rules (.cursor/rules/ or .cursorrules), Copilot rules "
    "(.github/copilot-instructions.md) or a README.md, include their important parts.\n"
    "- Begin the file with:\n\n"
    "# CLAUDE.md\n\nThis file provides guidance to Claude Code (claude.ai/code) when working with code in this "
    "repository.")

#: The order Shift+Tab goes through (Claude Code's: bypassPermissions only when the session started in it,
#: and never while disableBypassPermissionsMode is set).
CYCLE = [PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.PLAN]
CYCLE_COMMAND = "/__cycle-mode"
SHOWN = {PermissionMode.DEFAULT: "default mode (asks before edits and commands)",
         PermissionMode.ACCEPT_EDITS: "⏵⏵ accept edits on", PermissionMode.PLAN: "⏸ plan mode on (read-only)",
         PermissionMode.BYPASS: "⏵⏵ bypass permissions on", PermissionMode.DONT_ASK: "dontAsk mode"}


def commands(ui: "Repl") -> dict[str, tuple[Callable[[str], None], str]]:
    """These habits as entries of the interactive command table."""
    return {
        "/init": (lambda arg: init(ui), "ask the agent to write a CLAUDE.md for this workspace"),
        "/config": (lambda arg: config(ui), "the settings in effect and where each comes from"),
        "/doctor": (lambda arg: doctor(), "check Redis, workers, the API key and the sandbox"),
        "/mcp": (lambda arg: mcp(ui, arg), "[NAME]  the session's MCP servers and their status (NAME: its tools)"),
        CYCLE_COMMAND: (lambda arg: cycle_mode(ui), ""),  # what Shift+Tab types
    }


def init(ui: "Repl") -> None:
    if (ui.workspace / "CLAUDE.md").exists():
        click.echo("CLAUDE.md exists: the agent will suggest improvements to it.", err=True)
    ui.turn(INIT_PROMPT)


def config(ui: "Repl") -> None:
    from workflows.settings.layers import settings_paths

    rec = ui.record()
    s = ui.settings
    rows = [
        ("model", rec.model), ("permission mode", rec.permission_mode.value),
        ("approval timeout", f"{rec.approval_timeout_seconds:g}s" if rec.approval_timeout_seconds else "none"),
        ("auto-memory", "on" if rec.auto_memory and rec.project_id else "off"),
        ("max turns", rec.max_turns or "none"), ("max budget", f"${rec.max_budget_usd}" if rec.max_budget_usd else "none"),
        ("sandbox", "on" if rec.sandbox.enabled else "off"),
        ("embedded worker", "on" if s.embedded_worker else "off"), ("data dir", s.data_dir),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")
    files = [p for p in settings_paths(Path(rec.workspace), Path(rec.home or Path.home())) if p.exists()]
    click.echo("settings files: " + (", ".join(str(p) for p in files) if files else "none"))
    click.echo(click.style("MAINSAIL_* variables set these defaults (README, Configuration); /permissions shows "
                           "the rules, /model switches the model.", dim=True))


def mcp(ui: "Repl", name: str) -> None:
    from cli.mcp import session_lines

    for line in session_lines(ui.record(), name.strip()):
        click.echo(line)


def doctor() -> None:
    from cli.doctor import run_checks
    from workflows.settings import load_settings

    for check in run_checks(load_settings()):
        click.echo(f"{check.status} {check.name:<12} {check.message}")


def next_mode(ui: "Repl") -> PermissionMode:
    """Shift+Tab: switch the session to the next permission mode of the cycle; that mode."""
    from workflows.permissions.bypass import effective_mode

    current = effective_mode(ui.record())  # a bypassPermissions disabled since is left out of the cycle
    order = CYCLE + ([current] if current not in CYCLE else [])
    nxt = order[(order.index(current) + 1) % len(order)]
    service(ui.rt).update_limits(ui.sid, permission_mode=nxt)
    return nxt


def cycle_mode(ui: "Repl") -> None:
    """The hidden command that cycles the mode in line mode (on a terminal, Shift+Tab cycles it in place)."""
    nxt = next_mode(ui)
    click.echo(click.style(SHOWN[nxt], fg="yellow") + click.style("  (shift+tab to cycle)", dim=True))


def pick_recent(rt, workspace: Path, prompt: Callable[[str], str | None]) -> str | None:
    """``mainsail --resume`` with no id: list this workspace's recent sessions and ask which; None: a new one."""
    import os

    from cli.repl_text import ago

    ws = os.path.realpath(workspace)
    recent = []
    for sid in rt.store.session_ids(limit=10_000):
        rec = rt.store.get_session(sid)
        if rec.workspace == ws and not rec.parent_session_id:  # (a sub-agent is resumed through its parent)
            recent.append(rec)
            if len(recent) >= 10:
                break
    if not recent:
        click.echo(f"No session was started in {ws}; starting a new one.")
        return None
    click.echo(f"Recent sessions in {ws}:")
    for i, rec in enumerate(recent, 1):
        turns = f"{rec.turns} turn{'s' if rec.turns != 1 else ''}"
        click.echo(f"  {i:>2}. {rec.id[:8]}  {(rec.title or '(no messages)')[:40]:<40}  {ago(rec.updated_at):>16}  "
                   f"{turns:>9}  {rec.state.value}")
    choice = (prompt("Resume which? (number or id prefix; Enter starts a new session) ") or "").strip()
    if not choice:
        return None
    if choice.isdigit() and 1 <= int(choice) <= len(recent):
        return recent[int(choice) - 1].id
    return rt.store.resolve_session(choice)


__all__ = ["INIT_PROMPT", "commands", "cycle_mode", "next_mode", "pick_recent"]
