"""What ``GET /api/sessions`` filters by beyond state and workspace: the token that started a session,
the schedule that fired it, and a text search over its title, id and first prompt.

Every filter narrows what the token may see already (``Caller.sees``): none widens it. A schedule is
named as ``mainsail schedule`` names it (id, unique id prefix or name) and must be one the token may
see (else 404, as ``GET /api/schedules/{id}``); its sessions are those its kept runs started
(the newest ``RUNS_KEPT``) and its last one.
"""

from __future__ import annotations

import json

from fastapi import Request

from server.api.schedules import found
from server.auth import Caller
from workflows.store.entry_read import entry_text
from workflows.store.redis_store import stream_entries

#: Stream rows read from the start of a transcript to find its first prompt (context reminders, the
#: session's notes and hook output may come before it).
PROMPT_ROWS = 12


def schedule_sessions(request: Request, caller: Caller, schedule: str) -> set[str]:
    """The ids of the sessions the schedule ``schedule`` started; a 404 for one this token may not see."""
    s, schedules = found(request, caller, schedule)
    ids = {run.session_id for run in schedules.runs(s.id) if run.session_id}
    last = getattr(s, "last_session_id", None)
    return ids | {last} if last else ids


def first_prompt(store, sid: str) -> str:
    """The text of the session's first prompt ("" when its first rows hold none)."""
    for row, fields in store.log_rows(sid, None, PROMPT_ROWS):
        row = row.decode() if isinstance(row, bytes) else row
        for i, raw in enumerate(stream_entries(fields)):
            entry = json.loads(entry_text(sid, raw, row, i))
            if entry.get("type") == "user" and entry.get("origin", "prompt") == "prompt":
                content = (entry.get("message") or {}).get("content")
                if isinstance(content, str):
                    return content
                return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
    return ""


def matches(store, rec, text: str) -> bool:
    """Whether ``text`` (case-insensitive) is in the session's title, its id, or its first prompt."""
    needle = text.casefold()
    return needle in rec.title.casefold() or needle in rec.id or needle in first_prompt(store, rec.id).casefold()


__all__ = ["PROMPT_ROWS", "first_prompt", "matches", "schedule_sessions"]
