"""Sessions as objects of their own: list, show, watch, send, cancel, compact.

A session belongs to no terminal: any of these works from any shell, on any
session, by id or unique prefix.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import TYPE_CHECKING

import click

from cli.clients import client_for
from cli.clients.protocol import cut as _cut
from cli.figures import breakdown_lines, money, run_figures
from cli.readonly import existing_runtime
from cli.repl_text import ago
from cli.session_table import listed, none_listed, print_table
from cli.worker_note import unserved_note
from statemachines import State
from workflows.model.tokens import describe_usage
from workflows.models import ResultEntry, SessionRecord
from workflows.models.model_names import describe_model
from workflows.settings import load_settings

if TYPE_CHECKING:
    from cli.connect import Runtime

# (The renderer, rich and the worker's standby are imported by the commands that print a transcript or follow
# one: `sessions` and `show --no-transcript` load neither, nor Celery: tests/unit/test_lazy_commands_unit.py.)


def _when(t: float) -> str:
    return ago(t, "%Y-%m-%d")


def _tokens(rec: SessionRecord) -> int:
    return rec.usage.total


def list_sessions(state: str | None, workspace: str | None, limit: int, tree: bool) -> None:
    """``mainsail sessions`` on the full path (cli/sessions_list.py tries the lean one first)."""
    rt = existing_runtime()
    ws = os.path.realpath(workspace) if workspace else None
    rows = []
    for rec in rt.store.get_sessions(rt.store.session_ids(limit=10_000)):
        if not listed(rec, state, ws):
            continue
        rows.append(rec)
        if len(rows) >= limit:
            break
    if not rows:
        click.echo(none_listed(state, ws))
        return
    if tree:
        from workflows.engine.subagents import tree as family

        rows = [(depth, r) for rec in rows for depth, r in family(rt.store, rec.id)]
    else:
        rows = [(0, rec) for rec in rows]
    print_table(rows, rt.store.inbox_lengths([r.id for _, r in rows]))
    live = rt.store.live_queues()
    for note in filter(None, (unserved_note(rt.store, rec, live) for _, rec in rows)):
        click.secho(note, fg="yellow")


def describe(rec: SessionRecord, inbox: list[str]) -> list[str]:
    """The facts ``show`` and ``/status`` print about a session."""
    u = rec.usage
    lines = [
        f"session     {rec.id}" + (f"  (forked from {rec.forked_from[:8]})" if rec.forked_from else "")
        + (f"  (sub-agent {rec.agent_type} of session {rec.parent_session_id[:8]})" if rec.parent_session_id
           else ""),
        f"title       {rec.title or '-'}",
        f"state       {rec.state.value}" + _queue_note(rec, inbox)
        + (" · saving memory" if rec.saving_memory() and rec.state is not State.EXTRACTING else ""),
    ]
    for i, text in enumerate(inbox, 1):
        lines.append(f"  queued {i:<3} {_cut(' '.join(text.split()), 70)}")
    lines += [
        f"workspace   {rec.workspace}" + (f"  [{rec.git_branch}]" if rec.git_branch else ""),
        f"model       {describe_model(rec.model, rec.sent_model())}"
        + (f", fallback {describe_model(rec.fallback_model, rec.sent_model(rec.fallback_model))}"
           if rec.fallback_model else ""),
        *([f"add. dirs   {', '.join(rec.additional_directories)}"] if rec.additional_directories else []),
        f"permissions {rec.permission_mode.value}"
        + (f", {len(rec.rules.allow)} allow / {len(rec.rules.ask)} ask / {len(rec.rules.deny)} deny rules"
           if (rec.rules.allow or rec.rules.ask or rec.rules.deny) else ""),
        f"turns       {rec.turns}" + (f" (limit {rec.max_turns} per run)" if rec.max_turns else ""),
        f"context     {describe_usage(rec.context_tokens + rec.context_added, rec.sent_model())}"
        + (" · auto-compact off (failed repeatedly)" if rec.auto_compact_off else ""),
        f"tokens      {u.total:,} (in {u.input_tokens:,}, out {u.output_tokens:,}, "
        f"cache read {u.cache_read_input_tokens:,}, cache write {u.cache_creation_input_tokens:,})",
        f"cost        {money(rec.cost_usd)}"
        + (f" (no price known for {', '.join(rec.unpriced_models)})" if rec.unpriced_models else "") + (f" (budget ${rec.max_budget_usd:g} per run)"
                                            if rec.max_budget_usd else ""),
        *breakdown_lines(rec, indent=" " * 12),
    ]
    if rec.run_started_at:
        lines.append(f"last run    {run_figures(rec)}")
    lines.append(f"created     {datetime.fromtimestamp(rec.created_at):%Y-%m-%d %H:%M:%S}, "
                 f"last active {_when(rec.updated_at)}")
    if rec.last_error:
        lines.append(f"last error  {rec.last_error}")
    if rec.budget_stop:
        lines.append(f"budget      {rec.budget_stop}")
    if rec.children:
        lines.append(f"sub-agents  {len(rec.children)}: {', '.join(c[:8] for c in rec.children[-8:])}"
                     + (" ..." if len(rec.children) > 8 else "") + "  (`mainsail sessions --tree` lists them)")
    if rec.todos:
        from types import SimpleNamespace

        from workflows.tools.todo import checklist

        done = sum(t.get("status") == "completed" for t in rec.todos)
        lines.append(f"todos       {done}/{len(rec.todos)} done")
        lines += [" " * 12 + line for line in checklist([SimpleNamespace(**t) for t in rec.todos])]
    return lines


def _queue_note(rec: SessionRecord, inbox: list[str]) -> str:
    if not inbox:
        return ""
    n = f"{len(inbox)} queued"
    if rec.state is State.IDLE:  # an older version's cancel left it: say what starts it
        return (f"  ({n}, not started: `mainsail cancel {rec.id[:8]}` starts the oldest, "
                f"`mainsail send --clear {rec.id[:8]}` drops them)")
    return f"  ({n}: they run next, in the order sent; `mainsail send --clear {rec.id[:8]}` drops them)"


@click.command("show")
@click.argument("session")
@click.option("--no-transcript", is_flag=True, help="Only the session's facts.")
def show(session: str, no_transcript: bool) -> None:
    """Print a session's facts and its transcript."""
    rt = existing_runtime(what=f"no session {session!r} to show", code=1)
    sid = rt.store.resolve_session(session)
    rec = rt.store.get_session(sid)
    for line in describe(rec, rt.store.inbox(sid)):
        click.echo(line)
    note = unserved_note(rt.store, rec)
    if note:
        click.secho(note, fg="yellow")
    if no_transcript:
        return
    from rich.console import Console

    from cli.render import Renderer
    from cli.replay import replay

    click.echo("")
    r = Renderer(Console(highlight=False, soft_wrap=True))
    replay(rt.store, sid, r)
    r.close()


