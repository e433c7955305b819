"""The names sub-agents go by on screen: their Task call's description, unique within a session.

Two Task calls of one session may carry the same description (the same prompt twice, say): a watcher
could not tell their lines apart. :class:`TaskLabels` gives each call, in the order the calls were made,
its description, and from the second use of a description on ``description #2``, ``#3``... Every front
door (the CLI's live render, ``show``, ``watch``, a resume's recap) builds its labels the same way from
the session's transcript, so one sub-agent has one name everywhere.
"""

from __future__ import annotations

#: A label longer than this is cut (the suffix that makes it unique is kept).
MAX_LABEL = 40


class TaskLabels:
    """Task call id -> a label unique among this session's Task calls."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self._uses: dict[str, int] = {}

    def add(self, tool_use_id: str, description: object) -> str:
        """The label of call ``tool_use_id`` (given once; asking again returns the same label)."""
        if tool_use_id in self.labels:
            return self.labels[tool_use_id]
        base = " ".join(str(description or "").split()) or "sub-agent"
        taken = set(self.labels.values())
        n = self._uses.get(base, 0)
        while True:  # (a description may itself read "x #2": the next free number then)
            n += 1
            suffix = f" #{n}" if n > 1 else ""
            cut = base if len(base) + len(suffix) <= MAX_LABEL else base[:MAX_LABEL - len(suffix) - 3] + "..."
            if cut + suffix not in taken:
                break
        self._uses[base] = n
        label = self.labels[tool_use_id] = cut + suffix
        return label

    def get(self, tool_use_id: str | None) -> str | None:
        return self.labels.get(tool_use_id) if tool_use_id else None


__all__ = ["MAX_LABEL", "TaskLabels"]
