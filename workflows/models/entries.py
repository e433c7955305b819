"""Transcript entries: a discriminated union on ``type``, each carrying the fields Claude Code's
transcripts carry (uuid, parentUuid, sessionId, timestamp, cwd, gitBranch), and how they are stored."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field, TypeAdapter

from statemachines import State
from workflows.models import valid_text
from workflows.models.base import _Model, iso_now, new_id
from workflows.models.content import AssistantMessage, Message, Usage
from workflows.models.hook_outcome import HookOutcome

#: Cost fields whose None means "no price is known" (workflows.model.pricing); an entry keeps them when None.
_UNKNOWN_COSTS = ("cost_usd", "total_cost_usd", "memory_cost_usd")


class _Entry(_Model):
    uuid: str = Field(default_factory=new_id)
    parent_uuid: str | None = Field(default=None, alias="parentUuid")
    session_id: str = Field(alias="sessionId")
    timestamp: str = Field(default_factory=iso_now)
    cwd: str = ""
    git_branch: str | None = Field(default=None, alias="gitBranch")
    step_id: str | None = None
    # Where text that UTF-8 cannot encode (a lone surrogate) was replaced by U+FFFD when the entry was
    # stored (workflows/models/valid_text.py): ``message.content.1.input.content``.
    repaired: list[str] | None = None

    def note_repair(self, data: dict, places: list[str]) -> dict:
        data["repaired"] = valid_text.note([*(self.repaired or ()), *places])
        return data

    def dump(self) -> dict:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for name in _UNKNOWN_COSTS:  # None there means "unknown", not "absent": keep it
            if name in type(self).model_fields and getattr(self, name) is None:
                data[name] = None
        return data


class UserEntry(_Entry):
    """A user prompt, or the result of one tool call (as the API sends it: a user message)."""

    type: Literal["user"] = "user"
    message: Message
    # skill: a skill's text, after the Skill call's result (Claude Code's synthetic user message); interrupt:
    # the user's interrupt closed the turn's tool calls (Claude Code's "[Request interrupted by user for tool use]")
    origin: Literal["prompt", "tool_result", "inbox", "synthetic", "skill", "interrupt"] = "prompt"
    display: str | None = None  # a one-line summary of a tool result, for watchers
    command: str | None = None  # a custom command's prompt: the invocation as typed (``/review a.py``)
    # A tool result's structured form, as Claude Code's ``tool_use_result`` (workflows.tools.base.ToolOutput.result).
    tool_use_result: dict[str, Any] | str | None = None
    denied: bool = False  # a tool result of a call refused by a permission rule, mode, person or hook


class AssistantEntry(_Entry):
    type: Literal["assistant"] = "assistant"
    message: AssistantMessage
    cost_usd: float | None = 0.0  # None: no price is known for the model (workflows.model.pricing)
    duration_ms: int = 0


class StateEntry(_Entry):
    """The machine moved: ``trigger`` took the session from ``source`` to ``dest``."""

    type: Literal["state"] = "state"
    trigger: str
    source: State
    dest: State


class SystemEntry(_Entry):
    """A notice for the user and the record: an error, a retry, a recovered step."""

    type: Literal["system"] = "system"
    # unreadable: the marker of a stored entry that could not be read (workflows/store/entry_read.py)
    subtype: Literal["error", "info", "warning", "interrupted", "memory", "command", "unreadable", "task"] = "info"
    content: str
    # subtype "task": a sub-agent's launch or end, for stream-json's task lines (workflows/engine/background.py)
    task: dict[str, Any] | None = None
    # A memory fork's model calls: they are the session's cost too, but not a turn of it.
    usage: Usage | None = None
    cost_usd: float | None = 0.0


class PermissionRequestEntry(_Entry):
    """A tool call needs a person's decision; the session waits in ``awaiting_permission``."""

    type: Literal["permission_request"] = "permission_request"
    request_id: str
    tool_use_id: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)
    summary: str = ""
    reason: str = ""  # the rule or mode that asked
    expires_at: float | None = None
    always: list[str] = Field(default_factory=list)  # the rules "(a)lways" adds, as shown to the person
    diff: str = ""  # see PermissionRequest
    diff_note: str = ""
    kind: Literal["permission", "hook", "mcp"] = "permission"  # see PermissionRequest
    callbacks: list[str] = Field(default_factory=list)
    hook_input: dict[str, Any] | None = None
    mcp_call: dict[str, Any] | None = None


class PermissionDecisionEntry(_Entry):
    """What was decided about a tool call, by whom (user, rule, mode, timeout), and when (timestamp)."""

    type: Literal["permission_decision"] = "permission_decision"
    request_id: str | None = None
    tool_use_id: str
    tool: str
    decision: Literal["allow", "deny"]
    decided_by: Literal["user", "rule", "mode", "timeout", "hook"]
    reason: str = ""
    message: str | None = None  # what the user said with a denial
    rules_added: list[str] = Field(default_factory=list)
    decider: str | None = None  # who, beyond "user": the team server's token (``token:alice``)


class HookEntry(_Entry):
    """What an event's hooks decided, committed before Mainsail acts on it (a retried step reads it back)."""

    type: Literal["hook"] = "hook"
    event: str
    tool_use_id: str | None = None
    tool: str | None = None
    outcome: HookOutcome
    prompt_sha256: str | None = None  # UserPromptSubmit: which prompt (a blocked one is not kept anywhere)


