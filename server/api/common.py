"""What the API's routes share: the engine of the app, and finding a session a token may see."""

from __future__ import annotations

import os

from fastapi import Request

from server.auth import Caller
from workflows.engine import Engine
from workflows.exceptions import AmbiguousSession, MainsailError, SessionNotFound
from workflows.models import SessionRecord
from workflows.sessions.service import SessionService


class BadRequest(MainsailError):
    """A request the server cannot act on as asked (a 400): a workspace that is not a directory on
    the server's machine, a malformed page id, a message with nothing to do."""


def reach(caller: Caller, workspace: str, add_dirs=()) -> str:
    """``workspace`` resolved, once ``caller``'s token may use it and each of ``add_dirs`` (resolved
    from it): checked before the disk is looked at (beyond resolving links), so that a token restricted
    to workspaces learns nothing about directories outside them, not even whether they exist. What
    exists is the caller's next check.

    Raises:
        BadRequest: ``workspace`` is not an absolute path.
        HTTPException: 403, a directory outside the token's workspaces.
    """
    if not os.path.isabs(workspace):
        raise BadRequest(f"Workspace {workspace!r} is not an absolute path: give the directory's full path on the "
                         "server's machine.")
    ws = os.path.realpath(workspace)
    caller.check_workspace(ws)
    for extra in add_dirs:
        caller.check_workspace(os.path.realpath(os.path.join(ws, os.path.expanduser(extra))))
    return ws


def engine(request: Request) -> Engine:
    return request.app.state.engine


def service(request: Request) -> SessionService:
    """The session service on the app's engine; the steps its verbs return go to the workers."""
    from tasks.dispatch import dispatch

    return SessionService(engine(request), dispatch)


def visible_session(request: Request, caller: Caller, session: str) -> SessionRecord:
    """The session ``session`` (id or unique prefix) names, if ``caller`` may see it.

    A token restricted to workspaces resolves a prefix among the sessions it may see only, so a
    prefix shared with another team's session neither fails nor tells it that session exists; and
    "no such session" and "not yours" get the same answer.

    Raises:
        SessionNotFound: no such session, or one the token may not see (the same answer: 404).
        AmbiguousSession: the prefix matches several sessions the token may see (listed).
    """
    store = engine(request).store
    if not caller.token.workspaces:
        try:
            return store.get_session(store.resolve_session(session))
        except SessionNotFound:
            raise SessionNotFound(_not_found(session)) from None
    prefix = session.strip()
    every = store.all_session_ids() if prefix else []
    ids = [i for i in every if i.startswith(prefix)]
    exact = [i for i in ids if i == prefix]
    matches = [r for r in store.get_sessions(exact or ids) if caller.sees(r)]
    if not matches:
        raise SessionNotFound(_not_found(session))
    if len(matches) > 1:
        shown = ", ".join(r.id for r in matches[:10]) + (" ..." if len(matches) > 10 else "")
        raise AmbiguousSession(f"Session prefix {prefix!r} matches {len(matches)} sessions: {shown}")
    return matches[0]


def _not_found(session: str) -> str:
    shown = session if len(session) <= 64 else session[:64] + "..."
    return f"No session {shown!r}. List the sessions this token may see with GET /api/sessions."


__all__ = ["BadRequest", "engine", "reach", "visible_session"]
