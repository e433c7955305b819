"""``mainsail pending``, ``mainsail approve`` and ``mainsail deny``: answer from any shell."""

from __future__ import annotations

import time

import click

from cli.readonly import existing_runtime
from tasks.dispatch import dispatch
from workflows.engine import find_request
from workflows.permissions import prompt_text


def _ago(t: float) -> str:
    s = max(0, int(time.time() - t))
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


@click.command("pending")
def pending() -> None:
    """List permission requests waiting for a decision, across sessions."""
    rt = existing_runtime(what="no pending permission requests")
    rows = 0
    for sid in rt.store.awaiting_sessions():
        rec = rt.store.get_session(sid)
        for req in rec.pending_requests():
            rows += 1
            expires = f" · auto-deny in {max(0, int(req.expires_at - time.time()))}s" if req.expires_at else ""
            click.echo(click.style(f"{sid[:8]}  {req.id}  ", bold=True) + prompt_text(req.tool, req.input, req.always))
            whose = (f"sub-agent {rec.agent_type} of session {rec.parent_session_id[:8]}: "
                     if rec.parent_session_id else "")
            click.echo(f"    {req.reason} · waiting {_ago(req.created_at)}{expires} · {whose}{rec.title}")
            click.echo(click.style(f"    mainsail approve {sid[:8]} {req.id}   |   "
                                   f"mainsail deny {sid[:8]} {req.id} -m '...'", dim=True))
    if not rows:
        click.echo("No pending permission requests.")


def _decide(session: str, request: str | None, approve: bool, always: bool = False,
            message: str | None = None) -> None:
    rt = existing_runtime(what=f"no session {session!r} to decide for", code=1)
    sid, req = _request_of(rt, rt.store.resolve_session(session), request)
    steps = rt.engine.decide_request(sid, req.id, approve, always=always, message=message)
    dispatch(steps)
    verb = "Approved" if approve else "Denied"
    extra = ""
    if always:
        extra = (f" and added the session rule{'s' if len(req.always) > 1 else ''} {', '.join(req.always)}"
                 if req.always else " (once: no rule can cover this call, so none was added)")
    click.echo(f"{verb} {req.tool}: {req.summary} (session {sid[:8]}, request {req.id}){extra}.")
    if steps and not ({"model", "tools"} & rt.store.live_queues()):
        click.echo("No worker is listening, so the session waits in its queue: start `mainsail worker`.",
                   err=True)


def _request_of(rt, sid: str, request: str | None):
    """The session that holds the pending ``request`` (``sid`` or, for a parent, one of its sub-agents
    waiting for a person), and the request."""
    from workflows.engine.subagents import tree
    from workflows.exceptions import RequestNotFound

    rec = rt.store.get_session(sid)
    family = [r for _, r in tree(rt.store, sid)] if rec.children else [rec]
    waiting = [r for r in family if r.pending_requests()]
    if request is not None:
        for r in waiting:
            if any(q.id.startswith(request) for q in r.pending_requests()):
                return r.id, find_request(r, request)
        return sid, find_request(rec, request)  # says it is not there, and what is
    if len(waiting) == 1:
        return waiting[0].id, find_request(waiting[0], None)
    if not waiting:
        return sid, find_request(rec, None)
    ids = ", ".join(f"{q.id} ({r.agent_type or 'main'})" for r in waiting for q in r.pending_requests())
    raise RequestNotFound(f"Session {sid[:8]} and its sub-agents have several pending requests: {ids}. Name one "
                          f"(mainsail pending lists them).")


@click.command("approve")
@click.argument("session")
@click.argument("request", required=False)
@click.option("--always", is_flag=True, help="Also allow later calls like this one in this session.")
def approve(session: str, request: str | None, always: bool) -> None:
    """Approve a pending request of SESSION (id or prefix); REQUEST may be omitted when only one waits."""
    _decide(session, request, True, always=always)


@click.command("deny")
@click.argument("session")
@click.argument("request", required=False)
@click.option("-m", "--message", help="Tell the model why, or what to do instead.")
def deny(session: str, request: str | None, message: str | None) -> None:
    """Deny a pending request of SESSION; the model gets an error result with your message."""
    _decide(session, request, False, message=message)
