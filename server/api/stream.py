"""Live follow: a session's transcript as Server-Sent Events, resumable with ``Last-Event-ID``.

``GET /api/sessions/{id}/events`` sends, in order:

- ``entry`` events: each transcript entry (``{"session", "id", "entry"}``), from the start or after
  ``?after=``/``Last-Event-ID``. Each carries an SSE ``id``: the entry's stream id, with ``.N`` for
  all but the last entry of one commit (a commit may write several), so a client that reconnects
  with the last id it saw gets exactly the entries after it: a dropped connection misses nothing
  and repeats nothing (the browser's EventSource sends ``Last-Event-ID`` by itself).
- ``delta`` events (``{"step", "attempt", "text"}``, no id): a reply's text as the model streams it, from the
  moment of connecting; ephemeral, the ``entry`` that records the whole reply follows.
- ``child`` events (``{"session", "id", "call", "entry"}``, no id): entries of the session's sub-agents;
  ``call`` is the id of the Task call the sub-agent runs (the console nests its lines there). A stream
  from the start also sends the sub-agents that finished already, from their start.
- ``end``: with ``?until_idle=true``, once the session is idle with its memory committed (the
  extraction after a final answer, and any memory fork, done) and nothing queued (the stream then
  closes; ``mainsail watch`` through a server uses it).

A watcher holds no thread and no Redis connection while it waits: one reader per followed stream
in this process (:mod:`server.api.hub`) pushes new rows to every watcher of it; a watcher reads
Redis itself only to catch up when it connects. A comment line every 15 s keeps proxies from closing
a quiet stream.
"""

from __future__ import annotations

import json
import re
import time
from itertools import groupby

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from server.api.common import engine, visible_session
from server.api.hub import BLOCK_MS, Overflow, hub_of
from server.auth import Caller, require_reader
from server.schemas import problems
from statemachines import State
from workflows.store import keys
from workflows.store.entry_read import entry_text, field_text
from workflows.store.redis_store import stream_entries

router = APIRouter(tags=["live"], responses=problems(403, 404, 409))
_EVENT_ID = re.compile(r"\A(([0-9]{1,20})-([0-9]{1,20}))(?:\.([0-9]{1,6}))?\Z")  # [0-9]: \d matches any script's digits
_MAX_PART = 2**64 - 1
#: How often an open stream checks that its token was not revoked.
TOKEN_RECHECK_SECONDS = 5.0


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def parse_event_id(value: str | None) -> tuple[str, int | None]:
    """(stream id to read after, entries of that row already seen) from an event id; ("0-0", None): all.

    Raises:
        HTTPException: 400 when ``value`` is not an id this stream could have sent (Redis would refuse
            it, e.g. a part above 2**64 - 1, or the largest id, after which no entry can ever come); the
            message quotes at most 40 characters of it.
    """
    if not value or not value.strip():
        return "0-0", None
    m = _EVENT_ID.match(value.strip())
    parts = (int(m.group(2)), int(m.group(3))) if m else None
    if not parts or max(parts) > _MAX_PART or parts == (_MAX_PART, _MAX_PART):
        shown = value if len(value) <= 40 else value[:40] + "..."
        why = "no entry can come after the largest id; give" if parts == (_MAX_PART, _MAX_PART) else "give"
        raise HTTPException(400, f"Invalid event id {shown!r}: {why} the id of an event this stream sent (like "
                                 "1700000000000-0 or 1700000000000-0.1).")
    return m.group(1), int(m.group(4)) if m.group(4) is not None else None


def _entry_event(sid: str, row: str, raw: str | bytes, index: int, count: int) -> dict:
    eid = row if index == count - 1 else f"{row}.{index}"
    entry = entry_text(sid, raw, row, index)  # (an entry that cannot be read: its marker)
    return {"event": "entry", "id": eid, "data": f'{{"session":"{sid}","id":"{eid}","entry":{entry}}}'}


