"""The reaper: taking back dead workers' steps, sweeping.

Every worker runs a :class:`~tasks.housekeeper.Housekeeper` once its Celery consumer is up: a
:class:`~tasks.liveness.Beacon` that keeps its registration fresh, and a
:class:`Reaper` that, every tick (:data:`TICK_SECONDS`):

- finds workers whose registration expired (they died without unregistering) and,
  once it has stayed expired for ``worker_dead_confirm_seconds`` (a live worker starved
  of CPU refreshes late: its model calls must not be made twice), takes back every
  step each one held (:func:`reap_dead`): a step it had
  claimed goes to another worker (or, for a mutating command, is recorded as of
  unknown outcome), a message it had taken but not claimed is sent again. One
  reaper handles a given dead worker; each step is fenced by the owner token of
  its claim and dispatched as soon as it is taken back;
- after a worker died, Redis restarted (its run id changed) or this worker lost
  Redis for a while, sends again every pending step whose message is nowhere
  (:func:`resend_orphans`): a message popped from a queue just as its worker died
  or its connection broke is in no queue and no worker's held steps;
- every ``reaper_interval_seconds``, sweeps leases and pickup deadlines that
  passed (the last resort, :func:`sweep_once`): a running step whose live worker
  still holds it keeps its lease (:func:`spare_live_leases`; its model call is
  alive, and must not be made twice), any other is taken back; sends pending steps whose message
  is nowhere (whatever lost it, e.g. a command killed between its commit and its
  dispatch), denies permission requests whose approval timeout passed (the
  deadline lives in Redis, ``mainsail:approvals``, so it holds across restarts of
  every process), sends the notifications a dead process left in the outbox
  (:func:`tasks.notify.sweep`), and runs the retention gc.

Steps the reaper sends go to the front of their queues (:func:`~tasks.dispatch.dispatch_first`).

Nothing holds a lock across a whole sweep: a reaper killed mid-sweep delays
nothing for more than a few seconds.
"""

from __future__ import annotations

import ast
import json
import logging
import threading
import time

from tasks import runtime
from tasks.app import app
from tasks.dispatch import dispatch, dispatch_first
from tasks.liveness import Health, Tether, Verdicts, Watch, note_stalled
from tasks.notify_send import sweep as notify_sweep
from tasks.routes import queue_key
from workflows.engine import Engine, display_worker
from workflows.models import StepRecord, StepStatus
from workflows.store import keys
from workflows.store.housekeeping import retention_due, retention_gc
from workflows.store.leases import keeper_for
from workflows.store.registry import hold_value
from workflows.store.resilience import LockError, RedisError, ResponseError

log = logging.getLogger(__name__)

#: How the reaper sends a step it took back: to the front of its queue (it already waited its turn).


def resend(steps) -> None:
    """Send steps taken back (from a dead worker, a passed deadline, a lost message) to the front of their
    queues, counting them by kind (``mainsail_steps_retaken_total``)."""
    from workflows.store.metrics import TALLY

    for step in steps:
        TALLY.add("mainsail_steps_retaken_total", kind=step.kind.value)
    dispatch_first(steps)

#: How long a sweep or a dead worker's take-back may hold its lock before another reaper may start it.
SWEEP_LOCK_SECONDS = 10.0
#: A periodic sweep sends a pending step whose message is nowhere once it has been pending this long.
ORPHAN_AGE_SECONDS = 3.0
#: How often a reaper checks whether Redis restarted (its run id changed).
RESTART_CHECK_SECONDS = 1.0
#: A reaper's tick (at most; half the heartbeat if that is shorter): each tick it looks for dead workers, and
#: one reaper per tick lists Redis's clients. A dead worker is found within a tick: at the 0.25 s of half a
#: heartbeat, the tick was most of the time from a kill to the take-back (bench/README.md, "chaos.py").
TICK_SECONDS = 0.1


