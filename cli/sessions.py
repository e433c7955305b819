"""Sessions as objects of their own: list, show, watch, send, cancel.

A session belongs to no terminal: any of these works from any shell, on any
session, by id or unique prefix.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime

import click
from rich.console import Console

from cli.connect import Runtime, connect, ensure_worker
from cli.render import Renderer, follow
from statemachines import State
from tasks.dispatch import dispatch
from workflows.models import ResultEntry, SessionRecord
from workflows.settings import load_settings
from workflows.tokens import describe_usage


def _when(t: float) -> str:
    age = time.time() - t
    if age < 60:
        return f"{int(age)}s ago"
    if age < 3600:
        return f"{int(age // 60)}m ago"
    if age < 86400:
        return f"{int(age // 3600)}h ago"
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d")


def _tokens(rec: SessionRecord) -> int:
    return rec.usage.total


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


@click.command("sessions")
@click.option("--state", type=click.Choice([s.value for s in State]), help="Only sessions in this state.")
@click.option("--workspace", type=click.Path(file_okay=False), help="Only sessions of this directory.")
@click.option("-n", "--limit", type=click.IntRange(1), default=50, show_default=True)
def sessions(state: str | None, workspace: str | None, limit: int) -> None:
    """List sessions, newest first."""
    rt = connect(load_settings())
    ws = os.path.realpath(workspace) if workspace else None
    rows = []
    for sid in rt.store.session_ids(limit=10_000):
        rec = rt.store.get_session(sid)
        if (state and rec.state.value != state) or (ws and rec.workspace != ws):
            continue
        rows.append(rec)
        if len(rows) >= limit:
            break
    if not rows:
        click.echo("No sessions" + (" match." if state or ws else " yet: start one with `mainsail run \"...\"`."))
        return
    click.echo(f"{'ID':<9} {'STATE':<19} {'TITLE':<32} {'MODEL':<18} {'TURNS':>5} {'COST':>8}  {'ACTIVE':<9} "
               "WORKSPACE")
    for rec in rows:
        click.echo(f"{rec.id[:8]:<9} {rec.state.value:<19} {_cut(rec.title or '-', 32):<32} "
                   f"{_cut(rec.model, 18):<18} {rec.turns:>5} {'$%.4f' % rec.cost_usd:>8}  "
                   f"{_when(rec.updated_at):<9} {rec.workspace}")


def describe(rec: SessionRecord, inbox: list[str]) -> list[str]:
    """The facts ``show`` and ``/status`` print about a session."""
    u = rec.usage
    lines = [
        f"session     {rec.id}" + (f"  (forked from {rec.forked_from[:8]})" if rec.forked_from else ""),
        f"title       {rec.title or '-'}",
        f"state       {rec.state.value}" + (f"  ({len(inbox)} queued)" if inbox else ""),
        f"workspace   {rec.workspace}" + (f"  [{rec.git_branch}]" if rec.git_branch else ""),
        f"model       {rec.model}",
        f"permissions {rec.permission_mode.value}"
        + (f", {len(rec.rules.allow)} allow / {len(rec.rules.ask)} ask / {len(rec.rules.deny)} deny rules"
           if (rec.rules.allow or rec.rules.ask or rec.rules.deny) else ""),
        f"turns       {rec.turns}" + (f" (limit {rec.max_turns} per run)" if rec.max_turns else ""),
        f"context     {describe_usage(rec.context_tokens + rec.context_added, rec.model)}"
        + (" · auto-compact off (failed repeatedly)" if rec.auto_compact_off else ""),
        f"tokens      {u.total:,} (in {u.input_tokens:,}, out {u.output_tokens:,}, "
        f"cache read {u.cache_read_input_tokens:,}, cache write {u.cache_creation_input_tokens:,})",
        f"cost        ${rec.cost_usd:.4f}" + (f" (budget ${rec.max_budget_usd:g} per run)"
                                            if rec.max_budget_usd else ""),
    ]
    if len(rec.usage_by_model) > 1 or (rec.usage_by_model and rec.model not in rec.usage_by_model):
        for model, usage in rec.usage_by_model.items():
            lines.append(f"  {model:<24} {usage.total:>10,} tokens  ${rec.cost_by_model.get(model, 0.0):.4f}")
    lines.append(f"created     {datetime.fromtimestamp(rec.created_at):%Y-%m-%d %H:%M:%S}, "
                 f"last active {_when(rec.updated_at)}")
    if rec.last_error:
        lines.append(f"last error  {rec.last_error}")
    return lines


@click.command("show")
@click.argument("session")
@click.option("--no-transcript", is_flag=True, help="Only the session's facts.")
def show(session: str, no_transcript: bool) -> None:
    """Print a session's facts and its transcript."""
    rt = connect(load_settings())
    sid = rt.store.resolve_session(session)
    rec = rt.store.get_session(sid)
    for line in describe(rec, rt.store.inbox(sid)):
        click.echo(line)
    if no_transcript:
        return
    click.echo("")
    r = Renderer(Console(highlight=False, soft_wrap=True))
    for e in rt.store.entries(sid):
        r.entry(e)
    r.close()


