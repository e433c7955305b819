"""Pydantic models for everything Mainsail stores or sends.

- Content blocks and messages in the Anthropic Messages API shape.
- Transcript entries: a discriminated union on ``type``, each carrying the
  fields Claude Code's transcripts carry (uuid, parentUuid, sessionId,
  timestamp, cwd, gitBranch).
- The session record and step records of the ledger.
"""

from __future__ import annotations

import enum
import time
import uuid as _uuid
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

from statemachines import State
from workflows import valid_text
from workflows.commands.models import CommandRun
from workflows.hooks.config import HookSet
from workflows.hooks.outcome import HookOutcome, HookRun
from workflows.mcp.config import McpServer


def now() -> float:
    return time.time()


def iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    return str(_uuid.uuid4())


class _Model(valid_text.ValidJson):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# --------------------------------------------------------------------------- content


class TextBlock(_Model):
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(_Model):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class MediaSource(_Model):
    type: Literal["base64"] = "base64"
    media_type: str
    data: str


class ImageBlock(_Model):
    """An image (Read of a PNG, JPEG, GIF or WebP file: workflows.tools.media), inside a tool_result."""

    type: Literal["image"] = "image"
    source: MediaSource


class DocumentBlock(_Model):
    """A PDF (Read of a .pdf file: workflows.tools.media), inside a tool_result."""

    type: Literal["document"] = "document"
    source: MediaSource


ResultContent = Annotated[Union[TextBlock, ImageBlock, DocumentBlock], Field(discriminator="type")]