def sweep_once(engine: Engine, stalled: frozenset[str] = frozenset()) -> int:
    """Re-dispatch steps whose lease or pickup deadline passed, and expire approvals. Returns how many.

    Each step is fenced under its session's lock and sent as soon as it is taken back; the sweep lock
    only keeps reapers from doing the same work twice, and is broken as soon as its holder is found dead.
    ``stalled``: workers whose registration lapsed while their connection stays open (alive: see
    :func:`spare_live_leases`).
    """
    lk = engine.store.sweep_lock(SWEEP_LOCK_SECONDS)
    if lk is None:
        return 0
    try:
        spare_live_leases(engine, stalled=stalled)
        steps = engine.reap(dispatch=resend)
        approvals = engine.expire_approvals()
        dispatch(approvals)
        orphans = resend_orphans(engine, "sweep", older_than=ORPHAN_AGE_SECONDS)
        return len(steps) + len(approvals) + orphans + notify_sweep(engine)
    finally:
        try:
            lk.release()
        except LockError:
            pass


def spare_live_leases(engine: Engine, now: float | None = None, stalled: frozenset[str] = frozenset()) -> int:
    """Renew the expired leases of steps still running on a live worker. Returns how many.

    A live worker's lease never expires: if its lease keeper could not renew it in time (the process
    starved of CPU, Redis slow to answer), the step's model call is still alive, and sending the step
    again would call the model twice. A step is spared when a worker whose registration is live lists
    it among its held steps with the owner token of the step's claim (so does one in ``stalled``, whose
    registration lapsed while its connection stays open: starved of CPU, or stopped); the steps of a dead worker are
    taken back by :func:`reap_dead`, and a step its worker no longer runs is dropped from its held
    steps by :func:`drop_stale_holds`, after which its lease expires as any other.
    """
    store = engine.store
    now = time.time() if now is None else now
    due = store.lapsed_leases(now)
    if not due:
        return 0
    held: dict[str, str] = {}
    for name in {*store.workers.live(), *stalled}:
        held.update((member, token) for member, token in store.workers.held(name).items() if token)
    members = [m for m in due if m in held]
    if not members:
        return 0
    steps = store.steps_at([keys.parse_lease_member(m) for m in members])
    live = [step for member, step in zip(members, steps)
            if step is not None and step.status is StepStatus.RUNNING and step.owner == held[member]]
    store.extend_deadlines(live, now + engine.settings.lease_seconds)
    spared = len(live)
    if spared:
        log.warning("renewed the expired leases of %d step(s) still running on live workers (their lease "
                    "keeper fell behind)", spared)
    return spared


def drop_stale_holds(engine: Engine, name: str, running: set[str], suspects: set[tuple[str, str]],
                     ) -> set[tuple[str, str]]:
    """Drop from worker ``name``'s held steps the claims this process no longer runs.

    ``running``: the owner tokens of the claims its steps run now (the lease keeper's). A held step
    claimed under another token is a suspect; one still held and still a suspect at the next call
    (``suspects``: what the previous call returned) is dropped, so that a step whose run ended without
    leaving (a crash in the task) gets its lease expired and is sent again, not spared forever.
    Returns the suspects for the next call.
    """
    holds = {(member, token): field for field, member, token in engine.store.workers.holds(name)}
    now = {(member, token) for member, token in holds if token and token not in running}
    for member, token in now & suspects:
        field = holds[(member, token)]
        engine.store.workers.forget_hold(name, field, hold_value(field, member, token))
    return now - suspects


def reap_dead(engine: Engine, me: str | None = None, seen: dict[str, float] | None = None,
              confirm: float = 0.0, watch: Watch | None = None, lost_after: float = 0.0) -> int:
    """Take back the steps of every worker that died without unregistering. Returns how many steps.

    A worker whose connection closed (``watch``: see :mod:`tasks.liveness`) is taken back at once. One
    whose registration expired is taken back once it has stayed so for ``confirm`` seconds (``seen``, the
    caller's, kept across calls: when each was first found so), or, if its connection stays open (starved
    of CPU, stopped, or on a lost host), for ``lost_after`` seconds: a live worker's model calls must not
    be made a second time while the first ones are still alive.
    """
    workers = engine.store.workers
    me = me or "reaper"
    found = watch.look() if watch else Verdicts(lapsed=[n for n in workers.dead() if n != me])
    total = sum(take_back_worker(engine, name, me, how="connection closed") for name in found.gone)
    due = found.lapsed
    if seen is not None:
        now = time.monotonic()
        for name in set(seen) - set(found.lapsed) - set(found.stalled):
            del seen[name]  # registered again: alive after all
        for name in found.stalled:
            if name not in seen:
                note_stalled(workers, name, me, lost_after)
        for name in found.lapsed + found.stalled:
            seen.setdefault(name, now)
        due = ([n for n in found.lapsed if now - seen[n] >= confirm]
               + [n for n in found.stalled if now - seen[n] >= lost_after])
    for name in due:
        how = ("registration expired" if name in found.lapsed else
               f"registration expired for {lost_after:g}s while its connection stays open: a lost host?")
        total += take_back_worker(engine, name, me, how=how)
        if seen is not None:
            seen.pop(name, None)
    return total


