"""A worker's liveness: a named Redis connection, and a registration refreshed every ``worker_heartbeat_seconds``.

The :class:`Tether` holds one connection of its own, named after the worker (``CLIENT SETNAME
mainsail-worker:{name}``) and blocked on a read, for as long as the process lives. A process that dies
(SIGKILL, OOM, a crash) closes it: the :class:`Watch` of every reaper sees that in Redis's client list
(``CLIENT LIST``) within one tick, with no TTL to wait out. A process starved of CPU or stopped (SIGSTOP)
keeps its connection open, so it is never taken for dead while it lasts, however late its registration.
A lost host's connections do not close: a worker whose registration lapsed while its connection stays
open is taken for a lost host only after ``worker_lost_seconds``. Where the client list is refused
(an ACL without ``+client|list``) or does not show this worker's own connection (a proxy), reapers fall
back to the registration's TTL, and say so once.

The :class:`Beacon` runs on a thread and a Redis client of its own (with short
socket timeouts), so no step, sweep or lock wait of the worker can delay it: if
the registration expires, the worker really stopped, or lost Redis.

:class:`Health` remembers since when this process has reached Redis without an
error. After a Redis outage (or a restart from the AOF) every registration may
have expired while its worker lived on; a reaper declares workers dead only once
it has itself been connected for three heartbeats (at least a second), by which
time every live worker has registered again.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field

from workflows.engine import display_worker
from workflows.mcp.pool import running as mcp_running
from workflows.settings import Settings
from workflows.store.registry import TETHER_PREFIX, Workers
from workflows.store.resilience import RedisError, ResponseError

log = logging.getLogger(__name__)


class Health:
    """Since when this process has reached Redis continuously (monotonic clock), and how many times
    it has come back after losing it (``recoveries``)."""

    def __init__(self) -> None:
        self._since: float | None = None
        self._lost = False
        self.recoveries = 0
        self._lock = threading.Lock()

    def ok(self) -> None:
        with self._lock:
            if self._since is None:
                self._since = time.monotonic()
                if self._lost:
                    self.recoveries += 1
                    self._lost = False

    def failed(self) -> None:
        with self._lock:
            self._since = None
            self._lost = True

    def steady_for(self) -> float:
        """Seconds of unbroken contact with Redis (0 while it is unreachable)."""
        with self._lock:
            return 0.0 if self._since is None else time.monotonic() - self._since


def registration_info(settings: Settings) -> dict[str, str]:
    """What a worker says about itself: pid, host, and whether it can call the model (never the key)."""
    return {"pid": str(os.getpid()), "host": socket.gethostname(),
            "api_key": "yes" if settings.anthropic_api_key else "no",
            "base_url": settings.anthropic_base_url or ""}


class Beacon(threading.Thread):
    """Keeps worker ``name``'s registration fresh until stopped.

    Args:
        workers: the registry, on a client of the beacon's own (short timeouts).
        name: the worker's registry name.
        queues: the queues it serves.
        settings: ``worker_heartbeat_seconds`` and ``worker_ttl_seconds``, and the credentials it reports.
        health: told of every success and failure.
    """

    def __init__(self, workers: Workers, name: str, queues: list[str], settings: Settings, health: Health,
                 tether: "Tether | None" = None) -> None:
        super().__init__(name="mainsail-beacon", daemon=True)
        self.workers = workers
        self.worker_name = name
        self.queues = list(queues)
        self.every = settings.worker_heartbeat_seconds
        self.ttl = settings.worker_ttl_seconds
        self.info = registration_info(settings)
        self.health = health
        self.tether = tether
        self._stop_event = threading.Event()
        self._failing = False
        self._last_ok: float | None = None

    def beat(self) -> bool:
        """Register once now; False if Redis refused."""
        try:
            # The connection is named only while it is open: a reaper then reads "gone" as dead.
            tethered = self.tether is not None and self.tether.connected.is_set()
            info = {**self.info, "mcp_servers": str(mcp_running())}
            if tethered:
                info["tether"] = self.tether.client_name
            self.workers.register(self.worker_name, self.queues, self.ttl, info)
            now = time.monotonic()
            if self._last_ok is not None and not self._failing and now - self._last_ok > self.ttl * 0.6:
                log.warning("worker %s refreshed its registration %.1fs after the last time (it expires after "
                            "%gs): this process is starved of CPU", self.worker_name, now - self._last_ok, self.ttl)
            self._last_ok = now
        except (RedisError, OSError) as exc:
            self.health.failed()
            if not self._failing:
                log.warning("worker %s cannot refresh its registration (%s); retrying every %gs",
                            self.worker_name, f"{type(exc).__name__}: {exc}".splitlines()[0][:200], self.every)
            self._failing = True
            return False
        self.health.ok()
        if self._failing:
            log.warning("worker %s reaches Redis again", self.worker_name)
        self._failing = False
        return True

    def run(self) -> None:
        while not self._stop_event.wait(self.every):
            self.beat()

    def stop(self) -> None:
        self._stop_event.set()


class Tether(threading.Thread):
    """Worker ``name``'s named connection (see the module docstring): ``connected`` is set while it is open.

    Args:
        own: the registry on a client of its own, whose connections are named ``client_name`` as they connect.
        name: the worker's registry name.
    """

    #: How long one wait lasts (the client's socket timeout must exceed it).
    BLOCK_SECONDS = 30

    def __init__(self, own: Workers, name: str) -> None:
        super().__init__(name="mainsail-tether", daemon=True)
        self.own = own
        self.worker_name = name
        self.client_name = tether_name(name)
        self.connected = threading.Event()
        self.settled = threading.Event()  # connected once, or refused
        self._stop_event = threading.Event()

    def run(self) -> None:
        delay = 0.0
        while not self._stop_event.is_set():
            try:
                self.own.hold_tether(self.worker_name, 0.001)  # connects, and names the connection
                self.connected.set()
                self.settled.set()
                delay = 0.0
                while not self._stop_event.is_set():
                    self.own.hold_tether(self.worker_name, self.BLOCK_SECONDS)
            except ResponseError as exc:  # an ACL refusing CLIENT SETNAME, or a proxy without it
                log.warning("worker %s cannot name its Redis connection (%s): the reapers find it dead only "
                            "once its registration expires; allow CLIENT SETNAME to its Redis user",
                            self.worker_name, str(exc).splitlines()[0][:200])
                break
            except (RedisError, OSError):
                self.connected.clear()
                self._stop_event.wait(delay)  # at once the first time: the connection is back within a tick
                delay = min(max(delay * 2, 0.05), 1.0)
        self.connected.clear()
        self.settled.set()
        self.own.close()

    def stop(self, workers: Workers) -> None:
        """Close the connection (after the worker left the registry: its close then means nothing)."""
        self._stop_event.set()
        if self.connected.is_set():
            try:
                workers.wake_tether(self.worker_name)
            except (RedisError, OSError):
                pass


def note_stalled(workers: Workers, name: str, me: str, lost_after: float) -> None:
    """Say (log and ``workers:events``) that worker ``name``'s registration lapsed while its connection lives."""
    workers.record(name, "stalled", reaper=me)
    log.warning("worker %s did not refresh its registration but its Redis connection is open (starved of CPU, "
                "or stopped): its steps stay with it; after %gs it is taken for a lost host", display_worker(name),
                lost_after)


