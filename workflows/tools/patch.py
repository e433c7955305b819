"""The ``structuredPatch`` of Claude Code's Edit and Write results: a change as unified-diff hunks.

Each hunk is ``{"oldStart", "oldLines", "newStart", "newLines", "lines"}`` with 3 lines of context, its
lines prefixed ``" "``, ``"-"`` or ``"+"`` (a change's removals before its additions), and
``"\\ No newline at end of file"`` after a file's last line when it has no newline: jsdiff's
``structuredPatch``, which Claude Code sends in ``tool_use_result``.
"""

from __future__ import annotations

import difflib

__all__ = ["structured_patch"]

CONTEXT = 3
NO_NEWLINE = "\\ No newline at end of file"


def _lines(text: str) -> list[str]:
    """``text``'s lines, each with its newline (the last may have none)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _shown(prefix: str, line: str) -> list[str]:
    return [prefix + line[:-1]] if line.endswith("\n") else [prefix + line, NO_NEWLINE]


def structured_patch(old: str, new: str) -> list[dict]:
    """The hunks that turn ``old`` into ``new`` (none when they are equal)."""
    a, b = _lines(old), _lines(new)
    hunks = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(CONTEXT):
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [s for line in a[i1:i2] for s in _shown(" ", line)]
                continue
            lines += [s for line in a[i1:i2] for s in _shown("-", line)]
            lines += [s for line in b[j1:j2] for s in _shown("+", line)]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        hunks.append({"oldStart": i1 + 1, "oldLines": i2 - i1, "newStart": j1 + 1, "newLines": j2 - j1,
                      "lines": lines})
    return hunks