def take_back_worker(engine: Engine, dead: str, reaper: str, verb: str = "died", how: str | None = None) -> int:
    """Take back what worker ``dead`` held (see :meth:`Engine.take_back`), then forget it.

    ``how``: why it is dead, recorded in ``workers:events`` (``connection closed``: its registration, still
    live, goes now; otherwise a registration renewed meanwhile means it is alive after all). Its sweep
    lock, if it held it, is broken.
    """
    workers = engine.store.workers
    if not workers.start_reaping(dead, reaper, SWEEP_LOCK_SECONDS):
        return 0  # another reaper is on it
    if how == "connection closed":
        workers.retire(dead)
    elif workers.alive(dead):
        return 0  # it registered again meanwhile: alive after all
    if how:
        workers.record(dead, "dead", how=how, reaper=reaper)
        log.warning("worker %s %s (%s)", display_worker(dead), verb, how)
    workers.break_sweep_lock(dead)
    held = workers.held(dead)
    sent, failed = [], False
    for member, token in held.items():
        sid, step_id = keys.parse_lease_member(member)
        try:
            steps = engine.take_back(dead, sid, step_id, token)
            resend(steps)
        except Exception:
            failed = True  # the dead worker stays listed: the next pass tries this step again
            log.exception("taking back step %s of dead worker %s failed", member, dead)
            continue
        sent += steps
    if not failed:
        workers.drop(dead)
    if held:
        log.warning("worker %s %s holding %d step(s); %d sent to other workers", display_worker(dead), verb,
                    len(held), len(sent))
    return len(sent) + resend_orphans(engine, f"worker {display_worker(dead)} {verb}", older_than=1.0,
                                      besides={s.id for s in sent})


def redis_restarted(engine: Engine) -> bool:
    """True for the one reaper that first sees Redis's run id change (a restart, e.g. from its AOF)."""
    run_id = engine.store.server_info("server").get("run_id")
    if not run_id:
        return False
    previous = engine.store.swap_run_id(run_id)
    return previous is not None and previous != run_id


def resend_orphans(engine: Engine, why: str, older_than: float = 0.0, besides: set[str] = frozenset()) -> int:
    """Send again every pending step whose message is nowhere: in no queue, taken by no live worker.

    Such a message was lost on its way: popped from its queue by a worker that died (or lost Redis)
    before it could record it, or delivered to a dead worker's prefetch. Without this its step would
    wait for its pickup deadline. A step taken a moment ago by a live worker that has not recorded it
    yet gets a duplicate message, which is a no-op at claim. ``older_than``: only steps pending for
    that long (a step committed a moment ago may not be dispatched yet); ``besides``: step ids just
    sent. Returns how many were sent.
    """
    cutoff = time.time() - older_than
    steps = [s for s in orphaned_steps(engine.store) if s.updated_at <= cutoff and s.id not in besides]
    resend(steps)
    if steps:
        log.warning("%s: sent %d pending step(s) whose message was lost", why, len(steps))
    return len(steps)


def pending_steps(store, batch: int = 500) -> list[StepRecord]:
    """Every step of every session waiting for a worker (each has a deadline in ``steps:leases``)."""
    return [step for step in store.steps_at(store.lease_members(), batch)
            if step is not None and step.status is StepStatus.PENDING]


def orphaned_steps(store) -> list[StepRecord]:
    """Pending steps whose message is in no queue and in no live worker's held steps."""
    pending = pending_steps(store)
    if not pending:
        return []
    held: set[str] = set()
    for name in store.workers.live():
        held.update(store.workers.held(name))
    queues = sorted({s.queue for s in pending})
    queued = {_step_of(raw) for rows in store.queue_contents([queue_key(q) for q in queues]) for raw in rows}
    return [s for s in pending if keys.lease_member(s.session_id, s.id) not in held and s.id not in queued]


