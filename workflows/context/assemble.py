"""Context assembly: what one model call sends (system prompt, tools, messages).

Messages are rebuilt from the transcript on every call, so any worker can make
the next call of any session from Redis alone. Rebuilding is cheap: each
entry's API-shaped blocks are computed once per entry object (entries never
change; the store's entry cache keeps them), and the system blocks and tool
definitions once per process for each distinct input, so a step's cost does
not grow with the transcript. Those cached dicts are shared: nothing here
mutates them (the cache breakpoints go on copies). After a compaction, the model
sees the summary in place of everything before the last boundary, and a
``/rewind`` of the conversation takes back the message it names and what
followed it (the transcript itself keeps everything). The user context (memory files and the
date, computed once at the session's start) leads the first user message as
a reminder block. Cache breakpoints sit on the system prompt, the tool list
and the newest message, so each turn reads the previous turn's prefix from
the prompt cache.
"""

from __future__ import annotations

import json
from functools import lru_cache

from workflows.memo import ObjectMemo
from workflows.model import request_json
from workflows.model.request_json import Block
from workflows.models import (
    AssistantEntry,
    CompactBoundaryEntry,
    Message,
    RewindEntry,
    SessionRecord,
    SummaryEntry,
    ToolResultBlock,
    UserEntry,
)
from workflows.permissions.rules.removal import without_denied
from workflows.store.entry_read import UnreadableEntry, mend
from workflows.tools import MEMORY_TOOLS, TOOL_ORDER, structured, tool_schemas
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
    """The entries the model sees: without what a rewind took back (:func:`unrewound`), then after the last
    compact boundary, the summary first (mended around an entry that could not be read:
    :func:`workflows.store.entry_read.mend`)."""
    kinds = list(map(type, entries))  # (a C loop: this runs at every model call)
    if RewindEntry in kinds:
        entries = unrewound(entries, kinds)
        kinds = list(map(type, entries))
    if UnreadableEntry in kinds:
        return mend(_view(entries, kinds))
    return _view(entries, kinds)


def unrewound(entries: list, kinds: list | None = None) -> list:
    """``entries`` without the stretches conversation rewinds took back: each :class:`RewindEntry` drops the
    message it names and everything after it, up to itself. A rewind whose message is not in what is left
    (an import that kept another branch) changes nothing; the rewind entries themselves are left out."""
    kinds = kinds if kinds is not None else list(map(type, entries))
    live: list = []
    start = 0
    while True:
        try:
            at = kinds.index(RewindEntry, start)  # (C: only the rewinds are visited in Python)
        except ValueError:
            live.extend(entries[start:])
            return live
        live.extend(entries[start:at])
        rewind = entries[at]
        if rewind.conversation:
            for i in range(len(live) - 1, -1, -1):  # (from the end: a rewind names a recent message)
                if live[i].uuid == rewind.to:
                    del live[i:]
                    break
        start = at + 1


def _view(entries: list, kinds: list) -> list:
    if CompactBoundaryEntry not in kinds:
        return entries
    last = len(kinds) - 1 - kinds[::-1].index(CompactBoundaryEntry)
    boundary = entries[last]
    rest = entries[last + 1:]
    summary = next((e for e in rest if isinstance(e, SummaryEntry)), None)
    if summary is None:
        return rest
    keep = set(boundary.preserved)
    preserved = [e for e in entries[:last] if e.uuid in keep] if keep else []
    return [_intro(summary, bool(preserved)), *preserved, *(e for e in rest if e is not summary)]


def _intro(summary: SummaryEntry, preserved: bool) -> UserEntry:
    """The user message standing for everything a summary replaced (one object per summary, so the
    requests built after it share their messages: :func:`request_messages`)."""
    intros = _INTROS.get(summary)
    if preserved not in intros:
        text = SUMMARY_INTRO + summary.summary + ("" if preserved else CONTINUE)
        intros[preserved] = UserEntry(session_id=summary.session_id, uuid=summary.uuid,
                                      message=Message(role="user", content=text), origin="synthetic")
    return intros[preserved]


_INTROS: ObjectMemo[dict] = ObjectMemo(lambda summary: {})


def api_messages(entries: list, user_context: str = "") -> list[dict]:
    """The Messages API ``messages`` for a transcript.

    Consecutive user entries (a prompt, or the results of one turn's tool calls)
    merge into one user message, tool_result blocks first, as the API requires.
    The message dicts and content lists are new on each call; the blocks in them are
    each entry's blocks, computed once per entry object and shared: a caller changes a
    block by replacing it in its list, never in place.
    """
    return [{"role": m["role"], "content": list(m["content"])} for m in request_messages(entries, user_context)]


