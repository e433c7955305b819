"""The scripted model's scripts: the turns it answers with, as pydantic models (a script file is their JSON).

The choice of turn is stateless: turn ``i`` answers a request whose ``messages`` hold ``i`` assistant
messages (:func:`turn_index`), so a retried request gets the same turn again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: What the model answers once its script has no turn left.
FINISHED_TEXT = "(script finished)"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class ToolUse(BaseModel):
    """One ``tool_use`` block of a scripted turn."""

    model_config = ConfigDict(extra="forbid")

    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class ScriptError(BaseModel):
    """An error response served before the turn succeeds."""

    model_config = ConfigDict(extra="forbid")

    status: int
    retry_after: float | None = None
    type: str | None = None  # default from status: 529 overloaded_error, 429 rate_limit_error, ...
    message: str | None = None

    @property
    def error_type(self) -> str:
        if self.type:
            return self.type
        return _ERROR_TYPES.get(self.status, "api_error" if self.status >= 500 else "invalid_request_error")


class Turn(BaseModel):
    """One scripted assistant message."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_uses: list[ToolUse] = Field(default_factory=list)
    # Content blocks sent as they are, before the text: the server tools' blocks (``server_tool_use``,
    # ``web_search_tool_result``) of a reply to a request with the web search tool.
    server_blocks: list[dict] = Field(default_factory=list)
    stop_reason: str | None = None  # default: "tool_use" if tool_uses else "end_turn"
    usage: ScriptUsage | None = None  # default: estimated from the request's size
    delay_seconds: float = Field(default=0.0, ge=0)  # before the response headers
    stream_delay_seconds: float = Field(default=0.0, ge=0)  # between SSE events
    errors: list[ScriptError] = Field(default_factory=list)

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_uses else "end_turn"


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turns: list[Turn] = Field(default_factory=list)
    # The memory forks' turns (chosen the same way, by their own assistant messages).
    # None: the default fork behaviour (:func:`default_fork_turn`).
    session_memory: list[Turn] | None = None
    extract: list[Turn] | None = None
    # The session title's answer (workflows/titles.py); None: the first prompt, as the title it replaces.
    title: list[Turn] | None = None

    @classmethod
    def from_file(cls, path: str | Path) -> Script:
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))


TurnFunction = Callable[[dict], Turn]


def turn_index(body: dict) -> int:
    """Which turn answers a Messages API request: how many assistant messages it holds."""
    return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant")


__all__ = ["FINISHED_TEXT", "Script", "ScriptError", "ScriptUsage", "ToolUse", "Turn", "TurnFunction", "turn_index"]
