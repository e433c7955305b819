"""``mainsail pending``, ``mainsail approve`` and ``mainsail deny``: answer from any shell."""

from __future__ import annotations

import time

import click

from cli.clients import client_for
from cli.diff_view import echo_diff
from cli.readonly import existing_runtime
from cli.session_table import NONE_PENDING
from workflows.models import PermissionRequest
from workflows.permissions import always_offered, prompt_text


def _ago(t: float) -> str:
    s = max(0, int(time.time() - t))
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


def list_pending() -> None:
    """``mainsail pending`` on the full path (cli/pending_list.py tries the lean one first)."""
    rt = existing_runtime(what="no pending permission requests")
    rows = 0
    for sid in rt.store.awaiting_sessions():
        rec = rt.store.get_session(sid)
        for req in rec.pending_requests():
            rows += 1
            print_request(sid, req, prompt_text(req.tool, req.input, req.always), rec.title, rec.agent_type,
                          rec.parent_session_id)
    if not rows:
        click.echo(NONE_PENDING)


def print_request(sid: str, req: PermissionRequest, prompt: str, title: str, agent_type: str | None,
                  parent: str | None) -> None:
    """One request of ``pending``: the call as a person must see it (``prompt``, an edit's diff), whose it is,
    how to answer ("--always" only when it is offered)."""
    expires = f" · auto-deny in {max(0, int(req.expires_at - time.time()))}s" if req.expires_at else ""
    click.echo(click.style(f"{sid[:8]}  {req.id}  ", bold=True) + prompt)
    whose = f"sub-agent {agent_type} of session {parent[:8]}: " if parent else ""
    echo_diff(req.diff, req.diff_note, err=False)
    click.echo(f"    {req.reason} · waiting {_ago(req.created_at)}{expires} · {whose}{title}")
    always = f"   |   mainsail approve {sid[:8]} {req.id} --always" if always_offered(req.always) else ""
    click.echo(click.style(f"    mainsail approve {sid[:8]} {req.id}{always}   |   "
                           f"mainsail deny {sid[:8]} {req.id} -m '...'", dim=True))


@click.command("approve")
@click.argument("session")
@click.argument("request", required=False)
@click.option("--always", is_flag=True, help="Also allow later calls like this one in this session.")
def approve(session: str, request: str | None, always: bool) -> None:
    """Approve a pending request of SESSION (id or prefix); REQUEST may be omitted when only one waits."""
    client_for().decide(session, request, True, always=always)


@click.command("deny")
@click.argument("session")
@click.argument("request", required=False)
@click.option("-m", "--message", help="Tell the model why, or what to do instead.")
def deny(session: str, request: str | None, message: str | None) -> None:
    """Deny a pending request of SESSION; the model gets an error result with your message."""
    client_for().decide(session, request, False, message=message)