@router.get("/sessions/{session}/events", response_class=EventSourceResponse)
async def events(session: str, request: Request, caller: Caller = Depends(require_reader),  # noqa: B008
                 after: str | None = Query(None, description="An event id: send what came after it."),
                 deltas: bool = Query(True, description="Also send the model's text as it streams."),
                 until_idle: bool = Query(False, description="End once the session is idle, its memory committed, "
                                                             "nothing queued.")):
    """Follow a session live (Server-Sent Events; see the module's notes for the events)."""
    rec = await run_in_threadpool(visible_session, request, caller, session)
    last, seen = parse_event_id(request.headers.get("last-event-id") or after)
    return EventSourceResponse(_follow(request, caller, rec.id, last, seen, deltas, until_idle), ping=15,
                               headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def _follow(request: Request, caller: Caller, sid: str, last: str, seen: int | None, deltas: bool,
                  until_idle: bool):
    streams = hub_of(request.app).streams
    store = engine(request).store
    log_key, live_key = keys.log(sid), keys.live(sid)
    with hub_of(request.app).feed() as feed:
        if seen is not None:  # the rest of a commit whose first entries were sent before the connection dropped
            for row, fields in await streams.rows_at(log_key, last):
                raws = stream_entries(fields)
                for i, raw in enumerate(raws):
                    if i > seen:
                        yield _entry_event(sid, _s(row), raw, i, len(raws))
        if deltas:
            await feed.add(live_key, None)
        await feed.add(log_key, last)
        children: dict[str, tuple[str, str]] = {}  # child log key -> (child session id, its Task call's id)
        known: set[str] = set()  # every sub-agent followed so far (a finished one is never sent twice)
        for child, call in await run_in_threadpool(_running_children, store, sid, last == "0-0"):
            children[keys.log(child)] = (child, call)
            known.add(child)
            await feed.add(keys.log(child), "0-0")
        first = True
        recheck = time.monotonic() + TOKEN_RECHECK_SECONDS
        while True:
            # Idle, then read what the log holds: a commit writes its entries and the state together, so
            # everything the finished work wrote is in that read, and the stream can end after it.
            idle = until_idle and await run_in_threadpool(_idle, store, sid)
            if idle:
                await feed.catch_up(log_key)
            try:
                rows = await feed.get(0 if first or idle else BLOCK_MS / 1000)
            except Overflow:  # too far behind: end the stream; the client resumes with Last-Event-ID
                return
            first = False
            new_children = False
            for key, group in groupby(rows, key=lambda r: r[0]):
                items = [(row, fields) for _, row, fields in group]
                if key == live_key:
                    for event in _deltas(items):
                        yield event
                elif key in children:
                    done = False
                    for event in _child_events(*children[key], items):
                        yield event
                        done = done or '"type":"result"' in event["data"]
                    if done:  # the sub-agent finished: stop following it
                        feed.drop(key)
                        del children[key]
                else:
                    for row, f in items:
                        raws = [field_text(x) for x in stream_entries(f)]
                        for i, raw in enumerate(raws):
                            yield _entry_event(sid, row, raw, i, len(raws))
                            new_children = new_children or '"name":"Task"' in raw or '"name":"Agent"' in raw
            if new_children:
                for child, call in await run_in_threadpool(_new_children, store, sid, set(known)):
                    children[keys.log(child)] = (child, call)
                    known.add(child)
                    await feed.add(keys.log(child), "0-0")
            if idle:
                yield {"event": "end", "data": json.dumps({"session": sid})}
                return
            if time.monotonic() >= recheck:  # a token revoked while its stream is open: end the stream
                recheck = time.monotonic() + TOKEN_RECHECK_SECONDS
                if not await streams.token_exists(caller.token.digest):
                    yield {"event": "end", "data": json.dumps({"session": sid, "reason": "token revoked"})}
                    return


def _deltas(items):
    for _, f in items:
        f = {_s(k): v.decode(errors="replace") if isinstance(v, bytes) else v for k, v in f.items()}
        if f.get("type") == "text":
            yield {"event": "delta", "data": json.dumps({"step": f.get("step"), "attempt": int(f.get("attempt") or 0),
                                                         "text": f.get("text", "")})}


def _child_events(child: str, call: str, items):
    for row, f in items:
        for i, raw in enumerate(stream_entries(f)):
            entry = entry_text(child, raw, _s(row), i)
            yield {"event": "child", "data": f'{{"session":"{child}","id":"{_s(row)}","call":{json.dumps(call)},'
                                             f'"entry":{entry}}}'}


def _idle(store, sid: str) -> bool:
    """Really idle: no turn runs, its memory is committed (the test ``mainsail -p`` waits on:
    :meth:`SessionRecord.memory_pending`), and nothing is queued."""
    rec = store.get_session(sid)
    return rec.state is State.IDLE and not rec.memory_pending() and not store.inbox(sid)


def _running_children(store, sid: str, finished_too: bool = False) -> list[tuple[str, str]]:
    """The session's sub-agents at work (``finished_too``: all of them), with their Task call's id."""
    rec = store.get_session(sid)
    return [(c.id, c.parent_tool_use_id or "") for c in store.get_sessions(rec.children)
            if finished_too or c.state is not State.IDLE]


def _new_children(store, sid: str, followed: set[str]) -> list[tuple[str, str]]:
    new = [c for c in store.get_session(sid).children if c not in followed]
    return [(c.id, c.parent_tool_use_id or "") for c in store.get_sessions(new)]
