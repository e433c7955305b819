"""What the API's routes share: the engine of the app, and finding a session a token may see."""

from __future__ import annotations

from fastapi import Request

from server.auth import Caller
from workflows import keys
from workflows.engine import Engine
from workflows.exceptions import AmbiguousSession, SessionNotFound
from workflows.models import SessionRecord


def engine(request: Request) -> Engine:
    return request.app.state.engine


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
    every = [x.decode() if isinstance(x, bytes) else x for x in store.r.zrevrange(keys.sessions(), 0, -1)] \
        if prefix else []
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


__all__ = ["engine", "visible_session"]
