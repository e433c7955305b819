"""A dead worker is found by its closed connection, at once; a stopped one (its connection open) is not.

Two real worker processes (``mainsail worker --processes 2``, started together): the victim, and the one
whose reaper watches it. Every assertion
reads the reaper's recorded verdicts (``mainsail:workers:events``), never a clock.
"""

from __future__ import annotations

import os
import signal

from tests.e2e.conftest import children, wait_for
from workflows.store import keys

WORKER = ("-Q", "tools", "-c", "2", "--processes", "2")


def name_of(cluster, pid: int) -> str:
    return next((n.decode() for n in cluster.store.r.zrange(keys.workers(), 0, -1)
                 if n.decode().startswith(f"mainsail-{pid}@")), None)


def verdicts(cluster, worker: str, event: str) -> list[dict]:
    return [f for _, f in cluster.store.workers.events() if f["worker"] == worker and f["event"] == event]


def test_a_stopped_worker_stays_alive_and_a_killed_one_is_dead_at_once_with_its_sweep_lock(cluster):
    supervisor = cluster.start_worker(*WORKER)
    r = cluster.store.r
    victim, _ = wait_for(lambda: (lambda k: len(k) == 2 and all(name_of(cluster, p) for p in k) and k)(
        children(supervisor.pid)), 60, what="two registered worker processes")
    name = name_of(cluster, victim)
    wait_for(lambda: r.hget(keys.worker(name), "tether"), 10, what="the victim's named connection")

    # SIGSTOP: its registration lapses, its connection stays open; the reaper notes it and keeps it.
    os.kill(victim, signal.SIGSTOP)
    try:
        wait_for(lambda: verdicts(cluster, name, "stalled"), 30, what="the reaper's verdict on the stopped worker")
        assert not r.exists(keys.worker(name))  # its registration did lapse: the old TTL path would reap it
        assert verdicts(cluster, name, "dead") == []
        assert r.zscore(keys.workers(), name) is not None
    finally:
        os.kill(victim, signal.SIGCONT)
    wait_for(lambda: r.exists(keys.worker(name)), 30, what="the resumed worker's registration")
    assert verdicts(cluster, name, "dead") == []

    # It holds the sweep lock (as a sweep of its own would) when it is SIGKILLed.
    r.set(keys.reaper_lock(), f"{name}|0123abcd", px=60_000)
    os.kill(victim, signal.SIGKILL)  # (the supervisor starts another)
    (dead,) = wait_for(lambda: verdicts(cluster, name, "dead"), 30, what="the reaper's verdict on the killed worker")
    # Found by its closed connection while its registration was still live: no TTL waited out.
    assert dead["how"] == "connection closed"
    assert r.zscore(keys.workers(), name) is None
    # Broken in the verdict's tick (a live worker's own sweep may hold it again since: not the dead one's).
    assert not (r.get(keys.reaper_lock()) or b"").decode().startswith(f"{name}|")
