"""A tool result past its tool's limit, saved in the workspace: the model gets a preview and the path.

Bash, Grep, Glob and MCP results over their limits (README "Tools") are written whole to
``.mainsail/tool-results/<tool_use_id>.txt``, which Read can open. A tool keeps at most
:data:`SAVED_RESULT_CAP` characters of its output (a command printing without end must not hold a
worker's memory); past that, the note says exactly what the file holds, as Claude Code's does past its
persist limit ("only the first ... were saved"). Saving can fail (a full disk, a read-only workspace):
the call then ends at once with an error result naming the path and the reason, never a step left to
its lease.
"""

from __future__ import annotations

import contextlib
import os
import re

from workflows.tools.base import ToolOutput

SAVED_RESULT_CAP = 20_000_000  # characters a tool may return before its own truncation applies
PREVIEW_CHARS = 2_000
RESULTS_DIR = os.path.join(".mainsail", "tool-results")


def save_large_result(workspace: str, tool_use_id: str, tool: str, output: ToolOutput, limit: int,
                      cap: int = SAVED_RESULT_CAP) -> ToolOutput:
    """Save a result past ``limit`` characters in the workspace; the model gets a preview and the path.

    The folder ignores itself (a ``.gitignore`` of ``*``), so it never shows in git status; it lives in the
    workspace, so any tools worker that serves the session can Read it. When it cannot be written, the
    result is an error with the preview and the reason. ``cap``: the characters the tool could keep (its
    ``max_output_chars``), named when the tool cut its output there.
    """
    folder = os.path.join(workspace, RESULTS_DIR)
    path = os.path.join(folder, re.sub(r"[^A-Za-z0-9_-]", "_", tool_use_id) + ".txt")
    text = output.content
    size = f"{len(text):,} characters in {text.count(chr(10)) + 1:,} lines"
    preview = text[:PREVIEW_CHARS]
    try:
        _write(folder, path, text)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        note = (f"\n\n... [{tool} output too large ({size}, over the {limit:,}-character limit), and it could not "
                f"be saved to {path}: {reason}. Only this preview is shown. Free space on the workspace's disk, "
                "or run it again with less output (a narrower command, path or pattern).]")
        return ToolOutput(content=preview + note, is_error=True,
                          display=f"{tool} output ({len(text):,} chars) could not be saved: {reason}")
    if output.truncated:
        kept = (f"Its output exceeded the {cap:,}-character save limit: only its first {cap:,} characters "
                f"(and the note of how much more was dropped) were saved to {path}")
        shown = f"first {cap:,} chars saved, the rest dropped"
    else:
        kept = f"The full output is saved at {path}"
        shown = f"full output saved: {len(text):,} chars"
    note = (f"\n\n... [{tool} output too large: {size}, over the {limit:,}-character limit. {kept}; "
            "read the rest with Read (file_path, offset, limit) or search it with Grep.]")
    return ToolOutput(content=preview + note, is_error=output.is_error, result=output.result,
                      display=(output.display or f"{tool} output") + f" ({shown})")


def _write(folder: str, path: str, text: str) -> None:
    """Write ``text`` at ``path`` (and the folder's ``.gitignore``); a partly written file is removed."""
    os.makedirs(folder, exist_ok=True)
    ignore = os.path.join(folder, ".gitignore")
    if not os.path.exists(ignore):
        with open(ignore, "w") as f:
            f.write("*\n")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
