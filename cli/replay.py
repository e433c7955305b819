"""Replaying a recorded session for a person: ``mainsail show``, ``watch`` (before it follows) and the
recap a resumed session prints.

The live render shows a sub-agent's tool calls under its Task call as they happen; a replay does the
same from the record: right after a Task call's line come the lines of the child session that ran it
(its tool calls and their results, its end), then the call's result. ``compact`` keeps what a person
needs to pick a conversation up again, as Claude Code's resume shows it: the prompts, the model's
text, the tool lines and their results (no state changes, decisions, memory notes or cost lines).
"""

from __future__ import annotations

from statemachines import State
from workflows.models import AssistantEntry, UserEntry
from workflows.store.redis_store import Store


def replay(store: Store, sid: str, renderer, entries=None, *, compact: bool = False,
           finished_only: bool = False) -> set[str]:
    """Render ``entries`` (default: the session's whole transcript) with each Task call's sub-agent nested
    under it. ``finished_only``: nest only sub-agents whose run is over (a follower goes on with the others
    from their start). Returns the ids of the sub-agents shown."""
    rec = store.get_session(sid)
    children = {c.parent_tool_use_id: c for c in store.get_sessions(rec.children) if c.parent_tool_use_id}
    shown: set[str] = set()

    def nest(tool_use_id: str) -> None:
        child = children.get(tool_use_id)
        if child is None or (finished_only and child.state is not State.IDLE):
            return
        shown.add(child.id)
        renderer.link_child(child.id, tool_use_id)
        for e in store.entries(child.id):
            renderer.child_entry(child.id, e)

    renderer.nest = nest
    renderer.nested = True
    try:
        for e in store.entries(sid) if entries is None else entries:
            if compact and not isinstance(e, (UserEntry, AssistantEntry)):
                continue
            renderer.entry(e)
    finally:
        renderer.nest = None
        renderer.nested = False
    return shown


__all__ = ["replay"]