def request_messages(entries: list, user_context: str = "") -> list[Block]:
    """:func:`api_messages` as shared, read-only :class:`Block` messages, each keeping its JSON.

    A transcript only grows, so every message but the last is final once built: the call for the
    same transcript after this one reuses them (found by the first entry the model sees, checked
    by the last entry they cover) and converts only what follows. The list comes with the JSON of
    its leading messages in pieces (:class:`~workflows.model.request_json.Messages`), extended from the
    previous request's, so encoding the body does not walk the whole conversation either. A step's
    cost does not grow with the conversation (but for joining the body's bytes).
    """
    view = model_view(entries)
    if not view:
        return []
    cell = _BUILT.get(view[0])
    built = cell[0]
    if built is not None and built.n <= len(view) and view[built.n - 1] is built.last:
        n, final = built.n, list(built.final)
    else:
        built, n, final = None, 0, []
    run: list = []  # the user entries of the message still open
    for i in range(n, len(view)):
        e = view[i]
        if isinstance(e, AssistantEntry):
            if run:
                final.append(_user_message(run))
                run = []
            final.append(_ASSISTANT.get(e))
            n = i + 1
        elif isinstance(e, UserEntry):
            run.append(e)
    messages = final + ([_user_message(run)] if run else [])
    if user_context and messages and messages[0]["role"] == "user":
        messages[0] = _with_context(messages[0], user_context)
    if not n:
        return messages
    # The lead: every final message but the last (the newest message gets the cache breakpoint:
    # with_cache_breakpoints replaces it), its JSON extended from the previous request's.
    count = len(final) - 1
    if built is not None and built.context == user_context and len(built.lead) <= count:
        have, parts = len(built.lead), built.lead_parts
    else:
        have, parts = 0, ()
    if count > have:  # (a new tuple of the same pieces and the new ones: no bytes copied)
        parts += tuple(request_json.json_parts(messages[have:count], after=have > 0))
    first = tuple(messages[:count])
    cell[0] = _Built(n, view[n - 1], tuple(final), user_context, first, parts)
    return request_json.lead(messages, first, parts)


class _Built:
    """The final messages the previous request of a transcript was built from: those of ``view[:n]``;
    and the request's lead (its messages before the last final one, the user ``context`` in the
    first) with their JSON in pieces (workflows/model/request_json.py's :class:`~workflows.model.request_json.Messages`)."""

    __slots__ = ("n", "last", "final", "context", "lead", "lead_parts")

    def __init__(self, n: int, last, final: tuple, context: str, lead: tuple, lead_parts: tuple) -> None:
        self.n, self.last, self.final = n, last, final
        self.context, self.lead, self.lead_parts = context, lead, lead_parts


#: The view's first entry -> [the _Built of the last request built from that transcript].
_BUILT: ObjectMemo[list] = ObjectMemo(lambda first: [None])
#: An assistant entry's message.
_ASSISTANT: ObjectMemo[Block] = ObjectMemo(lambda e: Block(role="assistant", content=_ENTRY_BLOCKS.get(e)))


def _user_message(run: list) -> Block:
    blocks = [b for e in run for b in _ENTRY_BLOCKS.get(e)]
    if len(blocks) > 1:
        blocks.sort(key=_results_first)
    return Block(role="user", content=tuple(blocks))


def _with_context(message: Block, user_context: str) -> Block:
    """The first user message with the user context (memory files, the date) leading it."""
    by_context = _CONTEXTS.get(message)
    if user_context not in by_context:
        by_context.clear()  # (a session's user context is fixed at its start)
        by_context[user_context] = Block(role="user", content=({"type": "text", "text": user_context},
                                                               *message["content"]))
    return by_context[user_context]


_CONTEXTS: ObjectMemo[dict] = ObjectMemo(lambda message: {})


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


#: A user or assistant entry's content as API blocks (read-only: shared by every request built from it,
#: each keeping its JSON text once encoded: workflows/model/request_json.py).
_ENTRY_BLOCKS: ObjectMemo[tuple[dict, ...]] = ObjectMemo(lambda e: tuple(Block(b) for b in _blocks(e.message.content)))


def system_blocks(rec: SessionRecord) -> list[dict]:
    """The session's ``system`` blocks (a new list of shared, read-only dicts)."""
    style = rec.output_style and (rec.output_style.name, rec.output_style.prompt)
    return list(_system_blocks(rec.custom_system_prompt, rec.append_system_prompt, rec.system_context, style))


