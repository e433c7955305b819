"""Sessions: create and submit, list, show, transcript pages, send, cancel, compact, export.

Each route is the engine verb the matching CLI command calls, with the same checks; steps a verb
returns are dispatched here, as the CLI does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from server.api.common import BadRequest, engine, reach, service, visible_session
from server.api.listing import schedule_sessions, search
from server.api.stream import parse_event_id
from server.auth import Caller, require_reader, require_writer
from server.schemas import (
    Cancel,
    Compact,
    Done,
    Message,
    NewSession,
    SessionDetail,
    SessionSummary,
    TranscriptPage,
    problems,
)
from statemachines import State
from workflows.commit.support import cancel_message
from workflows.context.export import export_jsonl
from workflows.models import PathText
from workflows.models.options import SessionOptions
from workflows.settings import get_settings
from workflows.store.entry_read import entry_text
from workflows.store.redis_store import stream_entries

router = APIRouter(tags=["sessions"], responses=problems(402, 403, 404, 409))
READER = Depends(require_reader)
WRITER = Depends(require_writer)


@router.get("/sessions", response_model=list[SessionSummary])
def list_sessions(request: Request, caller: Caller = READER, state: State | None = None,
                  workspace: PathText | None = None, limit: int = Query(50, ge=1, le=10_000),
                  children: bool = Query(False, description="Also list sub-agents (child sessions)."),
                  q: str | None = Query(None, max_length=200, description="Text (case-insensitive) in the title, "
                                                                         "the id or the first prompt."),
                  token: str | None = Query(None, max_length=200, description="Only sessions this token (its "
                                                                             "name) started."),
                  schedule: str | None = Query(None, max_length=200, description="Only sessions this schedule "
                                                                                "(id, id prefix or name) started.")):
    """Sessions the token may see, newest activity first; each filter given narrows the list."""
    store = engine(request).store
    ws = os.path.realpath(workspace) if workspace else None
    fired = schedule_sessions(request, caller, schedule) if schedule else None
    text = (q or "").strip()

    def wanted(rec) -> bool:
        return not ((state and rec.state is not state) or (ws and rec.workspace != ws) or not caller.sees(rec)
                    or (rec.parent_session_id and not children) or (token is not None and rec.token != token)
                    or (fired is not None and rec.id not in fired))

    rows = []
    for chunk in _id_chunks(store, limit):
        found = [rec for rec in store.get_sessions(chunk) if wanted(rec)]
        rows += search(store, found, text) if text else found
        if len(rows) >= limit:
            break
    rows = rows[:limit]
    queued = store.inbox_lengths([r.id for r in rows])
    return [SessionSummary.of(r, queued.get(r.id, 0)) for r in rows]


def _id_chunks(store, limit: int):
    """Session ids, newest activity first, in chunks of about ``limit`` (at least 100): a listing
    reads and parses only as many records as it needs, not every session ever made."""
    size, start = max(limit, 100), 0
    while True:
        ids = store.session_ids(size, start)
        if not ids:
            return
        yield ids
        start += size


@router.post("/sessions", response_model=SessionDetail, status_code=201)
def create_session(body: NewSession, request: Request, caller: Caller = WRITER):
    """A new session in ``workspace``, with the workspace's settings files, rules and hooks, as
    ``mainsail submit`` makes it; ``prompt`` (if any) is submitted at once. Calls that would ask wait
    for a decision (``/api/approvals``). bypassPermissions (asked for, or the settings' defaultMode)
    needs a token made with ``--allow-bypass`` (else 403); where the workspace's or the server user's
    settings files disable it, the session starts in the next mode with a warning, as at a terminal."""
    ws = Path(reach(caller, body.workspace, body.add_dirs))  # the token's scope before the disk
    if not ws.is_dir():
        raise BadRequest(f"Workspace {body.workspace!r} is not an existing directory on the server (give an "
                         "absolute path on the server's machine).")
    svc = service(request)

    def vet(resolved):  # --add-dir and the settings files' dirs are held to the token's workspaces
        for extra in resolved.setup.additional_directories:
            caller.check_workspace(extra)
        return resolved

    # A scoped token's session hides the other tokens' workspaces from its commands (sandbox denyRead);
    # its approvals are held to that too (workflows/permissions/token_reach.py).
    opened = svc.create(ws, SessionOptions.of(body, asks="wait"), get_settings(), token=caller.token,
                                     vet=vet, cwd=str(ws), mode_given_by="the request's permission_mode")
    rec, warnings = opened.rec, opened.warnings
    warnings += [f"custom command {p}" for p in svc.refresh_commands(rec.id)]
    if body.prompt:
        svc.submit(rec.id, body.prompt)
    rec = svc.store.get_session(rec.id)
    return SessionDetail.of(rec, svc.store.inbox(rec.id), warnings)


@router.get("/sessions/{session}", response_model=SessionDetail)
def get_session(session: str, request: Request, caller: Caller = READER):
    """A session's facts (``mainsail show``)."""
    rec = visible_session(request, caller, session)
    return SessionDetail.of(rec, engine(request).store.inbox(rec.id))


@router.get("/sessions/{session}/transcript", response_model=TranscriptPage)
def transcript(session: str, request: Request, caller: Caller = READER,
               after: str | None = Query(None, description="A stream id: entries after it."),
               limit: int = Query(500, ge=1, le=5000, description="Stream rows (one commit may hold several)."),
               ):
    """A page of the transcript, oldest first; ``next`` is the ``after`` of the next page."""
    rec = visible_session(request, caller, session)
    store = engine(request).store
    start, seen = parse_event_id(after)
    if seen is not None:
        raise BadRequest(f"Invalid 'after' {after!r}: give an id of the 'ids' or 'next' of a previous page.")
    rows = store.log_rows(rec.id, start if after else None, limit)
    entries, ids = [], []
    for sid_, fields in rows:
        row = sid_.decode() if isinstance(sid_, bytes) else sid_
        for i, raw in enumerate(stream_entries(fields)):
            entries.append(json.loads(entry_text(rec.id, raw, row, i)))  # (unreadable: its marker)
            ids.append(row)
    nxt = ids[-1] if ids and len(rows) == limit else None
    return TranscriptPage(entries=entries, ids=ids, next=nxt)


@router.get("/sessions/{session}/export", response_class=StreamingResponse,
            responses={200: {"content": {"application/x-ndjson": {}}}})
def export(session: str, request: Request, caller: Caller = READER):
    """The transcript as Claude Code's JSONL (``mainsail export``)."""
    rec = visible_session(request, caller, session)
    entries = engine(request).store.entries(rec.id)
    return StreamingResponse(export_jsonl(entries, rec), media_type="application/x-ndjson",
                             headers={"Content-Disposition": f'attachment; filename="{rec.id}.jsonl"'})


@router.post("/sessions/{session}/messages", response_model=Done, status_code=202)
def send(session: str, body: Message, request: Request, caller: Caller = WRITER):
    """Send a message (``mainsail send``): it runs now, or waits in the inbox while the session is busy."""
    rec = visible_session(request, caller, session)
    if body.message is None and not body.clear:
        raise BadRequest("Give a 'message' (or 'clear': true alone to drop the queued messages).")
    if body.message is not None:
        caller.check_bypass(rec)  # before anything is changed: a refused send clears and stops nothing
    svc, notes = service(request), []
    sent = svc.send(rec.id, body.message, interrupt=body.interrupt, clear=body.clear)
    if body.clear:
        notes.append(f"dropped {len(sent.dropped)} queued message{'s' if len(sent.dropped) != 1 else ''}")
    if sent.stopped is not None and sent.stopped.cancelled:
        notes.append("interrupted the running turn")
    if body.message is not None:
        notes.append(f"queued as message {len(sent.inbox)} of {len(sent.inbox)}" if sent.queued else "sent")
    return Done(session_id=rec.id, message="; ".join(notes).capitalize() + ".",
                state=svc.store.get_session(rec.id).state)


@router.post("/sessions/{session}/cancel", response_model=Done)
def cancel(session: str, request: Request, body: Cancel | None = None, caller: Caller = WRITER):
    """Stop the running turn (``mainsail cancel``); the next queued message then runs unless ``clear``."""
    rec = visible_session(request, caller, session)
    stopped = service(request).stop(rec.id, clear_queue=bool(body and body.clear))
    return Done(session_id=rec.id, message=cancel_message(rec.id, stopped),
                state=engine(request).store.get_session(rec.id).state)


@router.post("/sessions/{session}/compact", response_model=Done, status_code=202)
def compact(session: str, request: Request, body: Compact | None = None, caller: Caller = WRITER):
    """Compact an idle session now (``mainsail compact``); follow its events for the result."""
    rec = visible_session(request, caller, session)
    service(request).compact(rec.id, body.instructions if body else None)
    return Done(session_id=rec.id, message="Compacting.", state=engine(request).store.get_session(rec.id).state)
