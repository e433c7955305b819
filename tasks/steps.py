"""The step tasks: parse ids, claim, run one workflow function, commit, dispatch.

One task per row of the table of step kinds (workflows/commit/kinds.py), each a
thin shell around :func:`workflows.steps.run.run_one`; producers send them by the
table's names and never import this module. The shell also keeps count of
the steps this process runs (a stopping worker waits for them), and once the
worker is draining, sends any newly arrived message back to its queue unrun.
"""

from __future__ import annotations

import logging
import time

from tasks import runtime
from tasks.app import app
from tasks.dispatch import dispatch
from workflows.commit.kinds import STEP_KINDS, StepKindSpec
from workflows.steps.run import run_one
from workflows.store import keys

log = logging.getLogger(__name__)

#: A draining worker waits this long before sending a message back, so that it does not spin taking
#: the same message again while another worker starts.
HAND_BACK_DELAY = 0.2


#: A task runs the steps that follow its own in the same thread (no broker trip) while the worker serves
#: their queue, for at most this many steps or seconds; then what follows goes through the queue, so
#: one long session cannot hold a worker thread while others wait.
CHAIN_STEPS = 200
CHAIN_SECONDS = 20.0


def _run(sid: str, step_id: str) -> str:
    started = time.monotonic()
    result, claimed = "done", None
    for ran in range(CHAIN_STEPS):
        last = ran == CHAIN_STEPS - 1 or time.monotonic() - started > CHAIN_SECONDS
        run = runtime.enter_step(sid, step_id)
        try:
            if not run:
                return hand_back(sid, step_id, claimed)
            result, claimed = run_one(runtime.engine(), sid, step_id, dispatch, worker=runtime.worker_name(),
                                      keep=None if last else runtime.serves, claimed=claimed)
        finally:
            runtime.leave_step(sid, step_id)
        if claimed is None:
            return result
        sid, step_id = claimed[0].session_id, claimed[0].id
    return result


def hand_back(sid: str, step_id: str, claimed=None) -> str:
    """This worker is stopping: put the step's message back in its queue, unclaimed, for another worker.

    ``claimed``: the step was claimed for this worker by the commit of the step before it; the claim is
    given back first (not counted as an attempt).
    """
    time.sleep(HAND_BACK_DELAY)
    engine = runtime.engine()
    store = engine.store
    hold = engine.hold_of(claimed[1], sid, step_id) if claimed is not None else (keys.lease_member(sid, step_id), "")
    if claimed is not None:
        engine.defer_step(sid, step_id, claimed[1], 0.0, "handed back by a stopping worker")
    step = store.get_step(sid, step_id)
    if not step.finished:
        dispatch([step])
    name = runtime.worker_name()
    if name:
        store.workers.forget_hold(name, *hold)
    log.info("handed step %s of session %s back to queue %s", step_id[:8], sid[:8], step.queue)
    return "handed back"


def _task(spec: StepKindSpec):
    """The Celery task of one step kind: every kind's task is the same shell around :func:`_run`."""

    def run_step_task(sid: str, step_id: str) -> str:
        return _run(sid, step_id)

    run_step_task.__name__ = run_step_task.__qualname__ = f"run_{spec.kind.value}_step"
    run_step_task.__doc__ = spec.doc
    return app.task(name=spec.task)(run_step_task)


#: The Celery task of each step kind that is sent to a queue, by kind (registered on the app at import).
TASKS = {spec.kind: _task(spec) for spec in STEP_KINDS if spec.task is not None}
