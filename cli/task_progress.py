"""A sub-agent's ``task_progress`` lines, read off its committed replies (Claude Code 2.1.332's shape).

Claude Code sends one for each tool call of a sub-agent's reply, just before that call's line: what the agent
does now (the tool's activity, as Claude Code's status row words it: "Running ls", "Reading a.txt"), its tokens
(the reply's), its tool calls so far and its run time. Mainsail reads them off the agent's own transcript, as
it reads every other line: one committed reply, its lines once each time a client follows the session (a
worker that died before its commit left no reply; one that died after it left one, never two). The notice is
:func:`workflows.engine.background.progress`'s and the line :func:`~workflows.engine.background.task_lines`'s,
as for a launch and an end.
"""

from __future__ import annotations

from datetime import datetime

from cli.shown import shown_path
from workflows.engine.background import progress
from workflows.models import AssistantEntry

#: Claude Code's width for a command or a pattern in an activity (longer: cut, with an ellipsis).
WIDTH = 50

#: A tool -> (its activity with the input's value, the input's key, its activity without one).
ACTIVITIES = {
    "Read": ("Reading {}", "file_path", "Reading file"),
    "Write": ("Writing {}", "file_path", "Writing file"),
    "Edit": ("Editing {}", "file_path", "Editing file"),
    "MultiEdit": ("Editing {}", "file_path", "Editing file"),
    "NotebookEdit": ("Editing notebook {}", "notebook_path", "Editing notebook"),
    "Glob": ("Finding {}", "pattern", "Finding files"),
    "Grep": ("Searching for {}", "pattern", "Searching"),
    "WebFetch": ("Fetching {}", "url", "Fetching web page"),
    "WebSearch": ("Searching for {}", "query", "Searching the web"),
}


def cut(text: str, width: int = WIDTH) -> str:
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def activity(name: str, tool_input: dict, cwd: str, fallback: str) -> str:
    """What a tool call does, in Claude Code's words; ``fallback`` (the task's description) for other tools."""
    if name == "Bash":
        command = tool_input.get("command")
        return f"Running {tool_input.get('description') or cut(str(command))}" if command else "Running command"
    if name not in ACTIVITIES:
        return fallback
    said, key, bare = ACTIVITIES[name]
    value = tool_input.get(key)
    if not isinstance(value, str) or not value:
        return bare
    return said.format(shown_path(value, cwd) if key.endswith("_path") else cut(value))


def _ms(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000


class TaskProgress:
    """The progress notices of the sub-agents a stream follows, from their entries in order."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}  # sub-agent -> its first entry's time (ms)
        self.calls: dict[str, int] = {}  # sub-agent -> its tool calls so far

    def notices(self, child: str, e, call: str | None, task: dict) -> list[dict]:
        """The notices of entry ``e`` of sub-agent ``child`` (run by Task call ``call`` with input ``task``):
        one a tool call of a reply, in its order."""
        self.started.setdefault(child, _ms(e.timestamp))
        if not isinstance(e, AssistantEntry):
            return []
        u = e.message.usage
        tokens = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens + u.output_tokens
        out = []
        for tu in e.message.tool_uses():
            self.calls[child] = self.calls.get(child, 0) + 1
            usage = {"total_tokens": tokens, "tool_uses": self.calls[child],
                     "duration_ms": max(0, int(_ms(e.timestamp) - self.started[child]))}
            out.append(progress(child, call, activity(tu.name, tu.input, e.cwd, str(task.get("description") or "")),
                                task.get("subagent_type"), usage, tu.name))
        return out
