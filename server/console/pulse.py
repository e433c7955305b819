"""``GET /console/pulse``: what the console's header shows on every page, kept live by ``shell.js``.

The number of permission requests waiting (and the newest ones, for a browser notification of those a page
had not seen), the number
of sessions working now, and the recently active top-level sessions with their state (a page that saw one
busy and now sees it idle tells the person it finished, or failed when it ended in an error). Only sessions
this token may see count. It reads the :data:`RECENT` most recently updated sessions: a session that is
working was updated moments ago.

The console's cookie is the only credential it takes (no token in a URL); without a valid one it answers
401, and the page goes to sign in as every API call does.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from server.api.approvals import pending
from server.console.web import SECURITY_HEADERS, signed_in
from statemachines import State

router = APIRouter(include_in_schema=False)

#: The most recently updated sessions a pulse reads.
RECENT = 200
#: The newest waiting requests a pulse lists (a page notifies of the ones it had not seen).
REQUESTS = 20
#: A session updated longer ago than this is left out of ``sessions`` (its end was told already).
SINCE_SECONDS = 600
#: States in which a session is working (awaiting_permission is counted by ``waiting``).
WORKING = frozenset({State.QUERYING, State.RUNNING_TOOLS, State.COMPACTING, State.EXTRACTING})


def headers() -> dict[str, str]:
    return {**SECURITY_HEADERS, "Cache-Control": "no-store"}


@router.get("/console/pulse")
def pulse(request: Request) -> JSONResponse:
    caller = signed_in(request)
    if caller is None:
        return JSONResponse({"detail": "Signed out: sign in again with a valid token."}, status_code=401,
                            headers=headers())
    store = request.app.state.engine.store
    waiting = pending(request, caller)
    since = time.time() - SINCE_SECONDS
    recent = [r for r in store.get_sessions(store.session_ids(RECENT))
              if not r.parent_session_id and caller.sees(r)]
    body = {
        "waiting": len(waiting),
        "requests": [{"id": p.request.id, "session_id": p.session_id, "title": p.session_title,
                      "tool": p.request.tool, "summary": p.request.summary[:200]} for p in waiting[-REQUESTS:]],
        "running": sum(r.state in WORKING for r in recent),
        "sessions": [{"id": r.id, "title": r.title, "state": r.state.value, "failed": bool(r.last_error)}
                     for r in recent if r.updated_at >= since or r.state is not State.IDLE],
    }
    return JSONResponse(body, headers=headers())


__all__ = ["RECENT", "REQUESTS", "WORKING", "router"]
