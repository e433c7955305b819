"""Context assembly: what one model call sends (system prompt, tools, messages).

Messages are rebuilt from the transcript on every call, so any worker can make
the next call of any session from Redis alone.
"""

from __future__ import annotations

import platform

from workflows.models import AssistantEntry, SessionRecord, ToolResultBlock, UserEntry
from workflows.tools import tool_schemas

SYSTEM_PROMPT = """You are Mainsail, a coding agent that works in the user's workspace through tools.
Use Read, Glob and Grep to explore; Edit and Write to change files (read a file before changing it);
Bash to run commands. Keep answers short and say what you changed.

Workspace: {workspace}
Platform: {platform}"""


def system_prompt(rec: SessionRecord) -> str:
    return SYSTEM_PROMPT.format(workspace=rec.workspace, platform=platform.system().lower())


def api_messages(entries: list) -> list[dict]:
    """The Messages API ``messages`` for a transcript.

    Consecutive user entries (a prompt, or the results of one turn's tool calls)
    merge into one user message, tool_result blocks first, as the API requires.
    """
    out: list[dict] = []
    for e in entries:
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


def build_request(rec: SessionRecord, entries: list, max_tokens: int) -> dict:
    """The keyword arguments of ``client.messages.stream`` for the session's next call."""
    return {
        "model": rec.model,
        "max_tokens": max_tokens,
        "system": system_prompt(rec),
        "tools": tool_schemas(),
        "messages": api_messages(entries),
    }
