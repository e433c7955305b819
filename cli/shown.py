"""A path as Claude Code shows it (the terminal's tool lines, the stream's task_progress descriptions): a
module of its own so that what prints no transcript (``-p``, the stream-json server) loads no renderer."""

from __future__ import annotations


def shown_path(path: str, cwd: str) -> str:
    """``path`` as Claude Code shows it: relative to ``cwd`` when it is inside it, else as given."""
    if not cwd or not path.startswith("/"):
        return path
    base = cwd.rstrip("/") or "/"
    if path == base:
        return "."
    if path.startswith(base + "/" if base != "/" else "/"):
        return path[len(base):].lstrip("/") or "."
    return path
