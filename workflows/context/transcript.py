"""Transcripts in, from Claude Code's JSONL shape (the way out is workflows/context/export.py).

:func:`import_entries` reads an export of Mainsail's own (it imports back exactly, apart from
the session id), or one of Claude Code's
(``~/.claude/projects/<project>/<session>.jsonl``): it follows the
``parentUuid`` chain back from the newest message (Claude Code keeps rewound
branches in the file), merges the per-block lines Claude Code writes for one
streamed assistant message, skips lines Mainsail has no use for (``summary``,
``file-history-snapshot``, progress, sidechains) and repairs the tool-call
pairing so the transcript is valid for the Messages API.

:func:`import_session` stores the result as a new idle session.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Iterable

from pydantic import ValidationError

from workflows.commit.support import INTERRUPTED, INTERRUPTED_REPLY, _git_branch
from workflows.context.export import COMMON
from workflows.model.pricing import add_cost
from workflows.models import (
    AssistantEntry,
    AssistantMessage,
    Message,
    SessionRecord,
    SystemEntry,
    ToolResultBlock,
    Usage,
    UserEntry,
    new_id,
    parse_entry,
)
from workflows.store.redis_store import Store

MESSAGE_TYPES = ("user", "assistant")
CONTENT_TYPES = ("text", "tool_use", "tool_result", "thinking")


def _parse_lines(lines: Iterable[str]) -> list[tuple[int, dict]]:
    out = []
    for n, raw in enumerate(lines, 1):
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8")
        text = raw.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"Line {n} is not valid JSON: {exc.msg} (column {exc.colno}).") from None
        if not isinstance(obj, dict):
            raise ValueError(f"Line {n} is not a JSON object (got {type(obj).__name__}).")
        out.append((n, obj))
    return out


def _clean_blocks(content: Any) -> Any:
    """Claude Code content with the blocks Mainsail cannot hold (images, documents,
    redacted thinking, server tools) replaced by a short text, and tool_result
    contents reduced to text."""
    if not isinstance(content, list):
        return content
    out = []
    for b in content:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "tool_result":
            inner = b.get("content", "")
            if isinstance(inner, list):
                if all(isinstance(x, dict) and x.get("type") == "text" for x in inner):
                    inner = [{"type": "text", "text": x.get("text", "")} for x in inner]
                else:
                    inner = "\n".join(
                        x.get("text", "") if isinstance(x, dict) and x.get("type") == "text"
                        else f"[{x.get('type') if isinstance(x, dict) else 'content'} omitted on import]"
                        for x in inner)
            elif not isinstance(inner, str):
                inner = json.dumps(inner)
            b = {**b, "content": inner}
        elif kind not in CONTENT_TYPES:
            b = {"type": "text", "text": f"[{kind} omitted on import]"}
        out.append(b)
    return out


def _entry_from_line(n: int, obj: dict):
    """A Mainsail entry for one line that holds a message or a ``mainsail`` entry."""
    payload = obj.get("mainsail")
    common = {k: obj[k] for k in COMMON if k in obj}
    if common.get("gitBranch") == "":
        common["gitBranch"] = None
    common.setdefault("sessionId", "")  # replaced on import anyway
    try:
        if isinstance(payload, dict) and "type" in payload:
            return parse_entry(payload)
        kind = obj.get("type")
        msg = obj.get("message")
        if not isinstance(msg, dict):
            raise ValueError('no "message" object')
        extras = payload if isinstance(payload, dict) else {}
        if kind == "user":
            content = _clean_blocks(msg.get("content", ""))
            message = Message(role="user", content=content)
            origin = extras.get("origin") or (
                "tool_result" if any(b.type == "tool_result" for b in message.blocks())
                else "interrupt" if message.text() in (INTERRUPTED, INTERRUPTED_REPLY) else "prompt")
            return UserEntry.model_validate({**common, **extras, "origin": origin, "message": message})
        data = dict(msg)
        data["content"] = _clean_blocks(data.get("content", []))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        data["usage"] = {k: (usage.get(k) or 0) for k in Usage.model_fields}
        data.pop("role", None)
        message = AssistantMessage.model_validate(data)
        return AssistantEntry.model_validate({**common, **extras, "message": message})
    except (ValidationError, ValueError, TypeError) as exc:
        why = str(exc).splitlines()[0] if not isinstance(exc, ValidationError) else _why(exc)
        raise ValueError(f"Line {n} is not a transcript entry Mainsail can read: {why}") from None


def _why(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]


def _is_message_line(obj: dict) -> bool:
    return obj.get("type") in MESSAGE_TYPES and not obj.get("isSidechain")


def _select(rows: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """The lines that make the conversation, in order.

    A Mainsail export (any ``mainsail`` payload), or a file without parent
    links, is taken as written. A Claude Code file is followed from its newest
    message back along ``parentUuid``: that is the conversation Claude Code
    would resume (rewound branches and pre-compaction history fall away).
    """
    if any("mainsail" in obj for _, obj in rows) or not any(obj.get("parentUuid") for _, obj in rows):
        return [(n, obj) for n, obj in rows if "mainsail" in obj or _is_message_line(obj)]
    leaves = [(n, obj) for n, obj in rows if _is_message_line(obj) and obj.get("uuid")]
    if not leaves:
        return []
    by_uuid = {obj["uuid"]: (n, obj) for n, obj in rows if isinstance(obj.get("uuid"), str)}
    chain: list[tuple[int, dict]] = []
    seen: set[str] = set()
    cur: tuple[int, dict] | None = leaves[-1]
    while cur is not None and cur[1]["uuid"] not in seen:
        seen.add(cur[1]["uuid"])
        chain.append(cur)
        parent = cur[1].get("parentUuid")
        cur = by_uuid.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return [(n, obj) for n, obj in chain if _is_message_line(obj)]


def _merge_split_assistants(entries: list) -> list:
    """Claude Code writes one line per content block of a streamed message (same message id): merge them."""
    out: list = []
    for e in entries:
        prev = out[-1] if out else None
        if (isinstance(e, AssistantEntry) and isinstance(prev, AssistantEntry) and e.message.id
                and e.message.id == prev.message.id):
            merged = prev.message.model_copy(update={
                "content": prev.message.blocks() + e.message.blocks(),
                "stop_reason": e.message.stop_reason or prev.message.stop_reason,
                "usage": e.message.usage,
            })
            out[-1] = e.model_copy(update={"message": merged, "parent_uuid": prev.parent_uuid})
        else:
            out.append(e)
    return out


def _interrupted(after, tool_use_ids: list[str]) -> UserEntry:
    return UserEntry(
        session_id=after.session_id, cwd=after.cwd, git_branch=after.git_branch, origin="tool_result",
        display="interrupted",
        message=Message(role="user", content=[ToolResultBlock(tool_use_id=t, content=INTERRUPTED, is_error=True)
                                              for t in tool_use_ids]),
    )


def repair_tool_pairs(entries: list) -> list:
    """Make every tool_use answered before the next assistant message (an interrupted
    result where none was recorded) and drop tool_results that answer no tool_use."""
    out: list = []
    open_ids: list[str] = []  # tool_use ids of the last assistant message still unanswered
    last_assistant = None

    def close() -> None:
        if open_ids and last_assistant is not None:
            out.append(_interrupted(last_assistant, list(open_ids)))
            open_ids.clear()

    for e in entries:
        if isinstance(e, AssistantEntry):
            close()
            last_assistant = e
            open_ids[:] = [t.id for t in e.message.tool_uses()]
        elif isinstance(e, UserEntry) and not isinstance(e.message.content, str):
            blocks = e.message.blocks()
            keep = [b for b in blocks if not isinstance(b, ToolResultBlock) or b.tool_use_id in open_ids]
            for b in keep:
                if isinstance(b, ToolResultBlock):
                    open_ids.remove(b.tool_use_id)
            if len(keep) != len(blocks):
                if not keep:
                    continue
                e = e.model_copy(update={"message": Message(role="user", content=keep)})
        out.append(e)
    close()
    return out


def _relink(entries: list) -> list:
    """Each entry's parent is the one before it (a no-op for Mainsail's own transcripts)."""
    prev = None
    for e in entries:
        e.parent_uuid = prev.uuid if prev is not None else None
        prev = e
    return entries


def import_entries(lines: Iterable[str]) -> tuple[list, dict]:
    """Mainsail entries and facts about them from a JSONL transcript (Mainsail's export or Claude Code's).

    Returns ``(entries, meta)``; meta holds ``cwd``, ``gitBranch``, ``model``
    (of the newest assistant message) and ``source_session_id``.

    Raises:
        ValueError: a line is not JSON (the message names it), not an entry, or
            the file holds no user or assistant message.
    """
    rows = _parse_lines(lines)
    selected = _select(rows)
    entries = [_entry_from_line(n, obj) for n, obj in selected]
    if not any(isinstance(e, (UserEntry, AssistantEntry)) for e in entries):
        raise ValueError("The file holds no user or assistant messages: nothing to import.")
    entries = _relink(repair_tool_pairs(_merge_split_assistants(entries)))
    model = None
    for e in reversed(entries):
        m = e.message.model if isinstance(e, AssistantEntry) else None
        if m and not m.startswith("<"):  # Claude Code's "<synthetic>" error messages
            model = m
            break
    first = next((e for e in entries if e.cwd), entries[0])
    meta = {
        "cwd": first.cwd or None,
        "gitBranch": first.git_branch,
        "model": model,
        "source_session_id": entries[-1].session_id or None,
    }
    return entries, meta


def _title(entries: list) -> str:
    for e in entries:
        if isinstance(e, UserEntry) and e.origin == "prompt":
            line = " ".join((e.command or e.message.text()).split())
            if line:
                return line if len(line) <= 60 else line[:57] + "..."
    return ""


def import_session(store: Store, lines: Iterable[str], *, workspace: str | None = None,
                   model: str | None = None, default_model: str | None = None) -> SessionRecord:
    """Store a transcript as a NEW idle session and return its record.

    The workspace is ``workspace``, else the transcript's cwd when that is a
    directory here. The model is ``model``, else the newest assistant message's,
    else ``default_model`` (the settings' default). Entries keep their uuids and
    parent chain; only the session id changes.

    Raises:
        ValueError: the file is not a readable transcript, or no workspace is usable.
    """
    entries, meta = import_entries(lines)
    if workspace is not None:
        ws = os.path.realpath(os.path.expanduser(workspace))
        if not os.path.isdir(ws):
            raise ValueError(f"Workspace {workspace!r} is not a directory.")
    else:
        cwd = meta["cwd"]
        if not cwd:
            raise ValueError("The transcript does not say which directory it ran in; pass --cwd DIR.")
        if not os.path.isdir(cwd):
            raise ValueError(f"The transcript's directory {cwd} does not exist here; "
                             "pass --cwd DIR to choose the workspace.")
        ws = os.path.realpath(cwd)
    if default_model is None:
        from workflows.settings import Settings

        default_model = Settings.model_fields["model"].default
    sid = new_id()
    usage = Usage()
    cost = 0.0
    api_ms = 0
    turns = 0
    for e in entries:
        e.session_id = sid
        if isinstance(e, AssistantEntry):
            usage = usage + e.message.usage
            cost = add_cost(cost, e.cost_usd)
            api_ms += e.duration_ms
            turns += 1
        elif isinstance(e, SystemEntry) and e.usage is not None:  # a memory fork's calls
            usage = usage + e.usage
            cost = add_cost(cost, e.cost_usd)
    rec = SessionRecord(
        id=sid, model=model or meta["model"] or default_model, workspace=ws, git_branch=_git_branch(ws),
        title=_title(entries), last_uuid=entries[-1].uuid, usage=usage, cost_usd=cost, api_ms=api_ms,
        turns=turns, home=os.path.expanduser("~"), created_at=time.time(),
    )
    store.create_session(rec)
    p = store.pipeline()
    store.append(sid, entries, p)
    store.save_session(rec, p)
    p.execute()
    return rec


__all__ = ["import_entries", "import_session", "repair_tool_pairs"]
