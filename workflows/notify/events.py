"""The events a webhook gets, read off the entries of each commit.

``waiting``: the session moved into ``awaiting_permission`` (a person must approve a call); ``finished``: a run
ended well; ``failed``: a run ended in an error (not a cancel: the person who cancelled knows). Sub-agents'
runs are their parent's business: they notify nothing. An event's id is the id of the transcript entry it is
read from, so a commit observed twice (it never is) would still make one event per subscription.

Every commit reads its entries with :func:`events_of` and records the events in the outbox in the same atomic
write (workflows/notify/outbox.py): nothing is sent before the commit lands, nothing is lost after.
"""

from __future__ import annotations

import time
from urllib.parse import quote

from pydantic import Field

from statemachines import State
from workflows.models import ResultEntry, SessionRecord, StateEntry
from workflows.models.valid_text import ValidJson

#: What each event says, for people.
_SAYS = {"waiting": "is waiting for approval", "finished": "finished", "failed": "failed"}


class NotifyEvent(ValidJson):
    """One event of one session, as every subscription gets it."""

    id: str
    type: str  # waiting | finished | failed
    session_id: str
    title: str = ""
    workspace: str = ""
    token: str = ""
    link: str = ""  # opens the session in the console (a person signs in there: no token in it)
    text: str = ""  # one line for people
    requests: list[dict] = Field(default_factory=list)  # waiting: each request's id, tool and summary
    result: str = ""  # finished/failed: the run's result text, cut to 1,000 characters
    subtype: str = ""  # finished/failed: the result's subtype (success, error_max_turns...)
    cost_usd: float | None = None  # finished/failed: what the run cost (None: unknown)
    at: float = Field(default_factory=time.time)


def session_link(public_url: str, sid: str) -> str:
    """The console's page of session ``sid`` on the server at ``public_url``."""
    return f"{public_url.rstrip('/')}/sessions/{quote(sid, safe='')}"


def events_of(rec: SessionRecord, entries: list, public_url: str) -> list[NotifyEvent]:
    """The events ``entries`` (one commit's) make for session ``rec`` (as the commit left it)."""
    if rec.parent_session_id:
        return []
    out = []
    for entry in entries:
        if isinstance(entry, StateEntry) and entry.dest is State.AWAITING_PERMISSION \
                and entry.source is not State.AWAITING_PERMISSION:
            asked = [{"id": r.id, "tool": r.tool, "summary": r.summary[:300]}
                     for r in rec.pending_requests() if r.kind == "permission"]
            if asked:
                out.append(_event(rec, entry.uuid, "waiting", public_url, requests=asked))
        elif isinstance(entry, ResultEntry) and entry.subtype != "cancelled":
            kind = "failed" if entry.is_error else "finished"
            out.append(_event(rec, entry.uuid, kind, public_url, result=entry.result[:1000], subtype=entry.subtype,
                              cost_usd=entry.total_cost_usd))
    return out


def _event(rec: SessionRecord, uuid: str, kind: str, public_url: str, **more) -> NotifyEvent:
    name = rec.title or rec.id[:8]
    text = f"Session {name!r} ({rec.id[:8]}) {_SAYS[kind]}"
    if kind == "waiting":
        text += ": " + "; ".join(f"{r['tool']}: {r['summary'][:80]}" for r in more["requests"])
    return NotifyEvent(id=uuid, type=kind, session_id=rec.id, title=rec.title, workspace=rec.workspace,
                       token=rec.token, link=session_link(public_url, rec.id), text=text, **more)


__all__ = ["NotifyEvent", "events_of", "session_link"]
