"""The fence of a mutating command: it starts only while its step is this worker's, and dies before anyone
may record its outcome as unknown.

A step's claim can be taken back while its command runs: its worker died, or froze (SIGSTOP, a paused
container) long enough for its lease to lapse. The reaper then records the call's outcome as unknown and
the model may well run it again, so the first run must not go on (nor start) after that. A frozen worker
cannot stop its own command, so the command runs under a guard (:mod:`workflows.shells.guard`), its own
process, which holds a deadline the worker keeps pushing forward while it renews the step's lease:

- **start**: the guard waits for the first deadline, which the worker writes only after :meth:`go` passed
  the fence in Redis (``GO`` in workflows/store/fenced.py: the step still running, ours, of the session's
  epoch, its lease not lapsed, no reaper taking our worker's steps back) and extended the lease; a worker
  frozen between that and the write sends a deadline already past, and the guard refuses it.
- **run**: each deadline is the last lease renewal's local start (``time.monotonic()`` before the renewal
  was sent) plus the lease, less :func:`margin`; Redis's lease (set after that instant) outlasts it by at
  least the margin, which covers clock skew between hosts. A reaper records the outcome as unknown only
  once the lease has lapsed (the sweep), or after it has killed the guard itself on the same host
  (workflows/engine/ledger.py): the command is dead by then either way.
"""

from __future__ import annotations

import time

from workflows.store.leases import keeper_for

#: The margin by which a step's lease outlasts its command's deadline is at most this many seconds.
MARGIN_MAX = 5.0


def margin(lease_seconds: float) -> float:
    """How long before its step's lease may lapse a command is killed (a quarter of the lease, at most 5 s)."""
    return min(MARGIN_MAX, lease_seconds / 4)


class CommandFence:
    """The fence of one mutating tool step's command (see the module docstring); ``ctx.fence`` of its tool."""

    def __init__(self, engine, sid: str, step_id: str, owner: str, worker: str | None) -> None:
        self.engine = engine
        self.sid, self.step_id, self.owner, self.worker = sid, step_id, owner, worker
        self.lease_seconds = engine.settings.lease_seconds
        self.margin = margin(self.lease_seconds)
        self._passed_at: float | None = None

    @property
    def tag(self) -> str:
        """What names the command's guard on this host (its claim's owner token)."""
        return self.owner

    def go(self) -> float | None:
        """Pass the fence: the first deadline (a ``time.monotonic()`` value), or None when the command must not start."""
        started = time.monotonic()
        now = time.time()
        ok = self.engine.store.pass_fence(self.sid, self.step_id, self.owner, self.worker, now, self.margin,
                                          now + self.lease_seconds)
        if not ok:
            return None
        self._passed_at = started
        return self.deadline()

    def deadline(self) -> float:
        """The command's deadline now: from the latest of the fence and the lease keeper's last renewal."""
        lease = keeper_for(self.engine).lease_of(self.sid, self.step_id, self.owner)
        renewed = max(self._passed_at or 0.0, lease.renewed_at if lease is not None else 0.0)
        return renewed + self.lease_seconds - self.margin


__all__ = ["CommandFence", "MARGIN_MAX", "margin"]
