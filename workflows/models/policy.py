"""What a session's permissions are made of: rules, the sandbox, the mode, and the questions to a person."""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import Field

from workflows.models.base import _Model, now


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
    #: as it was when the call asked (workflows.edits.preview), and a note (cut, or why no diff is shown).
    diff: str = ""
    diff_note: str = ""
    #: "permission": a person decides; "hook": the SDK client runs its PreToolUse ``callbacks`` on
    #: ``hook_input`` first (approving it from a shell skips them, denying it refuses the call); "mcp": the
    #: SDK client runs ``mcp_call`` (``server``, ``tool``, ``arguments``) on its in-process MCP server
    #: (only it can: approving it from a shell is refused, denying it refuses the call).
    kind: Literal["permission", "hook", "mcp"] = "permission"
    callbacks: list[str] = Field(default_factory=list)
    hook_input: dict[str, Any] | None = None
    mcp_call: dict[str, Any] | None = None
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