def _step_of(raw: bytes) -> str | None:
    """The step id a queued Celery message is for (its args are ``[sid, step_id]``)."""
    try:
        args = ast.literal_eval(json.loads(raw)["headers"]["argsrepr"])
        return str(args[1])
    except (ValueError, KeyError, IndexError, TypeError, SyntaxError):
        return None


@app.task(name="mainsail.reaper.sweep")
def sweep() -> int:
    """One sweep, for operators (`mainsail reap`) and schedulers."""
    engine = runtime.engine()
    return reap_dead(engine, runtime.worker_name()) + sweep_once(engine)


def start_retention(engine: Engine, owner: str) -> threading.Thread | None:
    """Start the retention gc (MAINSAIL_RETENTION_DAYS) on a thread of its own when it is due: at most
    once an hour across every worker (a Redis key), and never delaying this worker's registration."""
    if not engine.settings.retention_days or not retention_due(engine.store, owner):
        return None

    def run() -> None:
        try:
            retention_gc(engine)
        except Exception:  # the next try is an hour later; it must not stop the worker
            log.exception("retention gc failed")

    thread = threading.Thread(target=run, name="mainsail-retention", daemon=True)
    thread.start()
    return thread


class Reaper(threading.Thread):
    """This worker's share of the reaping (see the module docstring), until stopped."""

    def __init__(self, engine: Engine, name: str, health: Health, check_restarts: bool = True,
                 tether: Tether | None = None) -> None:
        super().__init__(name="mainsail-reaper", daemon=True)
        self.engine = engine
        self.worker_name = name
        self.health = health
        self.check_restarts = check_restarts
        self.tick = tick = min(engine.settings.worker_heartbeat_seconds / 2, TICK_SECONDS)
        self.watch = Watch(engine.store.workers, name, tether, tick,
                           fallback=engine.settings.worker_ttl_seconds + engine.settings.worker_dead_confirm_seconds)
        self._stop_event = threading.Event()

    def run(self) -> None:
        s = self.engine.settings
        last_sweep = last_check = time.monotonic()
        recoveries = self.health.recoveries
        failing = False
        suspects: set[tuple[str, str]] = set()
        lapsed: dict[str, float] = {}  # workers found without their registration, and since when
        check_restarts = self.check_restarts
        while not self._stop_event.wait(self.tick):
            try:
                if check_restarts and time.monotonic() - last_check >= RESTART_CHECK_SECONDS:
                    last_check = time.monotonic()
                    try:
                        if redis_restarted(self.engine):
                            resend_orphans(self.engine, "Redis restarted")
                    except ResponseError:  # a server without INFO (the in-process fakeredis) never restarts
                        check_restarts = False
                if self.health.recoveries != recoveries and self.health.steady_for() > 0:
                    recoveries = self.health.recoveries
                    resend_orphans(self.engine, "Redis answers again")
                # After an outage every registration may have lapsed: wait until live workers renewed theirs.
                if self.health.steady_for() >= max(3 * s.worker_heartbeat_seconds, 1.0):
                    reap_dead(self.engine, self.worker_name, lapsed, s.worker_dead_confirm_seconds, self.watch,
                              s.worker_lost_seconds)
                if time.monotonic() - last_sweep >= s.reaper_interval_seconds:
                    last_sweep = time.monotonic()
                    suspects = drop_stale_holds(self.engine, self.worker_name, keeper_for(self.engine).owners(),
                                                suspects)
                    n = sweep_once(self.engine, self.watch.stalled)
                    if n:
                        log.warning("reaper re-dispatched %d step(s): lease or pickup deadline passed, message "
                                    "lost, or approval timed out", n)
                    start_retention(self.engine, self.worker_name)
                failing = False
            except RedisError as exc:
                if not failing:
                    log.warning("reaper cannot reach Redis (%s); retrying", f"{type(exc).__name__}: {exc}"[:200])
                failing = True
            except Exception:
                log.exception("reaper failed; retrying")

    def stop(self) -> None:
        self._stop_event.set()
