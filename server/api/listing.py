"""What ``GET /api/sessions`` filters by beyond state and workspace: the token that started a session,
the schedule that fired it, and a text search over its title, id and first prompt.

Every filter narrows what the token may see already (``Caller.sees``): none widens it. A schedule is
named as ``mainsail schedule`` names it (id, unique id prefix or name) and must be one the token may
see (else 404, as ``GET /api/schedules/{id}``); its sessions are those its kept runs started
(the newest ``RUNS_KEPT``) and its last one.
"""

from __future__ import annotations

import json
import threading

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


#: First prompts found, by session id: a transcript is never rewritten, so a first prompt once found is
#: the session's for good (a rewind appends; a deleted session's entry only goes stale). Bounded: cleared
#: when full (a search then reads them again, in one round trip).
_PROMPTS: dict[str, str] = {}
PROMPTS_KEPT = 20_000
_lock = threading.Lock()


def first_prompts(store, ids: list[str]) -> dict[str, str]:
    """The text of each session's first prompt ("" when its first rows hold none): those not known yet
    read in one round trip."""
    with _lock:
        known = {sid: _PROMPTS[sid] for sid in ids if sid in _PROMPTS}
    missing = [sid for sid in ids if sid not in known]
    if not missing:
        return known
    read = {sid: _prompt(sid, rows) for sid, rows in store.first_log_rows(missing, PROMPT_ROWS).items()}
    with _lock:
        if len(_PROMPTS) + len(read) > PROMPTS_KEPT:
            _PROMPTS.clear()
        _PROMPTS.update({sid: text for sid, text in read.items() if text})  # ("": no prompt yet, asked again)
    return {**known, **read}


def _prompt(sid: str, rows) -> str:
    for row, fields in rows:
        row = row.decode() if isinstance(row, bytes) else row
        for i, raw in enumerate(stream_entries(fields)):
            entry = json.loads(entry_text(sid, raw, row, i))
            if entry.get("type") == "user" and entry.get("origin", "prompt") == "prompt":
                content = (entry.get("message") or {}).get("content")
                if isinstance(content, str):
                    return content
                return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
    return ""


def search(store, recs: list, text: str) -> list:
    """Those of ``recs`` with ``text`` (case-insensitive) in the title, the id or the first prompt; the
    first prompts are read only for the sessions whose title and id do not match."""
    needle = text.casefold()
    by_record = {r.id for r in recs if needle in r.title.casefold() or needle in r.id}
    prompts = first_prompts(store, [r.id for r in recs if r.id not in by_record])
    return [r for r in recs if r.id in by_record or needle in prompts[r.id].casefold()]


__all__ = ["PROMPTS_KEPT", "PROMPT_ROWS", "first_prompts", "schedule_sessions", "search"]
