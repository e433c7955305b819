"""Running one step: claim, heartbeat, execute, commit.

``run_step`` is what every Celery task calls. It is deliberately free of
Celery: it takes a ``dispatch`` callable for the steps the commit returns.
Which queue and task a step of each kind has is in the table of workflows/commit/kinds.py;
what runs it is its runner in workflows/steps/runners.py (the model call's is in
workflows/steps/model_call.py).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Callable

from workflows.commit.kinds import spec_for
from workflows.engine import UNKNOWN_OUTCOME, Engine
from workflows.exceptions import MainsailError
from workflows.models import SessionRecord, StepKind, StepRecord, new_id
from workflows.steps.runners import runner_for
from workflows.steps.step_run import StepRun
from workflows.store import keys
from workflows.store.leases import Lease, keeper_for
from workflows.store.resilience import TRANSIENT, ResilientEngine, retrying

log = logging.getLogger(__name__)

Dispatch = Callable[[list[StepRecord]], None]

def owner_token() -> str:
    """Unique per claim attempt: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"


class Heartbeat:
    """Keeps a running step's lease while it runs; sets ``cancel`` when the step is no longer ours.

    A handle on the process's one :class:`~workflows.store.leases.LeaseKeeper` thread (no thread per step).
    """

    def __init__(self, engine: Engine, step: StepRecord, owner: str, cancel: threading.Event) -> None:
        self.keeper = keeper_for(engine)
        self.step = step
        self.owner = owner
        self.cancel = cancel
        self._lease: Lease | None = None

    def start(self) -> None:
        self._lease = self.keeper.hold(self.step.session_id, self.step.id, self.owner, self.cancel)

    def stop(self) -> None:
        if self._lease is not None:
            self.keeper.release(self._lease)
            self._lease = None


def run_step(engine: Engine, sid: str, step_id: str, dispatch: Dispatch, worker: str | None = None) -> str:
    """Claim and run one step, commit its result, dispatch what follows. Returns what happened.

    ``worker``: the registered name of the worker running it. Its claim then joins the worker's held
    steps (so the reaper takes the step back at once if the worker dies), and it leaves them only once
    what follows has been dispatched. Redis errors on the way are ridden out (workflows.store.resilience).
    """
    return run_one(engine, sid, step_id, dispatch, worker)[0]


Keep = Callable[[StepRecord], bool]


Claimed = tuple[StepRecord, str, SessionRecord]  # a step claimed for this worker, its owner token, its session


def run_one(engine: Engine, sid: str, step_id: str, dispatch: Dispatch, worker: str | None = None,
            keep: Keep | None = None, claimed: Claimed | None = None) -> tuple[str, Claimed | None]:
    """:func:`run_step`, and with ``keep``: of the steps that follow, the first ``keep`` accepts is not
    dispatched: the commit of this step's outcome claims it for this worker (running, its own owner
    token and lease, among the worker's held steps, all in that one commit), and it is returned for the
    caller to run next in this thread, as ``claimed`` (no broker trip, no claim). If the worker dies
    before it runs, the reaper takes it back at once, like any step the worker held.
    """
    engine = ResilientEngine(engine)
    budget = engine.settings.redis_retry_seconds
    if claimed is not None:  # claimed for this worker by the commit of the step it follows
        step, owner, rec = claimed
    else:
        owner = owner_token()
        step, follow_ups, rec = engine.claim(sid, step_id, owner, worker)
        if step is None:
            retrying(lambda: dispatch(follow_ups), what=f"dispatch after step {step_id[:8]}", budget=budget)
            _forget(engine, worker, (keys.lease_member(sid, step_id), ""))
            return "skipped", None
    if keep is not None and worker:
        engine.keep_next(owner, keep, worker)
    cancel = threading.Event()
    beat = Heartbeat(engine, step, owner, cancel)
    beat.start()
    kept = None
    try:
        next_steps = _run_kind(engine, rec, step, owner, cancel, worker, _serves_tools(rec, step, keep, worker))
    finally:
        beat.stop()
        if keep is not None and worker:  # (also on an error: the engine forgets what it kept for us)
            kept = engine.take_kept(owner)
    if next_steps:
        retrying(lambda: dispatch(next_steps), what=f"dispatch after step {step_id[:8]}", budget=budget)
    hold = engine.hold_of(owner, sid, step_id)
    if kept is None or next_steps:  # (else the commit that claimed the next step took over its hold)
        _forget(engine, worker, hold)
    return "done", kept


def _serves_tools(rec: SessionRecord, step: StepRecord, keep: Keep | None, worker: str | None) -> bool:
    """Whether this worker would run a tool step of ``step``'s session itself, right after ``step``."""
    if keep is None or not worker or step.kind is not StepKind.MODEL:
        return False
    return keep(StepRecord(id=step.id, session_id=rec.id, kind=StepKind.TOOL, epoch=rec.epoch, queue=rec.tools_queue))


def _run_kind(engine: ResilientEngine, rec: SessionRecord, step: StepRecord, owner: str,
              cancel: threading.Event, worker: str | None = None, serves_tools: bool = False) -> list[StepRecord]:
    """Run ``step`` with its kind's runner (workflows/commit/kinds.py); the steps that follow."""
    sid = step.session_id
    spec = spec_for(step.kind)
    if not spec.for_abandoned_child and rec.parent_session_id and not engine.parent_waits(rec):
        return engine.abandon_child_step(sid, step.id, owner)  # its parent stopped waiting for it
    if spec.runner is None:
        return engine.fail_step(sid, step.id, owner, f"Step kind {step.kind.value} is not supported yet.")
    run = StepRun(engine, rec, step, owner, cancel, worker, serves_tools)
    if not spec.rerun_on_redis_error:
        return runner_for(spec)(run)
    return retrying(lambda: runner_for(spec)(run), what=f"{step.kind.value} step {step.id[:8]} (session {sid[:8]})",
                    budget=engine.settings.redis_retry_seconds)


def _forget(engine, worker: str | None, hold: tuple[str, str]) -> None:
    """The step is off this worker's hands: drop its hold (field, value) from the worker's held steps
    (best effort: the reaper copes)."""
    if not worker:
        return
    try:
        engine.store.workers.forget_hold(worker, *hold)
    except TRANSIENT as exc:
        log.warning("could not drop %s from worker %s's held steps (%s)", hold[0], worker, exc)


__all__ = ["Heartbeat", "run_step", "run_one", "owner_token", "MainsailError", "UNKNOWN_OUTCOME"]
