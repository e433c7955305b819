"""Reading transcript entries: one bad entry never makes a session unreadable.

A stored entry may not parse: bytes that are not UTF-8, JSON that is not JSON, or an entry this version's
models refuse (written by an older or newer version, or by hand). Every reader of a transcript (the
store's reads and its cache, ``show``, ``export``, ``watch``, the server's transcript and events, the
console, the context of the next model call) reads an entry through :func:`read_entry`, which gives such
an entry's place a marker instead: an :class:`UnreadableEntry` (a system entry of subtype ``unreadable``)
saying which stream entry could not be read and why. The model never sees it (system entries are not
part of the conversation, workflows/context/assemble.py); where the entry it stands for was a tool call or its
result, :func:`mend` gives the other half a stand-in, so the conversation sent stays one the Messages
API accepts.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from pydantic import ValidationError

from workflows.models import (
    AssistantEntry,
    Message,
    SystemEntry,
    TextBlock,
    ToolResultBlock,
    UserEntry,
    _Entry,
    parse_entry,
)
from workflows.models.valid_text import dumps, valid_str

#: The namespace of a marker's uuid: the same entry read twice gives the same marker.
_MARKERS = uuid.UUID("6a1d6f0e-5b7c-4e0a-9d0b-8f3f3c1a2b7d")
#: What reading an entry raises when it cannot be read (a ValidationError is a ValueError).
_UNREADABLE = (ValueError, UnicodeError, TypeError)
#: The longest reason a marker quotes.
MAX_REASON = 200


class UnreadableEntry(SystemEntry):
    """The marker of a stored entry that could not be read (stored as, and read back as, a system entry)."""


def read_entry(sid: str, raw: str | bytes | dict, stream_id: str | None = None, index: int = 0) -> _Entry:
    """The entry stored as ``raw`` (JSON text or bytes, or the parsed dict), or, when it cannot be read,
    a marker for it (:func:`unreadable`). ``stream_id`` and ``index`` (its place among the stream
    entry's fields) name it in the marker."""
    try:
        return parse_entry(raw)
    except _UNREADABLE as exc:
        return unreadable(sid, stream_id, index, exc)


def unreadable(sid: str, stream_id: str | None, index: int, exc: Exception) -> UnreadableEntry:
    """The marker standing for an entry that could not be read, and why (never its content)."""
    where = f"{stream_id}" + (f" (part {index + 1})" if index else "") if stream_id else "(unknown id)"
    when = _written_at(stream_id)
    return UnreadableEntry(
        session_id=sid, subtype="unreadable", **({"timestamp": when} if when else {}),
        uuid=str(uuid.uuid5(_MARKERS, f"{sid}/{stream_id}/{index}")),
        content=f"Entry {where} could not be read: {_reason(exc)}. It is left out; the rest of the "
                "session is as recorded.")


def entry_text(sid: str, raw: str | bytes, stream_id: str | None = None, index: int = 0) -> str:
    """``raw`` as JSON text to hand on (the server's transcript and events), if it reads as an entry;
    otherwise its marker's JSON."""
    try:
        parse_entry(raw)
    except _UNREADABLE as exc:
        return dumps(unreadable(sid, stream_id, index, exc).dump())
    return raw.decode() if isinstance(raw, bytes) else raw


def mend(view: list) -> list:
    """The entries the model sees (``view``, holding a marker) with each tool call and tool result whose
    other half could not be read given a stand-in: a result with no call becomes a text block, a call
    with no result gets an error result after it. Without these the API refuses the whole request."""
    uses = {tu.id for e in view if isinstance(e, AssistantEntry) for tu in e.message.tool_uses()}
    answered = {b.tool_use_id for e in view if isinstance(e, UserEntry) for b in e.message.blocks()
                if isinstance(b, ToolResultBlock)}
    out: list = []
    for e in view:
        if isinstance(e, UserEntry) and any(isinstance(b, ToolResultBlock) and b.tool_use_id not in uses
                                            for b in e.message.blocks()):
            blocks = [TextBlock(text=f"(The result of tool call {b.tool_use_id}, whose call could not be read: "
                                     f"{b.text[:500]})")
                      if isinstance(b, ToolResultBlock) and b.tool_use_id not in uses else b
                      for b in e.message.blocks()]
            e = e.model_copy(update={"message": Message(role="user", content=blocks)})
        out.append(e)
        if isinstance(e, AssistantEntry):
            missing = [tu.id for tu in e.message.tool_uses() if tu.id not in answered]
            if missing:
                out.append(UserEntry(session_id=e.session_id, origin="synthetic", message=Message(
                    role="user", content=[ToolResultBlock(tool_use_id=i, is_error=True,
                                                          content="The result of this call could not be read.")
                                          for i in missing])))
    return out


def field_text(value: str | bytes) -> str:
    """A stream field's value as ``str``: bytes that are not UTF-8 are kept as surrogate escapes, which no
    parser accepts (so the entry reads as a marker), rather than raising in the middle of a read."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _written_at(stream_id: str | None) -> str | None:
    """When the stream entry ``stream_id`` was written (its id's milliseconds), as entries' timestamps are."""
    ms = (stream_id or "").partition("-")[0]
    if not ms.isdigit():
        return None
    when = datetime.fromtimestamp(int(ms) / 1000, timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors(include_url=False, include_input=False)[:3]:
            loc = ".".join(str(p) for p in err.get("loc", ()))
            parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
        more = exc.error_count() - len(parts)
        text = "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = valid_str(text.replace("\n", " "))
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 3] + "..."
