"""Transcripts out, in Claude Code's JSONL shape.

:func:`export_entries` turns a session's entries into Claude Code transcript
lines (``type``, ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``, ``cwd``,
``gitBranch``, ``version``, ``isSidechain``, ``userType``, ``message``). What
Claude Code has no field for rides along under a ``mainsail`` key:

* user and assistant lines carry the Mainsail-only fields (``origin``,
  ``display``, ``step_id``, ``cost_usd``, ``duration_ms``);
* Mainsail-only entries (state, system, result, permission request/decision)
  become ``{"type": "system", "subtype": <mainsail type>, "content": <short
  text>, "mainsail": <the whole entry>}``.

So an export imports back exactly (apart from the session id: workflows/context/transcript.py).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from workflows.models import AssistantEntry, AssistantMessage, SessionRecord, UserEntry

#: Fields every transcript line carries, by their Claude Code names.
COMMON = ("uuid", "parentUuid", "sessionId", "timestamp", "cwd", "gitBranch")


def version() -> str:
    """``mainsail-<package version>``, or ``mainsail`` when the package metadata is missing."""
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as _version

        return f"mainsail-{_version('mainsail')}"
    except (ImportError, PackageNotFoundError):
        return "mainsail"


def assistant_api_message(message: AssistantMessage) -> dict:
    """An assistant message as the Messages API returns it."""
    return {
        "id": message.id,
        "type": "message",
        "role": "assistant",
        "model": message.model,
        "content": _dump_content(message.content),
        "stop_reason": message.stop_reason,
        "stop_sequence": None,
        "usage": message.usage.model_dump(mode="json"),
    }


def _dump_content(content) -> Any:
    if isinstance(content, str):
        return content
    return [b.model_dump(mode="json", exclude_none=True) for b in content]


def _short(e) -> str:
    """The one-line ``content`` of a Mainsail-only entry, for readers that do not know it."""
    t = e.type
    if t == "state":
        return f"{e.trigger}: {e.source.value} -> {e.dest.value}"
    if t == "system":
        return f"{e.subtype}: {e.content}"
    if t == "result":
        text = " ".join(e.result.split())
        return f"{e.subtype}: {text[:200]}" if text else e.subtype
    if t == "permission_request":
        return f"permission requested for {e.tool}: {e.summary}"
    if t == "permission_decision":
        return f"{e.decision} {e.tool} (by {e.decided_by})"
    if t == "hook_callback":
        return f"{e.event} hooks wait for the SDK client's callbacks ({', '.join(e.callbacks)})"
    if t == "hook":
        return f"{e.event} hook" + (f" ({e.tool})" if e.tool else "") + f": {e.outcome.decision or 'ok'}"
    return t


def _level(e) -> str:
    if e.type == "system":
        return {"error": "error", "warning": "warning", "unreadable": "warning"}.get(e.subtype, "info")
    if e.type == "result" and e.is_error:
        return "error"
    return "info"


def export_entries(entries: list, rec: SessionRecord) -> Iterator[dict]:
    """One Claude Code transcript line (a JSON-able dict) per entry, in order."""
    ver = version()
    for e in entries:
        d = e.dump()
        line: dict[str, Any] = {
            "parentUuid": e.parent_uuid,
            "isSidechain": bool(rec.parent_session_id),  # a sub-agent's transcript (a Task call's child)
            "userType": "external",
            "cwd": e.cwd or rec.workspace,
            "sessionId": e.session_id,
            "version": ver,
            "gitBranch": e.git_branch or "",
        }
        if rec.parent_session_id:
            line["agentId"] = rec.id
        if isinstance(e, (UserEntry, AssistantEntry)):
            line["type"] = e.type
            if isinstance(e, UserEntry):
                line["message"] = {"role": "user", "content": _dump_content(e.message.content)}
            else:
                line["message"] = assistant_api_message(e.message)
            extras = {k: v for k, v in d.items() if k not in COMMON and k not in ("type", "message")}
            line["mainsail"] = extras
        else:
            line["type"] = "system"
            line["subtype"] = e.type
            line["content"] = _short(e)
            line["level"] = _level(e)
            line["isMeta"] = False
            line["mainsail"] = d
        line["uuid"] = e.uuid
        line["timestamp"] = e.timestamp
        yield line


def export_jsonl(entries: list, rec: SessionRecord) -> Iterator[str]:
    """:func:`export_entries` as JSONL lines (with their newline)."""
    for line in export_entries(entries, rec):
        yield json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n"


__all__ = ["COMMON", "assistant_api_message", "export_entries", "export_jsonl", "version"]
