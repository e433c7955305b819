"""The interactive loop's session switches: /clear (a new session with the same options) and /resume (another
session of the workspace), each a function of the loop (:class:`cli.interactive.Interactive`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from cli.interactive_open import announce, end_session, recap, same_options, same_setup
from cli.repl_text import ago, cut
from cli.session_service import say_warnings, service
from cli.slash_commands import read_commands
from cli.standby import require_model_access
from workflows.models import SessionRecord

if TYPE_CHECKING:
    from cli.repl_state import Repl

RECENT = 10  # sessions /resume lists


def clear(ui: Repl, arg: str) -> None:
    """/clear: end this session and start a new one here with its options and setup."""
    old = ui.record()
    end_session(ui.rt, old.id, "clear", old, wait=False)
    rec = service(ui.rt).fresh(old.workspace, same_options(old), same_setup(old), home=old.home or None,
                               tools_queue=old.tools_queue)
    service(ui.rt).mark_start(rec.id, "clear", rec)
    read_commands(ui.rt, rec.id)
    ui.sid = rec.id
    kept = f" (session {old.id[:8]} is kept: /resume {old.id[:8]})" if old.title else ""
    click.echo(f"New session {rec.id[:8]} in {rec.workspace}{kept}")


def resume(ui: Repl, arg: str) -> None:
    """/resume [ID]: switch to another session (no ID: pick one of the recent ones)."""
    if arg:
        switch(ui, ui.store.resolve_session(arg))
        return
    sessions = recent(ui)
    if not sessions:
        click.echo(f"No session was started in {ui.workspace}.")
        return
    click.echo(f"Recent sessions in {ui.workspace}:")
    for i, rec in enumerate(sessions, 1):
        mark = "*" if rec.id == ui.sid else " "
        click.echo(f" {mark}{i:>2}. {rec.id[:8]}  {cut(rec.title or '(no messages)', 40):<40}  "
                   f"{rec.state.value:<19} {ago(rec.updated_at)}")
    choice = ui.reader.prompt("Resume which? (number or id prefix; Enter keeps this one) ")
    choice = (choice or "").strip()
    if not choice:
        click.echo(f"Staying on session {ui.sid[:8]}.")
        return
    if choice.isdigit() and 1 <= int(choice) <= len(sessions):
        switch(ui, sessions[int(choice) - 1].id)
    else:
        switch(ui, ui.store.resolve_session(choice))


def recent(ui: Repl) -> list[SessionRecord]:
    """The most recent sessions of the loop's workspace."""
    ws = str(ui.workspace)
    out = []
    for sid in ui.store.session_ids(limit=10_000):
        rec = ui.store.get_session(sid)
        if rec.workspace == ws:
            out.append(rec)
            if len(out) >= RECENT:
                break
    return out


def switch(ui: Repl, sid: str) -> None:
    """Make ``sid`` the loop's session (its mode checked as a resume checks it), recapped."""
    if sid == ui.sid:
        click.echo(f"Already on session {sid[:8]}.")
        return
    rec = ui.store.get_session(sid)
    require_model_access(ui.rt, ui.settings, rec.model)
    mode, disabled_by, warnings = service(ui.rt).resumed_mode(sid, None, ui.workspace, ui.extra_settings)
    say_warnings(warnings)
    if mode is not None or disabled_by:  # it held a bypassPermissions that is disabled now
        rec = service(ui.rt).update_limits(sid, permission_mode=mode, bypass_disabled_by=disabled_by)
    ui.sid = sid
    announce(rec)
    recap(ui.store, sid)
    service(ui.rt).mark_start(sid, "resume", rec)
    read_commands(ui.rt, sid)


__all__ = ["clear", "recent", "resume", "switch"]
