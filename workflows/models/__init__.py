"""Pydantic models for everything Mainsail stores or sends, one module a concern:

- :mod:`~workflows.models.content`: content blocks and messages in the Anthropic Messages API shape,
  and token usage;
- :mod:`~workflows.models.entries`: transcript entries, a discriminated union on ``type``, each carrying
  the fields Claude Code's transcripts carry (uuid, parentUuid, sessionId, timestamp, cwd, gitBranch);
- :mod:`~workflows.models.steps`: the step records of the ledger and the turn's tool calls;
- :mod:`~workflows.models.policy`: permission rules, mode and requests, and the sandbox settings;
- :mod:`~workflows.models.session`: the session record and options, and sub-agent types;
- :mod:`~workflows.models.api_tokens`: the record of a team server's API token and its scopes;
- :mod:`~workflows.models.base`: the base class, ids and timestamps.

Every name is importable from here (``from workflows.models import SessionRecord``).
"""

from workflows.models.api_tokens import TokenRecord
from workflows.models.base import iso_now, new_id, now
from workflows.models.content import (
    AssistantMessage,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    MediaSource,
    Message,
    ResultContent,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from workflows.models.entries import (
    ENTRY_ADAPTER,
    AssistantEntry,
    CompactBoundaryEntry,
    Entry,
    HookCallbackEntry,
    HookEntry,
    PermissionDecisionEntry,
    PermissionRequestEntry,
    ResultEntry,
    RewindEntry,
    StateEntry,
    SummaryEntry,
    SystemEntry,
    UserEntry,
    _Entry,
    entry_json,
    parse_entry,
)
from workflows.models.policy import PermissionMode, PermissionRequest, RequestStatus, RuleSet, RuleSpec, SandboxSettings
from workflows.models.session import (
    COST_KINDS,
    AgentDefinition,
    OutputStyle,
    PathText,
    Plugin,
    SessionRecord,
    StructuredRun,
)
from workflows.models.steps import (
    BACKGROUND_HOOK_EVENTS,
    BACKGROUND_KINDS,
    StepKind,
    StepRecord,
    StepStatus,
    ToolCall,
    ToolCallStatus,
)


def build_schemas() -> int:
    """Build now every record model's pydantic schema that waits for its first use (``defer_build``: a command
    that reads one record builds only that one). A worker calls it before it forks its children, so no step
    pays for it. Returns how many were built."""
    from pydantic import BaseModel

    built, todo = 0, list(BaseModel.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("workflows.") and not cls.__pydantic_complete__:
            cls.model_rebuild()
            built += 1
    ENTRY_ADAPTER.rebuild()
    return built


__all__ = [
    "build_schemas", "AgentDefinition", "OutputStyle", "Plugin", "AssistantEntry", "AssistantMessage", "BACKGROUND_HOOK_EVENTS", "BACKGROUND_KINDS",
    "COST_KINDS", "CompactBoundaryEntry", "ContentBlock", "DocumentBlock", "ENTRY_ADAPTER", "Entry", "HookCallbackEntry", "HookEntry",
    "ImageBlock", "MediaSource", "Message", "PathText", "PermissionDecisionEntry", "PermissionMode",
    "PermissionRequest", "PermissionRequestEntry", "RequestStatus", "ResultContent", "ResultEntry", "RewindEntry",
    "RuleSet", "RuleSpec", "SandboxSettings", "SessionRecord", "StateEntry", "StepKind", "StructuredRun",
    "StepRecord", "StepStatus", "SummaryEntry", "SystemEntry", "TextBlock", "ThinkingBlock", "TokenRecord", "ToolCall",
    "ToolCallStatus", "ToolResultBlock", "ToolUseBlock", "Usage", "UserEntry", "_Entry", "entry_json", "iso_now",
    "new_id", "now", "parse_entry",
]
