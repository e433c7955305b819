"""Which side call a Messages API request is: a memory fork, a session title, or a session's own turn.

Each side call's system prompt begins with a mark of its own (the memory forks' prompts are in
workflows/forks/run.py, the title's in workflows/titles.py); the scripted model and the tests' fake API
tell the calls apart by it (:func:`fork_kind`).
"""

from __future__ import annotations

#: How each memory fork's system prompt begins.
SESSION_MEMORY_MARK = "You are Mainsail's session-memory agent."
EXTRACT_MARK = "You are Mainsail's memory extraction agent."
#: How the title request's system prompt begins.
TITLE_MARK = "Write a title for this coding session."


def fork_kind(body: dict) -> str | None:
    """``"session_memory"`` or ``"extract"`` for a memory fork's Messages API request, ``"title"`` for a
    session title's (workflows/titles.py), else None."""

    system = body.get("system")
    if isinstance(system, list) and system and isinstance(system[0], dict):
        system = system[0].get("text")
    if not isinstance(system, str):
        return None
    if system.startswith(SESSION_MEMORY_MARK):
        return "session_memory"
    if system.startswith(EXTRACT_MARK):
        return "extract"
    if system.startswith(TITLE_MARK):  # not a memory fork, but a side call all the same (workflows.titles)
        return "title"
    return None


__all__ = ["EXTRACT_MARK", "SESSION_MEMORY_MARK", "TITLE_MARK", "fork_kind"]