@lru_cache(maxsize=256)
def _system_blocks(custom: str | None, append: str | None, system_context: str,
                   style: tuple[str, str] | None = None) -> tuple[dict, ...]:
    # Keyed by the inputs' content (every worker computes the same blocks from the same record).
    from workflows.context.files import DEFAULT_SYSTEM_PROMPT, system_prompt
    from workflows.styles import styled

    custom, system_context = styled(custom, DEFAULT_SYSTEM_PROMPT, system_context, style)
    return tuple(Block(b) for b in system_prompt(custom, append, system_context))


@lru_cache(maxsize=256)
def _tool_schemas(names: tuple[str, ...], agents: tuple = ()) -> tuple[dict, ...]:
    # Task's description lists the session's agent types (``agents``: workflows.tools.task.agents_key).
    return tuple(Block(task_schema(agents) if b["name"] == "Task" else b) for b in tool_schemas(list(names)))


@lru_cache(maxsize=64)
def _structured_schema(schema_json: str) -> dict:
    # Keyed by the schema's JSON (the record's dict is not hashable); the schema is sent as given.
    return Block(structured.tool_definition(json.loads(schema_json)))


def _session_schemas(rec: SessionRecord) -> list[dict]:
    names = session_tools(rec)
    if rec.json_schema is None:
        return list(_tool_schemas(tuple(names), agents_key(rec.agents)))
    own = _tool_schemas(tuple(names[:-1]), agents_key(rec.agents))
    return [*own, _structured_schema(json.dumps(rec.json_schema))]


def with_cache_breakpoints(request: dict) -> dict:
    """Mark the system prompt, the tool list and the newest message as cacheable prefixes.

    The marked blocks are copies put in their place (the originals are shared caches); the
    system and tool lists are replaced, and so is the newest message (by a plain dict).
    """
    if request.get("system"):
        request["system"] = [*request["system"][:-1], _marked(request["system"][-1])]
    if request.get("tools"):
        request["tools"] = [*request["tools"][:-1], _marked(request["tools"][-1])]
    messages = request.get("messages") or []
    if messages and messages[-1]["content"]:
        last = messages[-1]
        messages[-1] = {"role": last["role"], "content": [*last["content"][:-1], _marked(last["content"][-1])]}
    return request


def _marked(block: dict) -> dict:
    return {**block, "cache_control": CACHE}


def session_tools(rec: SessionRecord) -> list[str]:
    """The tools a session's agent is offered: the core tools (TOOL_ORDER), and the memory tools with auto-memory
    on; only those ``rec.tools`` names when set (Claude Code's --tools), never one a bare deny rule names
    (``--disallowedTools Bash``: :mod:`workflows.permissions.rules.removal`); StructuredOutput last when the
    session has a ``--json-schema`` (whatever ``--tools`` says, as in Claude Code). A sub-agent (a child session)
    is never offered Task: sub-agents do not start sub-agents, as in Claude Code; Skill only with skills to invoke."""
    names = list(TOOL_ORDER) + (list(MEMORY_TOOLS) if rec.auto_memory and rec.project_id else [])
    if rec.parent_session_id or not rec.agents:
        names.remove("Task")
    if rec.parent_session_id or not rec.skill_listing:
        names.remove("Skill")  # (offered with the session's skills, as Claude Code lists them)
    names = without_denied(names if rec.tools is None else [n for n in names if n in rec.tools], rec.rules)
    return names + [structured.NAME] if rec.json_schema is not None else names


def offered_tools(rec: SessionRecord) -> list[str]:
    """Every tool name the model is offered (``system/init``'s ``tools``): the session's own, then its MCP tools."""
    from workflows.mcp.catalog import offered_names

    return session_tools(rec) + without_denied(offered_names(rec), rec.rules)


def _mcp_offered(mcp_tools: tuple[dict, ...], rec: SessionRecord) -> tuple[dict, ...]:
    if not mcp_tools or not rec.rules.deny:
        return mcp_tools
    kept = set(without_denied([t["name"] for t in mcp_tools], rec.rules))
    return tuple(t for t in mcp_tools if t["name"] in kept)


def build_request(rec: SessionRecord, entries: list, max_tokens: int, mcp_tools: tuple[dict, ...] = ()) -> dict:
    """The keyword arguments of ``client.messages.stream`` for the session's next call.

    ``mcp_tools``: the definitions of the session's MCP tools (``workflows.mcp.catalog.tool_schemas``),
    offered after its own tools.
    """
    return with_cache_breakpoints({
        "model": rec.sent_model(),
        "max_tokens": max_tokens,
        "system": system_blocks(rec),
        "tools": [*_session_schemas(rec), *_mcp_offered(mcp_tools, rec)],
        "messages": request_messages(entries, rec.model_context()),
    })
