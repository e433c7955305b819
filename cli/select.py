"""Choosing a session from flags: ``--resume SID`` (id or unique prefix), ``--continue``
(the most recent session of this directory), ``--fork-session`` (a copy)."""

from __future__ import annotations

import os
from pathlib import Path

from cli.connect import Runtime
from cli.session_service import service
from workflows.exceptions import SessionNotFound


def latest_in(rt: Runtime, workspace: Path) -> str:
    """The most recently updated session whose workspace is ``workspace``.

    Raises:
        SessionNotFound: none was started there.
    """
    ws = os.path.realpath(workspace)
    for sid in rt.store.session_ids(limit=10_000):
        rec = rt.store.get_session(sid)
        # skip sessions nobody wrote to (a /clear), and sub-agents (a parent's child sessions)
        if rec.workspace == ws and rec.last_uuid is not None and not rec.parent_session_id:
            return sid
    raise SessionNotFound(f"No session was started in {ws}; start one with `mainsail run \"...\"`.")


def pick_session(rt: Runtime, *, resume: str | None, continue_: bool, fork: bool, workspace: Path) -> str | None:
    """The session the flags name (forked if asked), or None for a new one."""
    if resume and continue_:
        from click import UsageError

        raise UsageError("Use either --resume SID or --continue, not both.")
    sid = None
    if resume:
        sid = rt.store.resolve_session(resume)
    elif continue_:
        sid = latest_in(rt, workspace)
    if sid and fork:
        sid = service(rt).fork(sid).id
    elif fork:
        from click import UsageError

        raise UsageError("--fork-session needs --resume SID or --continue.")
    return sid
