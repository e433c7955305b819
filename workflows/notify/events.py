"""The events a webhook gets, read off each landed commit, and the observer that hands them to a sender.

``waiting``: the session moved into ``awaiting_permission`` (a person must approve a call); ``finished``: a run
ended well; ``failed``: a run ended in an error (not a cancel: the person who cancelled knows). Sub-agents'
runs are their parent's business: they notify nothing. An event's id is the id of the transcript entry it is
read from, so a commit observed twice (it never is) would still make one event per subscription.

:class:`Notifier` is one of the committer's observers (``Committer.copies``), so every process that commits
(workers, the CLI, the server) notifies: it costs nothing for a commit without such entries, and one read of the
subscriptions for one with them. The sender (tasks/notify.py) sends a durable Celery task per (event,
subscription); a failure here never touches the commit, which landed already.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from urllib.parse import quote

from pydantic import BaseModel, Field

from statemachines import State
from workflows.models import ResultEntry, SessionRecord, StateEntry
from workflows.notify.subscriptions import Subscription

log = logging.getLogger(__name__)

#: What each event says, for people.
_SAYS = {"waiting": "is waiting for approval", "finished": "finished", "failed": "failed"}


class NotifyEvent(BaseModel):
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


class Notifier:
    """The committer's observer: each event of a landed commit goes to ``send(event, subscription)`` for every
    subscription that wants it (``store``: the Redis store; ``public_url``: the console's base URL)."""

    def __init__(self, store, send: Callable[[NotifyEvent, Subscription], None], public_url: str) -> None:
        self.store = store
        self.send = send
        self.public_url = public_url

    def __call__(self, rec: SessionRecord, entries: list) -> None:
        events = events_of(rec, entries, self.public_url)
        if not events:
            return
        try:
            subs = [s for s in self.store.notify().all() if s.covers(rec.token, rec.workspace)]
            for event in events:
                for sub in subs:
                    if event.type in sub.events:
                        self.send(event, sub)
        except Exception as exc:  # the commit landed: a notification lost here is logged, never raised
            log.warning("could not send the %s notification(s) of session %s: %s",
                        ",".join(e.type for e in events), rec.id[:8], type(exc).__name__)


__all__ = ["NotifyEvent", "Notifier", "events_of", "session_link"]