def tether_name(name: str) -> str:
    """The client name of worker ``name``'s connection."""
    return TETHER_PREFIX + name


@dataclass
class Verdicts:
    """One tick's findings on the registered workers (never this reaper's own)."""

    gone: list[str] = field(default_factory=list)  # its connection closed: dead now
    lapsed: list[str] = field(default_factory=list)  # registration expired, no connection seen: dead once confirmed
    stalled: list[str] = field(default_factory=list)  # registration expired, connection open: starved, stopped or lost


class Watch:
    """What one reaper sees of the workers' connections, tick after tick (see the module docstring).

    Args:
        workers: the registry.
        me: this reaper's worker name.
        tether: this worker's own connection; without one (or until it connects) only the TTL decides.
        tick: seconds between two looks (one reaper lists the clients per tick, unless some registration lapsed).
        fallback: how long the TTL path takes to find a dead worker (for the log line saying it is in use).
    """

    #: A connection found missing is looked for again this much later (a connection broken under a live
    #: worker is back by then) before its worker is declared dead.
    RECHECK_SECONDS = 0.05
    #: After the client list was refused or did not show our own connection, try it again this much later.
    RETRY_SECONDS = 60.0

    def __init__(self, workers: Workers, me: str, tether: Tether | None, tick: float, fallback: float) -> None:
        self.workers = workers
        self.fallback = fallback
        self.me = me
        self.tether = tether
        self.tick = tick
        self._blind_until = 0.0
        self._blind_said = False
        #: The workers found stalled at the last look (their steps' leases are spared: they are alive).
        self.stalled: frozenset[str] = frozenset()

    def look(self) -> Verdicts:
        """This tick's verdicts."""
        found = self._look()
        self.stalled = frozenset(found.stalled)
        return found

    def _look(self) -> Verdicts:
        lapsed = [n for n in self.workers.dead() if n != self.me]
        if self.tether is None or not self.tether.connected.is_set() or time.monotonic() < self._blind_until:
            return Verdicts(lapsed=lapsed)
        if not (lapsed or self.workers.watch_turn(self.me, self.tick * 0.9)):
            return Verdicts()  # another reaper lists the connections this tick
        tethers = self.workers.tethers()
        tethers.pop(self.me, None)
        if not (tethers or lapsed):
            return Verdicts()
        listed = self.connections()
        if listed is None:
            return Verdicts(lapsed=lapsed)
        gone = [n for n, t in tethers.items() if t not in listed]
        if gone:
            time.sleep(self.RECHECK_SECONDS)
            again = self.connections()
            gone = [] if again is None else [n for n in gone if tethers[n] not in again]
        # A lapsed worker that never named a connection is left to the TTL (confirmed).
        stalled = [n for n in lapsed if n in tethers and n not in gone]
        return Verdicts(gone=gone, lapsed=[n for n in lapsed if n not in tethers], stalled=stalled)

    def connections(self) -> set[str] | None:
        """The workers' connection names Redis lists; None when they cannot be trusted (then the TTL decides)."""
        try:
            listed = self.workers.connected()
        except ResponseError as exc:
            return self._blind(f"Redis refused CLIENT LIST ({str(exc).splitlines()[0][:120]}); allow it to the "
                               "workers' Redis user (+client|list)")
        if self.tether.client_name not in listed:
            if not self.tether.connected.is_set():
                return None  # our own connection is reconnecting: nothing to conclude this tick
            return self._blind("Redis's client list does not show this worker's own connection (a proxy between "
                               "the workers and Redis?)")
        if self._blind_said:
            log.warning("worker %s sees the workers' connections again: a dead worker is found at once", self.me)
            self._blind_said = False
        return listed

    def _blind(self, why: str) -> None:
        if not self._blind_said:
            log.warning("%s: a dead worker is found only once its registration expires (about %gs later); "
                        "trying again every %gs", why, self.fallback, self.RETRY_SECONDS)
            self._blind_said = True
        self._blind_until = time.monotonic() + self.RETRY_SECONDS
        return None
