"""One lease keeper per process: a single thread renews the lease of every step the process runs.

A step's lease (``steps:leases``) says how long its claim holds without news. Starting a thread per
step to renew it cost a thread start per step and, with hundreds of steps running, hundreds of
threads each waking every second. Instead every running step registers with its process's
:class:`LeaseKeeper` (:meth:`LeaseKeeper.hold`), which, on one thread:

- checks each held step about once every ``CHECK_SECONDS`` and sets the step's ``cancel`` event as
  soon as the step is no longer ours (its epoch moved on, someone else claimed it, it was superseded,
  its session was removed), so a running command stops within about a second;
- renews a step's lease every ``heartbeat_interval`` (a third of the lease by default).

Both go through the engine: ``engine.heartbeat_many(items)`` when the engine has it (one round trip
for the whole batch), else ``engine.heartbeat`` step by step. The thread starts with the first held
step and ends once nothing has been held for ``IDLE_SECONDS``, so a process (or a test) that runs no
step has none.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

#: How often each held step is checked: a cancel stops it within about this long.
CHECK_SECONDS = 1.0
#: The keeper's thread wakes this often, and checks the steps whose turn has come (spreading the load).
WAKE_SECONDS = 0.25
#: The thread ends after this long with nothing held (the next held step starts another).
IDLE_SECONDS = 5.0


@dataclass(eq=False)
class Lease:
    """One held step: what the keeper renews, and the event it sets when the step is no longer ours."""

    sid: str
    step_id: str
    owner: str
    cancel: threading.Event
    renewed_at: float = field(default_factory=time.monotonic)  # the claim set the lease
    next_check: float = 0.0


class LeaseKeeper:
    """Renews the leases of the steps this process runs, on one thread (see the module docstring)."""

    def __init__(self, engine, check_seconds: float = CHECK_SECONDS, wake_seconds: float = WAKE_SECONDS,
                 idle_seconds: float = IDLE_SECONDS) -> None:
        self._engine = weakref.ref(engine)  # the registry of keepers must not keep a test's engine alive
        self.check_seconds = check_seconds
        self.wake_seconds = min(wake_seconds, check_seconds)
        self.idle_seconds = idle_seconds
        self._leases: dict[tuple[str, str, str], Lease] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._failing = False

    @property
    def engine(self):
        return self._engine()

    # ------------------------------------------------------------------ held steps

    def hold(self, sid: str, step_id: str, owner: str, cancel: threading.Event) -> Lease:
        """Keep step ``step_id``'s lease (claimed by ``owner``) until :meth:`release`."""
        lease = Lease(sid, step_id, owner, cancel)
        lease.next_check = lease.renewed_at + self.check_seconds
        with self._lock:
            self._leases[(sid, step_id, owner)] = lease
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mainsail-leases", daemon=True)
                self._thread.start()
        return lease

    def release(self, lease: Lease) -> None:
        """The step ended (or was cancelled): stop renewing its lease."""
        with self._lock:
            if self._leases.get((lease.sid, lease.step_id, lease.owner)) is lease:
                del self._leases[(lease.sid, lease.step_id, lease.owner)]

    def lease_of(self, sid: str, step_id: str, owner: str) -> Lease | None:
        """The lease of ``owner``'s claim of the step while this process holds it."""
        with self._lock:
            return self._leases.get((sid, step_id, owner))

    def owners(self) -> set[str]:
        """The owner tokens of the claims held now (what the worker's registry entry should list)."""
        with self._lock:
            return {lease.owner for lease in self._leases.values()}

    def __len__(self) -> int:
        with self._lock:
            return len(self._leases)

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        idle_since = None
        while True:
            time.sleep(self.wake_seconds)
            with self._lock:
                if not self._leases:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since >= self.idle_seconds:
                        self._thread = None
                        return
                    continue
                idle_since = None
                now = time.monotonic()
                due = [lease for lease in self._leases.values() if lease.next_check <= now]
            if due:
                self.tick(due, now)

    def tick(self, due: list[Lease], now: float | None = None) -> None:
        """Check ``due`` (renewing the leases that need it); set the cancel of each step no longer ours."""
        now = time.monotonic() if now is None else now
        engine = self.engine
        if engine is None:
            return
        interval = engine.settings.heartbeat_interval
        items = [(lease, now - lease.renewed_at >= interval - self.check_seconds / 2) for lease in due]
        try:
            answers = self._heartbeat(engine, items)
        except Exception as exc:  # Redis hiccup: try again at the next check; the lease has slack
            if not self._failing:
                log.warning("renewing the leases of %d step(s) failed (%s); retrying every %gs", len(items),
                            f"{type(exc).__name__}: {exc}".splitlines()[0][:200], self.check_seconds)
            self._failing = True
            for lease in due:
                lease.next_check = now + self.check_seconds
            return
        if self._failing:
            log.warning("lease renewals reach Redis again")
        self._failing = False
        for (lease, extended), ours in zip(items, answers):
            lease.next_check = now + self.check_seconds
            if ours is False:
                lease.cancel.set()
                self.release(lease)
            elif ours and extended:
                lease.renewed_at = now

    @staticmethod
    def _heartbeat(engine, items: list[tuple[Lease, bool]]) -> list[bool | None]:
        """One answer per item: still ours (its lease renewed when the item says so)? None: no answer
        (a Redis error after the first item; that step is checked again next time)."""
        many = getattr(engine, "heartbeat_many", None)
        if many is not None:  # one round trip for the batch (same arguments as ``heartbeat``, one tuple each)
            return list(many([(lease.sid, lease.step_id, lease.owner, extend) for lease, extend in items]))
        out: list[bool | None] = []
        for lease, extend in items:
            try:
                out.append(engine.heartbeat(lease.sid, lease.step_id, lease.owner, extend=extend))
            except Exception:
                if not out:
                    raise  # the first one failed: Redis is out; the whole tick is retried
                out.append(None)
        return out


_keepers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_keepers_lock = threading.Lock()


def keeper_for(engine) -> LeaseKeeper:
    """The lease keeper of ``engine``: one per engine, so one per worker process (a
    :class:`~workflows.store.resilience.ResilientEngine` shares its inner engine's)."""
    from workflows.store.resilience import ResilientEngine

    if isinstance(engine, ResilientEngine):
        engine = engine._engine
    with _keepers_lock:
        keeper = _keepers.get(engine)
        if keeper is None:
            keeper = _keepers[engine] = LeaseKeeper(engine)
        return keeper