class HookCallbackEntry(_Entry):
    """An event's hooks wait for the Agent SDK client to run its callbacks (``SessionRecord.client_hooks``)."""

    type: Literal["hook_callback"] = "hook_callback"
    request_id: str
    event: str
    callbacks: list[str] = Field(default_factory=list)
    hook_input: dict[str, Any] = Field(default_factory=dict)
    tool_use_id: str | None = None


class CompactBoundaryEntry(_Entry):
    """Everything before this entry is replaced, for the model, by the summary that follows it."""

    type: Literal["compact_boundary"] = "compact_boundary"
    trigger: Literal["auto", "manual"] = "auto"
    pre_tokens: int = 0
    source: Literal["summary_call", "session_memory"] = "summary_call"
    preserved: list[str] = Field(default_factory=list)  # uuids before the boundary the model still sees


class SummaryEntry(_Entry):
    """The summary the model receives instead of the messages before the last boundary."""

    type: Literal["summary"] = "summary"
    summary: str


class RewindEntry(_Entry):
    """A ``/rewind`` to before the user message ``to`` (workflows/engine/rewinding.py): with ``conversation``,
    the model no longer sees that message nor anything after it up to here (the transcript keeps it all);
    with ``code``, the files the session's edit tools changed since went back to their checkpoints."""

    type: Literal["rewind"] = "rewind"
    to: str  # the uuid of the user message rewound to (it and what follows are taken back)
    conversation: bool = True
    code: bool = False
    prompt: str = ""  # the text of that message, so a front door can offer it again
    restored: list[str] = Field(default_factory=list)  # files written back to their checkpoint
    deleted: list[str] = Field(default_factory=list)  # files created since, removed
    skipped: list[str] = Field(default_factory=list)  # "path: why" for files a code rewind left as they are


class ResultEntry(_Entry):
    """The end of a run (a submit until idle): what a script or a watcher needs."""

    type: Literal["result"] = "result"
    subtype: Literal[
        "success", "error_during_execution", "error_max_turns", "error_max_budget_usd",
        "error_max_structured_output_retries", "cancelled"
    ] = "success"
    is_error: bool = False
    result: str = ""
    # The object the model gave through StructuredOutput (--json-schema); ``result`` then holds its JSON.
    structured_output: dict[str, Any] | None = None
    num_turns: int = 0
    duration_ms: int = 0
    duration_api_ms: int = 0
    usage: Usage = Field(default_factory=Usage)  # the run's main loop: its model turns and compactions
    total_cost_usd: float | None = 0.0  # what ``usage`` cost (memory forks are not in it: see ``memory_*``)
    permission_denials: list[dict[str, Any]] = Field(default_factory=list)
    usage_by_model: dict[str, Usage] = Field(default_factory=dict)  # ``usage`` per model
    cost_by_model: dict[str, float | None] = Field(default_factory=dict)  # ``total_cost_usd`` per model
    # Memory forks that finished while this run went on (the run's extraction starts after this entry).
    memory_usage: Usage = Field(default_factory=Usage)
    memory_cost_usd: float | None = 0.0
    memory_saving: bool = False  # a memory fork was still running when the run ended
    # The session's totals (main loop, compactions and every memory fork) as of this entry.
    session_usage: Usage | None = None
    session_cost_usd: float | None = None
    # Why the run ended where the subtype does not say it all, in Claude Code's ``terminal_reason`` words
    # (``aborted_tools``: the user's interrupt closed its tool calls); None: the subtype's (cli/output.py).
    terminal_reason: str | None = None
    # The session's sub-agent totals as of this entry (workflows.engine.agent_stats); None: none started yet.
    subagent_stats: dict[str, Any] | None = None
    # What started the run when not a person (a background agent's notification): Claude Code's origin.
    origin: dict[str, Any] | None = None


Entry = Annotated[
    Union[UserEntry, AssistantEntry, StateEntry, SystemEntry, ResultEntry, PermissionRequestEntry,
          PermissionDecisionEntry, CompactBoundaryEntry, SummaryEntry, HookEntry, HookCallbackEntry, RewindEntry],
    Field(discriminator="type"),
]
ENTRY_ADAPTER: TypeAdapter = TypeAdapter(Entry, config=ConfigDict(defer_build=True))


def entry_json(entry: _Entry) -> str:
    """The entry as stored: the JSON of :meth:`_Entry.dump`, encoded by pydantic in one pass.

    The same keys, in the same order, and values as ``json.dumps(entry.dump(), separators=(",", ":"))``;
    only the text may differ where JSON allows (non-ASCII characters as UTF-8 instead of ``\\u``
    escapes, floats in shortest form: ``1e-5`` for ``1e-05``). A string Python can hold but UTF-8
    cannot (a lone surrogate: from the model's JSON, or a file read with ``surrogateescape``) is
    replaced by U+FFFD and the places are noted in ``repaired`` (:class:`workflows.models.valid_text.ValidJson`):
    what is stored can always be read back.
    """
    text = entry.model_dump_json(by_alias=True, exclude_none=True)
    # dump() keeps an unknown cost (None) that exclude_none dropped: appended last, as it does.
    fields = type(entry).model_fields
    kept = "".join(f',"{name}":null' for name in _UNKNOWN_COSTS
                   if name in fields and getattr(entry, name) is None)
    return text[:-1] + kept + "}" if kept else text


def parse_entry(data: str | bytes | dict) -> _Entry:
    if isinstance(data, (str, bytes)):
        return ENTRY_ADAPTER.validate_json(data)
    return ENTRY_ADAPTER.validate_python(data)
