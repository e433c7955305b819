"""Context assembly: what one model call sends (system prompt, tools, messages).

Messages are rebuilt from the transcript on every call, so any worker can make
the next call of any session from Redis alone. After a compaction, the model
sees the summary in place of everything before the last boundary (the
transcript itself keeps everything). The user context (memory files and the
date, computed once at the session's start) leads the first user message as
a reminder block. Cache breakpoints sit on the system prompt, the tool list
and the newest message, so each turn reads the previous turn's prefix from
the prompt cache.
"""

from __future__ import annotations

from workflows.models import (
    AssistantEntry,
    CompactBoundaryEntry,
    Message,
    SessionRecord,
    SummaryEntry,
    ToolResultBlock,
    UserEntry,
)
from workflows.tools import MEMORY_TOOLS, TOOL_ORDER, tool_schemas

CACHE = {"type": "ephemeral"}

SUMMARY_INTRO = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)
CONTINUE = (
    "\nPlease continue the conversation from where we left it off without asking the user any further "
    "questions. Continue with the last task that you were asked to work on."
)


def model_view(entries: list) -> list:
    """The entries the model sees: after the last compact boundary, the summary first."""
    last = max((i for i, e in enumerate(entries) if isinstance(e, CompactBoundaryEntry)), default=None)
    if last is None:
        return entries
    boundary = entries[last]
    rest = entries[last + 1:]
    summary = next((e for e in rest if isinstance(e, SummaryEntry)), None)
    if summary is None:
        return rest
    preserved = [e for e in entries[:last] if e.uuid in set(boundary.preserved)] if boundary.preserved else []
    text = SUMMARY_INTRO + summary.summary + ("" if preserved else CONTINUE)
    intro = UserEntry(session_id=summary.session_id, uuid=summary.uuid,
                      message=Message(role="user", content=text), origin="synthetic")
    return [intro, *preserved, *(e for e in rest if e is not summary)]


def api_messages(entries: list, user_context: str = "") -> list[dict]:
    """The Messages API ``messages`` for a transcript.

    Consecutive user entries (a prompt, or the results of one turn's tool calls)
    merge into one user message, tool_result blocks first, as the API requires.
    """
    out: list[dict] = []
    for e in model_view(entries):
        if isinstance(e, AssistantEntry):
            out.append({"role": "assistant", "content": _blocks(e.message.content)})
        elif isinstance(e, UserEntry):
            blocks = _blocks(e.message.content)
            if out and out[-1]["role"] == "user":
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": "user", "content": blocks})
    for m in out:
        if m["role"] == "user":
            m["content"].sort(key=lambda b: 0 if b.get("type") == "tool_result" else 1)
    if user_context and out and out[0]["role"] == "user":
        out[0]["content"].insert(0, {"type": "text", "text": user_context})
    return out


def _blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for b in content:
        d = b.model_dump(mode="json", exclude_none=True)
        if isinstance(b, ToolResultBlock) and not b.is_error:
            d.pop("is_error", None)
        blocks.append(d)
    return blocks


def system_blocks(rec: SessionRecord) -> list[dict]:
    from workflows.context_files import system_prompt

    return system_prompt(rec.custom_system_prompt, rec.append_system_prompt, rec.system_context)


def with_cache_breakpoints(request: dict) -> dict:
    """Mark the system prompt, the tool list and the newest message as cacheable prefixes."""
    if request.get("system"):
        request["system"][-1]["cache_control"] = CACHE
    if request.get("tools"):
        request["tools"][-1] = {**request["tools"][-1], "cache_control": CACHE}
    messages = request.get("messages") or []
    if messages and messages[-1]["content"]:
        messages[-1]["content"][-1]["cache_control"] = CACHE
    return request


def session_tools(rec: SessionRecord) -> list[str]:
    """The tools a session's agent is offered: the core six, and the memory tools with auto-memory on;
    only those ``rec.tools`` names when set (Claude Code's --tools)."""
    names = list(TOOL_ORDER) + (list(MEMORY_TOOLS) if rec.auto_memory and rec.project_id else [])
    return names if rec.tools is None else [n for n in names if n in rec.tools]


def build_request(rec: SessionRecord, entries: list, max_tokens: int) -> dict:
    """The keyword arguments of ``client.messages.stream`` for the session's next call."""
    return with_cache_breakpoints({
        "model": rec.sent_model(),
        "max_tokens": max_tokens,
        "system": system_blocks(rec),
        "tools": tool_schemas(session_tools(rec)),
        "messages": api_messages(entries, rec.user_context),
    })
