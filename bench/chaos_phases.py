"""Where a chaos run's recovery time goes (bench/chaos.py): per step a killed worker held, the kill, then

- **found dead**: a reaper's recorded verdict on the killed worker (``mainsail:workers:events``);
- **taken back**: the step no longer under the dead worker's claim (pending again, or another's; only
  steps it had claimed, not messages it had taken from a queue);
- **claimed**: the step running under another worker's claim (the re-dispatch and its pickup);
- **committed**: its result recorded (the step's own run: a model call made again, or a command);

and per killed process of a supervisor (``--processes`` above 1): the kill, then its replacement's
registration (a process name not registered before), the fork and the replacement's start.

A thread polls each watched step every 20 ms (a few ``GET`` per poll; the run's own load is far larger),
so each phase is known to ~20 ms.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from workflows.exceptions import StepNotFound
from workflows.store.resilience import RedisError

POLL_SECONDS = 0.02


@dataclass
class Watched:
    kill_at: float
    sid: str
    step_id: str
    token: str  # the dead worker's claim token ('' when it held a message it had not claimed)
    taken: float | None = None
    claimed: float | None = None
    committed: float | None = None


@dataclass
class Phases:
    """What the watch saw (seconds after each kill)."""

    taken: list[float] = field(default_factory=list)
    claimed: list[float] = field(default_factory=list)
    committed: list[float] = field(default_factory=list)
    run: list[float] = field(default_factory=list)  # claimed -> committed (the step itself)
    replaced: list[float] = field(default_factory=list)  # kill -> a replacement process registered


class PhaseWatch:
    """Polls the steps each kill left behind, and the registry for replacements (see the module docstring)."""

    def __init__(self, store, replacements: bool) -> None:
        self.store = store
        self.replacements = replacements
        self.steps: list[Watched] = []
        self.kills: list[tuple[float, set[str]]] = []  # (kill time, names registered then)
        self.replaced: list[float] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-phases", daemon=True)
        self._thread.start()

    def watch(self, kill_at: float, held: dict[str, str], registered: set[str]) -> None:
        with self._lock:
            for member, token in held.items():
                sid, step_id = member.split("/", 1)
                self.steps.append(Watched(kill_at, sid, step_id, token or ""))
            if self.replacements:
                self.kills.append((kill_at, registered))

    def registered(self) -> set[str]:
        try:
            return {n.decode() for n in self.store.r.zrangebyscore("mainsail:workers", time.time(), "+inf")}
        except RedisError:
            return set()

    def stop(self) -> Phases:
        self._stop.set()
        self._thread.join(5)
        out = Phases(replaced=list(self.replaced))
        for w in self.steps:
            if w.committed is None:
                continue
            out.committed.append(w.committed - w.kill_at)
            if w.taken is not None:
                out.taken.append(w.taken - w.kill_at)
            if w.claimed is not None:
                out.claimed.append(w.claimed - w.kill_at)
                out.run.append(w.committed - w.claimed)
        return out

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            with self._lock:
                open_steps = [w for w in self.steps if w.committed is None]
                kills = list(self.kills)
            for w in open_steps:
                self._poll(w)
            if kills:
                names = self.registered()
                for at, before in kills:
                    if names - before:  # the first process registered since this kill replaced it
                        self.replaced.append(time.time() - at)
                        with self._lock:
                            self.kills.remove((at, before))
                        break

    def _poll(self, w: Watched) -> None:
        try:
            step = self.store.get_step(w.sid, w.step_id)
        except (RedisError, StepNotFound):
            return
        now = time.time()
        if step.finished:
            w.committed = step.updated_at if step.updated_at > w.kill_at else now
            w.taken = w.taken or (w.committed if w.token else None)
            w.claimed = w.claimed or w.committed
            return
        mine = bool(w.token) and step.owner == w.token
        if w.taken is None and w.token and not mine:  # (a message taken but not claimed has no claim to lose)
            w.taken = now
        if w.claimed is None and not mine and step.status.value == "running" and step.owner:
            w.claimed = now