class ToolResultBlock(_Model):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[ResultContent] = ""
    is_error: bool = False

    @property
    def text(self) -> str:
        """The result's text; an image or a PDF in it is named in brackets (``[image/png]``)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text if isinstance(b, TextBlock) else f"[{b.source.media_type}]" for b in self.content)


class ThinkingBlock(_Model):
    type: Literal["thinking"] = "thinking"
    thinking: str = ""
    signature: str = ""


ContentBlock = Annotated[Union[TextBlock, ToolUseBlock, ToolResultBlock, ThinkingBlock], Field(discriminator="type")]


class Usage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )


class Message(_Model):
    role: Literal["user", "assistant"]
    content: str | list[ContentBlock]

    def blocks(self) -> list:
        if isinstance(self.content, str):
            return [TextBlock(text=self.content)]
        return list(self.content)

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.blocks() if isinstance(b, ToolUseBlock)]

    def text(self) -> str:
        return "".join(b.text for b in self.blocks() if isinstance(b, TextBlock))

    def to_api(self) -> dict:
        return self.model_dump(mode="json", include={"role", "content"}, exclude_none=True)


class AssistantMessage(Message):
    role: Literal["assistant"] = "assistant"
    id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)


# --------------------------------------------------------------------------- transcript


#: Cost fields whose None means "no price is known" (workflows.pricing); an entry keeps them when None.
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
    # stored (workflows/valid_text.py): ``message.content.1.input.content``.
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
    origin: Literal["prompt", "tool_result", "inbox", "synthetic"] = "prompt"
    display: str | None = None  # a one-line summary of a tool result, for watchers
    command: str | None = None  # a custom command's prompt: the invocation as typed (``/review a.py``)


class AssistantEntry(_Entry):
    type: Literal["assistant"] = "assistant"
    message: AssistantMessage
    cost_usd: float | None = 0.0  # None: no price is known for the model (workflows.pricing)
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
    # unreadable: the marker of a stored entry that could not be read (workflows/entry_read.py)
    subtype: Literal["error", "info", "warning", "interrupted", "memory", "command", "unreadable"] = "info"
    content: str
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
    kind: Literal["permission", "hook"] = "permission"  # see PermissionRequest
    callbacks: list[str] = Field(default_factory=list)
    hook_input: dict[str, Any] | None = None


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
        "success", "error_during_execution", "error_max_turns", "error_max_budget_usd", "cancelled"
    ] = "success"
    is_error: bool = False
    result: str = ""
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


Entry = Annotated[
    Union[UserEntry, AssistantEntry, StateEntry, SystemEntry, ResultEntry, PermissionRequestEntry,
          PermissionDecisionEntry, CompactBoundaryEntry, SummaryEntry, HookEntry, RewindEntry],
    Field(discriminator="type"),
]
ENTRY_ADAPTER: TypeAdapter = TypeAdapter(Entry)


def entry_json(entry: _Entry) -> str:
    """The entry as stored: the JSON of :meth:`_Entry.dump`, encoded by pydantic in one pass.

    The same keys, in the same order, and values as ``json.dumps(entry.dump(), separators=(",", ":"))``;
    only the text may differ where JSON allows (non-ASCII characters as UTF-8 instead of ``\\u``
    escapes, floats in shortest form: ``1e-5`` for ``1e-05``). A string Python can hold but UTF-8
    cannot (a lone surrogate: from the model's JSON, or a file read with ``surrogateescape``) is
    replaced by U+FFFD and the places are noted in ``repaired`` (:class:`workflows.valid_text.ValidJson`):
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


# --------------------------------------------------------------------------- steps


class StepKind(str, enum.Enum):
    MODEL = "model"
    TOOL = "tool"
    COMPACT = "compact"
    MEMORY = "memory"  # a session-memory update (background fork)
    EXTRACT = "extract"  # an auto-memory extraction (fork; the session waits in ``extracting``)
    HOOK = "hook"  # a session-level hook event (UserPromptSubmit, Stop, SessionStart, ...), on the tools queue
    AGENT = "agent"  # a Task call's wait for its child session: running, no lease, owned by the child
    REPORT = "report"  # a child session's final answer, taken to its parent's Task call (workflows.engine.subagents)
    MCP = "mcp"  # connecting the session's MCP servers and listing their tools, on the tools queue
    TITLE = "title"  # the small model names the session after its first turn (workflows.titles), in the background


#: Steps that run beside the session's turn: a cancel's new epoch does not supersede them.
BACKGROUND_KINDS = frozenset({StepKind.MEMORY, StepKind.EXTRACT, StepKind.TITLE})

#: Hook events whose step runs beside the session (fire-and-forget: nothing waits for its verdict).
BACKGROUND_HOOK_EVENTS = frozenset({"Notification", "SessionEnd"})


class StepStatus(str, enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    SUPERSEDED = "superseded"
    FAILED = "failed"


class StepRecord(_Model):
    id: str
    session_id: str
    kind: StepKind
    epoch: int
    status: StepStatus = StepStatus.PENDING
    attempt: int = 0
    owner: str | None = None
    worker: str | None = None  # the registered name of the worker whose claim runs it (None: not a worker's)
    lease_until: float = 0.0
    queue: str = ""
    tool_use_id: str | None = None
    event: str | None = None  # a hook step's event (HookEvent value)
    detail: str | None = None  # a background hook step's subject (Notification message, SessionEnd reason)
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in (StepStatus.DONE, StepStatus.SUPERSEDED, StepStatus.FAILED)

    @property
    def background(self) -> bool:
        return self.kind in BACKGROUND_KINDS or (self.kind is StepKind.HOOK and self.event in BACKGROUND_HOOK_EVENTS)


# --------------------------------------------------------------------------- session


class ToolCallStatus(str, enum.Enum):
    AWAITING_APPROVAL = "awaiting_approval"
    WAITING = "waiting"  # allowed; its batch has not started
    DISPATCHED = "dispatched"
    DONE = "done"  # its result is in the transcript


class ToolCall(_Model):
    """One tool_use of the current turn and where it stands."""

    tool_use_id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    batch: int = 0
    status: ToolCallStatus = ToolCallStatus.WAITING
    step_id: str | None = None
    approved_by: str | None = None  # a person approved it (it asked); the tools worker then only re-checks deny
    # Its PreToolUse hooks' verdict, once committed: a retried step acts on it instead of running them again.
    pre_hook: HookOutcome | None = None
    hooks_pending: bool = False  # PreToolUse hooks match it: its permission is decided once they ran
    client_hook_runs: list[HookRun] | None = None  # what the SDK client's PreToolUse callbacks answered
    child_session_id: str | None = None  # a Task call's child session (workflows.engine.subagents)
    # A custom command's ``!`` line or ``@`` reference, run before its prompt is sent: its result goes into
    # the prompt (workflows.engine.commands), never into the transcript as a tool_result.
    prelude: bool = False


class RuleSpec(_Model):
    """One permission rule as written (``Bash(npm test:*)``) and where it came from."""

    rule: str
    source: str = ""


class RuleSet(_Model):
    """Permission rules by kind. Stored in the session record so every worker sees the same."""

    allow: list[RuleSpec] = Field(default_factory=list)
    ask: list[RuleSpec] = Field(default_factory=list)
    deny: list[RuleSpec] = Field(default_factory=list)

    def combined(self, other: "RuleSet") -> "RuleSet":
        return RuleSet(allow=self.allow + other.allow, ask=self.ask + other.ask, deny=self.deny + other.deny)

    def add(self, kind: str, rule: str, source: str = "") -> None:
        bucket: list[RuleSpec] = getattr(self, kind)
        if not any(r.rule == rule for r in bucket):
            bucket.append(RuleSpec(rule=rule, source=source))


class SandboxSettings(_Model):
    """The OS sandbox of a session's Bash commands (the ``sandbox`` key of settings files).

    Paths are absolute, resolved when the settings files were read. Stored in the
    session record so every worker runs the session's commands under the same policy.
    """

    enabled: bool = True  # sandbox.enabled (MAINSAIL_SANDBOX=false on the worker also turns it off)
    fail_if_unavailable: bool = False  # sandbox.failIfUnavailable: no bwrap -> the Bash call fails
    excluded_commands: list[str] = Field(default_factory=list)  # sandbox.excludedCommands: run outside it
    allowed_domains: list[str] = Field(default_factory=list)  # sandbox.network.allowedDomains; ["*"]: all
    allow_unix_sockets: bool = False  # sandbox.network.allowAllUnixSockets
    allow_write: list[str] = Field(default_factory=list)  # sandbox.filesystem.allowWrite
    deny_write: list[str] = Field(default_factory=list)  # sandbox.filesystem.denyWrite
    deny_read: list[str] = Field(default_factory=list)  # sandbox.filesystem.denyRead


class RequestStatus(str, enum.Enum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    SUPERSEDED = "superseded"


class PermissionRequest(_Model):
    """One question to a person about one tool call, kept in the session record."""

    id: str
    tool_use_id: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)
    summary: str = ""
    reason: str = ""
    always: list[str] = Field(default_factory=list)  # the rules "(a)lways" adds, computed when it asked
    #: What an edit would change (Edit, MultiEdit, Write, NotebookEdit): a unified diff made from the file
    #: as it was when the call asked (workflows.edit_preview), and a note (cut, or why no diff is shown).
    diff: str = ""
    diff_note: str = ""
    #: "permission": a person decides; "hook": the SDK client runs its PreToolUse ``callbacks`` on
    #: ``hook_input`` first (approving it from a shell skips them, denying it refuses the call).
    kind: Literal["permission", "hook"] = "permission"
    callbacks: list[str] = Field(default_factory=list)
    hook_input: dict[str, Any] | None = None
    epoch: int = 0
    created_at: float = Field(default_factory=now)
    expires_at: float | None = None
    status: RequestStatus = RequestStatus.PENDING
    decided_by: str | None = None
    decided_at: float | None = None
    message: str | None = None


class PermissionMode(str, enum.Enum):
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    DONT_ASK = "dontAsk"
    BYPASS = "bypassPermissions"


#: What a model call was for, as usage and cost are broken down (``SessionRecord.usage_by_kind``).
COST_KINDS = {
    "main": "main loop",
    "compact": "compaction",
    "memory": "session memory",
    "extract": "memory extraction",
    "subagent": "sub-agents",
    "title": "session title",
    "web": "web fetch & search",  # WebFetch's small-model answer, WebSearch's search call  # child sessions' calls, rolled up when each reports (workflows.engine.subagents)
}


class AgentDefinition(_Model):
    """A sub-agent type the Task tool can start: Claude Code's agent file (``.claude/agents/NAME.md``:
    frontmatter ``name``, ``description``, ``tools``, ``model``; the body is its system prompt) or an
    ``--agents`` JSON entry."""

    name: str
    description: str
    prompt: str = ""  # its system prompt ("" for general-purpose: the session's own)
    tools: list[str] | None = None  # None: every tool the parent has (but Task)
    disallowed_tools: list[str] = Field(default_factory=list)
    model: str | None = None  # None or "inherit": the parent's model
    source: str = "built-in"  # built-in, project, user, flag (a file's path where it came from a file)


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("a path cannot hold a NUL byte (\\x00): no file name has one")
    return value


#: A path a client gives (the API's workspaces and added directories): text without a NUL byte, which
#: the operating system refuses in any path (refused here, with the field named, before the disk is asked).
PathText = Annotated[str, AfterValidator(_no_nul), Field(json_schema_extra={"pattern": "^[^\\x00]*$"})]


class SessionRecord(_Model):
    # The first three fields lead the record's JSON, in this order: the server-side scripts of the step
    # protocol (workflows/fenced.py) read them from the JSON's first bytes, without decoding the rest.
    revision: int = 0  # +1 at every commit; a commit made on an older revision is refused (optimistic)
    commit: str = ""  # the token of the commit that wrote this revision (a re-sent commit is recognised)
    epoch: int = 0  # +1 at every cancel: steps of an older epoch are superseded
    id: str
    state: State = State.IDLE
    model: str
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    workspace: str
    git_branch: str | None = None
    title: str = ""
    title_step: str | None = None  # the title step asked for after the first turn (asked once: workflows.titles)
    tools_queue: str = "tools"
    max_turns: int | None = None
    rules: RuleSet = Field(default_factory=RuleSet)  # settings files + flags at start, plus "always" answers
    home: str = ""  # the submitting user's home, for ~/ in rules
    approval_timeout_seconds: float | None = None
    #: Who answers a call that would ask: "wait" for a person (a durable request, answered at a
    #: terminal, by `mainsail approve` or by an SDK client's can_use_tool); "deny": nobody (print mode
    #: without a permission prompt tool, as Claude Code's -p): denied at once and listed in the result.
    asks: Literal["wait", "deny"] = "wait"
    #: The tools offered to the model (Claude Code's --tools); None: every tool the session may have.
    tools: list[str] | None = None
    #: The model's task list (TodoWrite), as last sent: dicts with content, status, activeForm.
    todos: list[dict[str, Any]] = Field(default_factory=list)
    permission_requests: list[PermissionRequest] = Field(default_factory=list)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)  # how its Bash commands are confined
    hooks: HookSet = Field(default_factory=HookSet)  # settings files' hooks at start, plus added ones
    # MCP servers (workflows/mcp), from the configuration at start (a resume's --mcp-config adds): each one's
    # config, status and tool names. The tool definitions are at session:{sid}:mcp:{mcp_tools_digest}.
    mcp_servers: list[McpServer] = Field(default_factory=list)
    mcp_tools_digest: str | None = None
    # Directories outside the workspace that count as inside it (--add-dir, permissions.additionalDirectories),
    # resolved physically when the session started.
    additional_directories: list[str] = Field(default_factory=list)
    # The settings files' ``env``: set for the session's tool processes (reserved names never get here).
    env: dict[str, str] = Field(default_factory=dict)
    # ANTHROPIC_DEFAULT_{OPUS,SONNET,HAIKU}_MODEL captured at start: what the aliases stand for.
    model_overrides: dict[str, str] = Field(default_factory=dict)
    fallback_model: str | None = None  # retried once with this when the model is overloaded (529)
    # The settings files (and --settings layers) that set permissions.disableBypassPermissionsMode when it
    # started: bypassPermissions stays refused for its life (workflows/permissions/bypass.py).
    bypass_disabled_by: list[str] = Field(default_factory=list)
    # The workspace was not trusted when it started (workflows/trust): its own settings that run code or widen
    # access were left out, and so are a project command file's allowed-tools (workflows/engine/commands.py).
    untrusted_workspace: bool = False
    unpriced_models: list[str] = Field(default_factory=list)  # models without a price, warned about once
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    # When its score in the ``sessions`` listing was last set: the steps of a running turn set it at most
    # every few seconds (workflows/commit/committer.py), not at each commit.
    listed_at: float = 0.0

    usage: Usage = Field(default_factory=Usage)
    usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    cost_by_model: dict[str, float | None] = Field(default_factory=dict)
    # Per kind of call (:data:`COST_KINDS`); sessions older than this field have none for earlier calls.
    usage_by_kind: dict[str, Usage] = Field(default_factory=dict)
    cost_by_kind: dict[str, float | None] = Field(default_factory=dict)
    # Every cost figure is None (unknown) once it holds a call of a model without a price.
    cost_usd: float | None = 0.0
    max_budget_usd: float | None = None
    forked_from: str | None = None
    # Sub-agents (workflows.engine.subagents): the types the Task tool offers, snapshotted at the start
    # (every worker sees the same); a child session's link to the parent's Task call; a parent's children.
    agents: dict[str, AgentDefinition] = Field(default_factory=dict)
    parent_session_id: str | None = None
    parent_tool_use_id: str | None = None
    parent_step_id: str | None = None
    agent_type: str | None = None
    children: list[str] = Field(default_factory=list)
    final_result: str | None = None  # a child's last run's result text, for its report
    final_is_error: bool = False

    # Context, computed once at the start so every worker sends the same bytes (the prompt cache holds).
    system_context: str = ""
    user_context: str = ""
    custom_system_prompt: str | None = None
    append_system_prompt: str | None = None

    # Token accounting and compaction.
    context_tokens: int = 0  # the last response's input (+ cache) and output tokens
    context_added: int = 0  # estimated tokens added since that response
    run_prompt_uuid: str | None = None
    #: Keys of the last messages submitted with one (``Engine.submit(once=...)``, e.g. a schedule's run):
    #: the same key again submits nothing, so a retried sender cannot send twice.
    submit_keys: list[str] = Field(default_factory=list)
    compact_failures: int = 0
    auto_compact_off: bool = False  # the circuit breaker tripped
    compact_trigger: str | None = None  # "auto" | "manual" while compacting
    compact_instructions: str | None = None
    api_ms: int = 0
    turns: int = 0  # model calls over the session's life

    # The current run: from a submit until the session is idle again.
    run_started_at: float = 0.0
    run_turns: int = 0
    run_api_ms: int = 0
    run_usage: Usage = Field(default_factory=Usage)  # main loop: model turns and compactions
    run_cost_usd: float | None = 0.0
    run_usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    run_cost_by_model: dict[str, float | None] = Field(default_factory=dict)
    # Memory forks that finished since the run started (still counting after its result, until the next run).
    run_memory_usage: Usage = Field(default_factory=Usage)
    run_memory_cost_usd: float | None = 0.0
    tool_calls: list[ToolCall] = Field(default_factory=list)
    current_batch: int = 0

    run_denials: list[dict[str, Any]] = Field(default_factory=list)
    last_uuid: str | None = None  # newest transcript entry, the parent of the next
    run_wrote_memory: bool = False  # the main agent saved a memory record in this run
    # Session-level hooks (workflows/hooks/session_hooks.py).
    held_prompt: str | None = None  # the run's prompt, held until its UserPromptSubmit verdict
    prompt_checked: bool = False  # the held prompt's UserPromptSubmit hooks have answered
    session_started: bool = False  # SessionStart (source ``start_source``) has run
    start_source: str = "startup"  # the next SessionStart's source: startup, resume, clear or compact
    stop_hook_active: bool = False  # a Stop hook blocked in this run: the next Stop is told so
    run_stop_blocks: int = 0  # Stop blocks in this run (capped: workflows.hooks.session_hooks)
    # A custom slash command (workflows.engine.commands): the one whose lines run before its prompt, and
    # what its frontmatter gives the run it starts (cleared when that run ends).
    command: CommandRun | None = None
    run_model: str | None = None  # the command's ``model``: the run's calls send it
    run_allow: list[RuleSpec] = Field(default_factory=list)  # the command's ``allowed-tools``

    # Session memory: the running summary kept by a background fork.
    memory_step: str | None = None  # the update running now (at most one: this is its lock)
    memory_trailing: bool = False  # another update was asked for while it ran
    memory_tokens: int | None = None  # context size when the last update was asked for
    memory_tool_calls: int = 0  # tool calls since then
    memory_updates: int = 0
    memory_covers: str | None = None  # newest entry the memory document has seen

    # Auto-memory: durable records per project, extracted after a final answer.
    auto_memory: bool = True
    project_id: str | None = None
    project_root: str | None = None
    extract_step: str | None = None  # the extraction running now (never two at once)
    extract_trailing: bool = False  # a later turn ended while it ran: one more run, over the latest
    extract_cursor: str | None = None  # newest entry an extraction (or a direct write) covered
    last_error: str | None = None

    def sent_model(self, name: str | None = None) -> str:
        """The model id the next call sends for ``name`` (default: the run's model, a custom command's, else the
        session's): aliases resolved, ``opusplan`` by the current permission mode."""
        from workflows.model_names import resolve_model

        return resolve_model(name or self.run_model or self.model, plan=self.permission_mode is PermissionMode.PLAN,
                             overrides=self.model_overrides)

    def pending_tool_calls(self) -> list[ToolCall]:
        return [c for c in self.tool_calls if c.status is not ToolCallStatus.DONE]

    def pending_requests(self) -> list[PermissionRequest]:
        return [r for r in self.permission_requests if r.status is RequestStatus.PENDING]

    def saving_memory(self) -> bool:
        """A memory fork (session-memory update or extraction) is running for this session."""
        return bool(self.memory_step or self.extract_step)

    def memory_pending(self) -> bool:
        """The memory of the work done is not committed yet: the extraction after a final answer runs
        (``extracting``), or a memory fork (extraction or session-memory update) has a step. The one
        test of it: the CLI waits for memory (``wait_for_memory``), and the API's ``until_idle`` ends
        a stream, only once this is False."""
        return self.state is State.EXTRACTING or self.saving_memory()
