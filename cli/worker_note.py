"""Saying when a session is working but no live worker consumes its queue (``watch``, ``show``,
``sessions``).

A session in ``querying``, ``running_tools``, ``compacting`` or ``extracting`` goes on only while a
worker takes its steps: after Ctrl-C on a ``run`` whose worker was its own, nothing may. The
workers' registrations (refreshed by each worker's beacon, :mod:`tasks.liveness`; expired ones are
the reaper's dead) tell which queues a live worker serves; a session whose unfinished steps wait on
another queue is said to wait, with the command that starts a worker for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from statemachines import State

if TYPE_CHECKING:  # (the lean reading path passes views of its own: cli/lean_read.py)
    from workflows.models import SessionRecord

#: States in which a session waits for a worker (``awaiting_permission`` waits for a person).
WORKING = (State.QUERYING, State.RUNNING_TOOLS, State.COMPACTING, State.EXTRACTING)
#: The queues ``mainsail worker`` serves without ``-Q``.
DEFAULT_QUEUES = ("model", "tools", "memory")


def unserved_queues(store, rec: SessionRecord, live: set[str] | None = None) -> list[str]:
    """The queues ``rec``'s unfinished steps wait on that no live worker serves; [] when it is not working.

    ``live``: the served queues when already read (``store.live_queues()``), for a table of sessions.
    """
    if rec.state not in WORKING:
        return []
    steps = [s for s in store.steps(rec.id) if not s.finished and (s.background or s.epoch == rec.epoch)]
    if not steps:
        return []
    served = store.live_queues() if live is None else live
    return sorted({s.queue for s in steps} - served)


def start_command(queues: list[str]) -> str:
    """``mainsail worker``, with ``-Q`` when a queue is not one it serves by default (a per-host one)."""
    if all(q in DEFAULT_QUEUES for q in queues):
        return "mainsail worker"
    return f"mainsail worker -Q {','.join(sorted(set(DEFAULT_QUEUES) | set(queues)))}"


def unserved_note(store, rec: SessionRecord, live: set[str] | None = None, *, watching: bool = False) -> str | None:
    """One sentence when ``rec`` is working and no live worker consumes its queue; None otherwise.

    ``watching``: said by a ``watch`` that runs no worker (``MAINSAIL_EMBEDDED_WORKER=false``)."""
    missing = unserved_queues(store, rec, live)
    if not missing:
        return None
    queues = ", ".join(missing)
    also = ("MAINSAIL_EMBEDDED_WORKER=false, so this watch runs none" if watching
            else f"or `mainsail watch {rec.id[:8]}`, which runs one while it watches")
    return (f"Session {rec.id[:8]} is {rec.state.value} but no live worker consumes its "
            f"queue{'s' if len(missing) > 1 else ''} {queues}: nothing happens until one runs. Start one: "
            f"`{start_command(missing)}` ({also}).")
