"""What memory forks share: a fork's checkpointed state, the conversation shown to it as text, and the
limits on what it is shown and what its tools may return (:mod:`workflows.forks.run` runs the loop)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from workflows.exceptions import ToolInputError
from workflows.memory.records import MemoryRecord
from workflows.models import AssistantEntry, ToolResultBlock, Usage, UserEntry
from workflows.models.valid_text import ValidJson
from workflows.tools import ToolOutput, get_tool

FORK_MAX_TOKENS = 8192
TRANSCRIPT_MAX_CHARS = 60_000  # the newest part of the conversation a fork is shown
RESULT_PREVIEW_CHARS = 600
FORK_TOOL_OUTPUT_CHARS = 20_000


class ForkState(ValidJson):
    """A fork's progress: what its checkpoint holds."""

    messages: list[dict[str, Any]]
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    api_ms: int = 0
    finished: bool = False
    # session memory
    doc: str | None = None
    edits: int = 0
    # extraction
    puts: dict[str, MemoryRecord] = Field(default_factory=dict)
    deletes: list[str] = Field(default_factory=list)
    start_cursor: str | None = None
    until: str | None = None  # the newest transcript entry the fork was shown
    denied: list[str] = Field(default_factory=list)

# =========================================================================== transcript as text


def render_conversation(entries: list, max_chars: int = TRANSCRIPT_MAX_CHARS) -> str:
    """User and assistant messages as plain text, tool calls and results abridged; the newest kept."""
    names: dict[str, str] = {}
    parts: list[str] = []
    for e in entries:
        if isinstance(e, AssistantEntry):
            text = e.message.text().strip()
            if text:
                parts.append(f"Assistant: {text}")
            for tu in e.message.tool_uses():
                names[tu.id] = tu.name
                try:
                    shown = get_tool(tu.name).summary(tu.input if isinstance(tu.input, dict) else {})
                except ToolInputError:
                    shown = ""
                parts.append(f"Assistant called {tu.name}({shown[:200]})")
        elif isinstance(e, UserEntry):
            content = e.message.content
            if isinstance(content, str):
                parts.append(f"User: {content.strip()}")
                continue
            for b in content:
                if isinstance(b, ToolResultBlock):
                    body = b.text  # an image or a PDF is named, not pasted
                    if len(body) > RESULT_PREVIEW_CHARS:
                        body = body[:RESULT_PREVIEW_CHARS] + f" [... {len(body) - RESULT_PREVIEW_CHARS:,} more chars]"
                    tag = "error" if b.is_error else "result"
                    parts.append(f"{names.get(b.tool_use_id, 'Tool')} {tag}: {body}")
                elif getattr(b, "text", None):
                    parts.append(f"User: {b.text.strip()}")
    text = "\n\n".join(parts)
    if len(text) > max_chars:
        text = "[... earlier messages omitted ...]\n\n" + text[-max_chars:]
    return text


def after(entries: list, uuid: str | None) -> list:
    if uuid is None:
        return entries
    for i, e in enumerate(entries):
        if e.uuid == uuid:
            return entries[i + 1:]
    return entries  # not found (compacted away, or a fork of another session): show them all


def denied(text: str) -> ToolOutput:
    return ToolOutput(content=text, is_error=True, display=text[:120])