@click.command("watch")
@click.argument("session")
@click.option("-f", "--follow", "forever", is_flag=True, help="Keep watching after the session goes idle.")
def watch(session: str, forever: bool) -> None:
    """Replay a session's transcript and follow it live; Ctrl-C detaches (it never cancels)."""
    rt = connect(load_settings())
    sid = rt.store.resolve_session(session)
    r = Renderer(Console(highlight=False, soft_wrap=True))

    def done(e) -> bool:
        if forever or not isinstance(e, ResultEntry):
            return False
        return _idle(rt, sid)

    try:
        rows = rt.store.read_log(sid)
        for _, e in rows:
            r.entry(e)
        if not forever and _idle(rt, sid):
            r.close()
            extracting = rt.store.get_session(sid).state is State.EXTRACTING
            click.secho(f"(session {sid[:8]} is idle{'; saving memory' if extracting else ''})", dim=True)
            return
        follow(rt.store, sid, on_entry=r.entry, on_delta=r.delta, after=rows[-1][0] if rows else None, stop=done)
    except KeyboardInterrupt:
        r.close()
        click.echo(f"\nDetached from session {sid[:8]}; it goes on.", err=True)
        sys.exit(130)
    r.close()


def _idle(rt: Runtime, sid: str) -> bool:
    """Nothing more to watch: idle (or only saving memory after the answer) with nothing queued."""
    return rt.store.get_session(sid).state in (State.IDLE, State.EXTRACTING) and not rt.store.inbox(sid)


@click.command("send")
@click.argument("session")
@click.argument("message")
@click.option("--interrupt", is_flag=True, help="Cancel the running turn first, then process the message.")
def send(session: str, message: str, interrupt: bool) -> None:
    """Send MESSAGE to a session; while it is busy it waits in the inbox and runs next, in order."""
    rt = connect(load_settings())
    sid = rt.store.resolve_session(session)
    if interrupt and rt.engine.cancel(sid, "Interrupted by a new message"):
        click.echo(f"Interrupted the running turn of session {sid[:8]}.")
    steps = rt.engine.submit(sid, message)
    dispatch(steps)
    if steps:
        click.echo(f"Sent to session {sid[:8]}; it is working on it. Watch: mainsail watch {sid[:8]}")
    else:
        n = len(rt.store.inbox(sid))
        click.echo(f"Session {sid[:8]} is busy; queued as message {n} of {n}: it runs when the current turn ends.")


@click.command("compact")
@click.argument("session")
@click.argument("instructions", required=False)
def compact(session: str, instructions: str | None) -> None:
    """Compact an idle session now: its conversation is summarised for the model (the transcript keeps it)."""
    settings = load_settings()
    rt = connect(settings)
    try:
        sid = rt.store.resolve_session(session)
        ensure_worker(rt, settings)
        after = rt.store.read_log(sid)[-1][0] if rt.store.log_length(sid) else None
        dispatch(rt.engine.compact(sid, instructions))
        r = Renderer(Console(highlight=False, soft_wrap=True), show_prompts=False)
        result = follow(rt.store, sid, on_entry=r.entry, after=after, stop=lambda e: isinstance(e, ResultEntry))
    finally:
        rt.close()
    click.echo(result.result if not result.is_error else f"Error: {result.result}")
    if result.is_error:
        sys.exit(1)


@click.command("cancel")
@click.argument("session")
def cancel(session: str) -> None:
    """Stop a session's running turn (and any running command); it returns to idle."""
    rt = connect(load_settings())
    sid = rt.store.resolve_session(session)
    before = rt.store.get_session(sid).state
    if rt.engine.cancel(sid):
        click.echo(f"Cancelled session {sid[:8]} (it was {before.value}); it is idle now.")
    else:
        click.echo(f"Session {sid[:8]} is idle; there is nothing to cancel.")


__all__ = ["sessions", "show", "watch", "send", "cancel", "compact", "describe"]
