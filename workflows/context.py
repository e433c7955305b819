"""Context assembly: what one model call sends (system prompt, tools, messages).

Messages are rebuilt from the transcript on every call, so any worker can make
the next call of any session from Redis alone. Rebuilding is cheap: each
entry's API-shaped blocks are computed once per entry object (entries never
change; the store's entry cache keeps them), and the system blocks and tool
definitions once per process for each distinct input, so a step's cost does
not grow with the transcript. Those cached dicts are shared: nothing here
mutates them (the cache breakpoints go on copies). After a compaction, the model
sees the summary in place of everything before the last boundary (the
transcript itself keeps everything). The user context (memory files and the
date, computed once at the session's start) leads the first user message as
a reminder block. Cache breakpoints sit on the system prompt, the tool list
and the newest message, so each turn reads the previous turn's prefix from
the prompt cache.
"""

from __future__ import annotations

from functools import lru_cache

from workflows.memo import ObjectMemo
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
from workflows.tools.task import agents_key, task_schema

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
    keep = set(boundary.preserved)
    preserved = [e for e in entries[:last] if e.uuid in keep] if keep else []
    text = SUMMARY_INTRO + summary.summary + ("" if preserved else CONTINUE)
    intro = UserEntry(session_id=summary.session_id, uuid=summary.uuid,
                      message=Message(role="user", content=text), origin="synthetic")
    return [intro, *preserved, *(e for e in rest if e is not summary)]


def api_messages(entries: list, user_context: str = "") -> list[dict]:
    """The Messages API ``messages`` for a transcript.

    Consecutive user entries (a prompt, or the results of one turn's tool calls)
    merge into one user message, tool_result blocks first, as the API requires.
    The message dicts and content lists are new on each call; the blocks in them are
    each entry's blocks, computed once per entry object and shared: a caller changes a
    block by replacing it in its list, never in place.
    """
    out: list[dict] = []
    for e in model_view(entries):
        if isinstance(e, AssistantEntry):
            out.append({"role": "assistant", "content": list(_ENTRY_BLOCKS.get(e))})
        elif isinstance(e, UserEntry):
            blocks = _ENTRY_BLOCKS.get(e)
            if out and out[-1]["role"] == "user":
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": "user", "content": list(blocks)})
    for m in out:
        if m["role"] == "user" and len(m["content"]) > 1:
            m["content"].sort(key=_results_first)
    if user_context and out and out[0]["role"] == "user":
        out[0]["content"].insert(0, {"type": "text", "text": user_context})
    return out


def _results_first(block: dict) -> int:
    return 0 if block.get("type") == "tool_result" else 1


def _blocks(content) -> list[dict]:
    """Message content (a string or content blocks) as new API-shaped dicts."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for b in content:
        d = b.model_dump(mode="json", exclude_none=True)
        if isinstance(b, ToolResultBlock) and not b.is_error:
            d.pop("is_error", None)
        blocks.append(d)
    return blocks


#: A user or assistant entry's content as API blocks (read-only: shared by every request built from it).
_ENTRY_BLOCKS: ObjectMemo[tuple[dict, ...]] = ObjectMemo(lambda e: tuple(_blocks(e.message.content)))


def system_blocks(rec: SessionRecord) -> list[dict]:
    """The session's ``system`` blocks (a new list of shared, read-only dicts)."""
    return list(_system_blocks(rec.custom_system_prompt, rec.append_system_prompt, rec.system_context))


@lru_cache(maxsize=256)
def _system_blocks(custom: str | None, append: str | None, system_context: str) -> tuple[dict, ...]:
    # Keyed by the inputs' content (every worker computes the same blocks from the same record).
    from workflows.context_files import system_prompt

    return tuple(system_prompt(custom, append, system_context))


@lru_cache(maxsize=256)
def _tool_schemas(names: tuple[str, ...], agents: tuple = ()) -> tuple[dict, ...]:
    # Task's description lists the session's agent types (``agents``: workflows.tools.task.agents_key).
    return tuple(task_schema(agents) if s["name"] == "Task" else s for s in tool_schemas(list(names)))


def with_cache_breakpoints(request: dict) -> dict:
    """Mark the system prompt, the tool list and the newest message as cacheable prefixes.

    The marked blocks are copies put in their place (the originals are shared caches); the
    system and tool lists are replaced, the newest message's content list is changed in place.
    """
    if request.get("system"):
        request["system"] = [*request["system"][:-1], _marked(request["system"][-1])]
    if request.get("tools"):
        request["tools"] = [*request["tools"][:-1], _marked(request["tools"][-1])]
    messages = request.get("messages") or []
    if messages and messages[-1]["content"]:
        content = messages[-1]["content"]
        content[-1] = _marked(content[-1])
    return request


def _marked(block: dict) -> dict:
    return {**block, "cache_control": CACHE}


def session_tools(rec: SessionRecord) -> list[str]:
    """The tools a session's agent is offered: the core tools (TOOL_ORDER), and the memory tools with auto-memory
    on; only those ``rec.tools`` names when set (Claude Code's --tools). A sub-agent (a child session) is
    never offered Task: sub-agents do not start sub-agents, as in Claude Code."""
    names = list(TOOL_ORDER) + (list(MEMORY_TOOLS) if rec.auto_memory and rec.project_id else [])
    if rec.parent_session_id or not rec.agents:
        names.remove("Task")
    return names if rec.tools is None else [n for n in names if n in rec.tools]


def offered_tools(rec: SessionRecord) -> list[str]:
    """Every tool name the model is offered (``system/init``'s ``tools``): the session's own, then its MCP tools."""
    from workflows.mcp.catalog import offered_names

    return session_tools(rec) + offered_names(rec)


def build_request(rec: SessionRecord, entries: list, max_tokens: int, mcp_tools: tuple[dict, ...] = ()) -> dict:
    """The keyword arguments of ``client.messages.stream`` for the session's next call.

    ``mcp_tools``: the definitions of the session's MCP tools (``workflows.mcp.catalog.tool_schemas``),
    offered after its own tools.
    """
    return with_cache_breakpoints({
        "model": rec.sent_model(),
        "max_tokens": max_tokens,
        "system": system_blocks(rec),
        "tools": [*_tool_schemas(tuple(session_tools(rec)), agents_key(rec.agents)), *mcp_tools],
        "messages": api_messages(entries, rec.user_context),
    })
