"""The step ledger's records (a model call, a tool run, a fork, ...) and the current turn's tool calls."""

from __future__ import annotations

import enum
from typing import Any

from pydantic import Field

from workflows.models.base import _Model, now
from workflows.models.hook_outcome import HookOutcome, HookRun


class StepKind(str, enum.Enum):
    MODEL = "model"
    TOOL = "tool"
    COMPACT = "compact"
    MEMORY = "memory"  # a session-memory update (background fork)
    EXTRACT = "extract"  # an auto-memory extraction (fork; the session waits in ``extracting``)
    HOOK = "hook"  # a session-level hook event (UserPromptSubmit, Stop, SessionStart, ...), on the tools queue
    AGENT = "agent"  # a Task call's wait for its child session: running, no lease, owned by the child
    # a background agent's (Agent run_in_background): the fence of its notification; it outlives the run
    BG_AGENT = "bg_agent"
    REPORT = "report"  # a child session's final answer, taken to its parent's Task call (workflows.engine.subagents)
    MCP = "mcp"  # connecting the session's MCP servers and listing their tools, on the tools queue
    TITLE = "title"  # the small model names the session after its first turn (workflows.titles), in the background


#: Steps that run beside the session's turn: a cancel's new epoch does not supersede them.
BACKGROUND_KINDS = frozenset({StepKind.MEMORY, StepKind.EXTRACT, StepKind.TITLE, StepKind.BG_AGENT})

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
    hook_request: str | None = None  # a hook step that joins the SDK client's answers (ClientHookRequest.id)
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in (StepStatus.DONE, StepStatus.SUPERSEDED, StepStatus.FAILED)

    @property
    def background(self) -> bool:
        return self.kind in BACKGROUND_KINDS or (self.kind is StepKind.HOOK and self.event in BACKGROUND_HOOK_EVENTS)


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
    # The tool's result (a ToolOutput's fields) held while the SDK client's PostToolUse callbacks run.
    held_output: dict[str, Any] | None = None
    # An SDK MCP server's answer to this call (its JSON-RPC ``result``: a CallToolResult), relayed by the
    # client's connection (workflows.mcp.client); the call's step, run again, turns it into the tool result.
    client_result: dict[str, Any] | None = None
    child_session_id: str | None = None  # a Task call's child session (workflows.engine.subagents)
    # A custom command's ``!`` line or ``@`` reference, run before its prompt is sent: its result goes into
    # the prompt (workflows.engine.commands), never into the transcript as a tool_result.
    prelude: bool = False