@click.command("watch")
@click.argument("session")
@click.option("-f", "--follow", "forever", is_flag=True, help="Keep watching after the session goes idle.")
def watch(session: str, forever: bool) -> None:
    """Replay a session's transcript and follow it live; Ctrl-C detaches (it never cancels).

    While it follows, a worker runs in this process when no live one serves the session's queues, as
    for ``run`` (``MAINSAIL_EMBEDDED_WORKER=false``: never; then it says when nothing serves them)."""
    settings = load_settings()
    rt = existing_runtime(settings, what=f"no session {session!r} to watch", code=1)
    try:
        _watch(rt, settings, rt.store.resolve_session(session), forever)
    finally:
        rt.close()  # this command's worker (if any) hands over


def _watch(rt: Runtime, settings, sid: str, forever: bool) -> None:
    from rich.console import Console

    from cli.attach import wait_for_memory
    from cli.follow import follow
    from cli.render import Renderer
    from cli.replay import replay
    from cli.standby import ensure_worker

    r = Renderer(Console(highlight=False, soft_wrap=True))

    def done(e) -> bool:
        if forever or not isinstance(e, ResultEntry):
            return False
        return _idle(rt, sid)

    try:
        rows = rt.store.read_log(sid)
        shown = replay(rt.store, sid, r, [e for _, e in rows], finished_only=True)
        if not forever and _idle(rt, sid):
            r.close()
            extracting = rt.store.get_session(sid).state is State.EXTRACTING
            click.secho(f"(session {sid[:8]} is idle{'; saving memory' if extracting else ''})", dim=True)
            return
        ensure_worker(rt, settings, sid=sid)
        note = None if rt.worker is not None else unserved_note(rt.store, rt.store.get_session(sid), watching=True)
        if note:
            r.close()
            click.secho(note, fg="yellow", err=True)
        follow(rt.store, sid, on_entry=r.entry, on_delta=r.delta, after=rows[-1][0] if rows else None, stop=done,
               on_child=r.child_entry, on_link=r.link_child, children_shown=shown)
    except KeyboardInterrupt:
        r.close()
        where = ("it goes on wherever a worker serves it (this command's own worker hands over as it leaves)"
                 if rt.worker else "it goes on")
        click.echo(f"\nDetached from session {sid[:8]}; {where}.", err=True)
        sys.exit(130)
    r.close()
    if rt.worker is not None:
        wait_for_memory(rt, sid)  # as run does: the memory its own worker started is saved before it leaves


def _idle(rt: Runtime, sid: str) -> bool:
    """Nothing more to watch: idle (or only saving memory after the answer) with nothing queued."""
    return rt.store.get_session(sid).state in (State.IDLE, State.EXTRACTING) and not rt.store.inbox(sid)


@click.command("send")
@click.argument("session")
@click.argument("message", required=False)
@click.option("--interrupt", is_flag=True, help="Cancel the running turn first (queued messages still run first).")
@click.option("--clear", is_flag=True, help="Drop the messages queued before this one (alone: just drop them).")
def send(session: str, message: str | None, interrupt: bool, clear: bool) -> None:
    """Send MESSAGE to a session; while it is busy it waits in the inbox and runs next, in order."""
    if message is None and not clear:
        raise click.UsageError("Missing MESSAGE (or --clear alone to drop the queued messages).")
    client_for().send(session, message, interrupt=interrupt, clear=clear)


@click.command("compact")
@click.argument("session")
@click.argument("instructions", required=False)
def compact(session: str, instructions: str | None) -> None:
    """Compact an idle session now: its conversation is summarised for the model (the transcript keeps it)."""
    client_for().compact(session, instructions)


@click.command("cancel")
@click.argument("session")
@click.option("--clear", is_flag=True, help="Also drop the queued messages, so the session stays idle.")
def cancel(session: str, clear: bool) -> None:
    """Stop a session's running turn (and any running command); its next queued message then runs."""
    client_for().cancel(session, clear=clear)


__all__ = ["cancel", "compact", "describe", "list_sessions", "send", "show", "watch"]
