"""The step tasks: parse ids, claim, run one workflow function, commit, dispatch.

Each is a thin shell around :func:`workflows.steps.run_step`; the names are
explicit so producers never import this module. The shell also keeps count of
the steps this process runs (a stopping worker waits for them), and once the
worker is draining, sends any newly arrived message back to its queue unrun.
"""

from __future__ import annotations

import logging
import time

from tasks import runtime
from tasks.app import app
from tasks.dispatch import dispatch
from workflows import keys
from workflows.steps import run_one

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


@app.task(name="mainsail.model.call")
def call_model(sid: str, step_id: str) -> str:
    """One model call of a session."""
    return _run(sid, step_id)


@app.task(name="mainsail.tools.run")
def run_tool(sid: str, step_id: str) -> str:
    """One tool call of a session, in the session's workspace."""
    return _run(sid, step_id)


@app.task(name="mainsail.tools.hook")
def run_hook(sid: str, step_id: str) -> str:
    """One session-level hook event of a session (UserPromptSubmit, Stop, SessionStart), in its workspace."""
    return _run(sid, step_id)


@app.task(name="mainsail.model.report")
def report_to_parent(sid: str, step_id: str) -> str:
    """A sub-agent's final answer, committed as its parent's Task result (workflows.engine.subagents)."""
    return _run(sid, step_id)


@app.task(name="mainsail.tools.mcp")
def discover_mcp(sid: str, step_id: str) -> str:
    """Connect a session's MCP servers and list their tools (on its tools queue: stdio servers run there)."""
    return _run(sid, step_id)


@app.task(name="mainsail.model.title")
def name_session(sid: str, step_id: str) -> str:
    """One session title: the small model names the session after its first turn (workflows.titles)."""
    return _run(sid, step_id)


@app.task(name="mainsail.model.compact")
def compact(sid: str, step_id: str) -> str:
    """One compaction of a session (a summary call, or its memory document)."""
    return _run(sid, step_id)


@app.task(name="mainsail.memory.session")
def update_session_memory(sid: str, step_id: str) -> str:
    """One session-memory update: a fork that edits the session's notes (in the background)."""
    return _run(sid, step_id)


@app.task(name="mainsail.memory.extract")
def extract_memories(sid: str, step_id: str) -> str:
    """One auto-memory extraction: a fork that saves durable records for the session's project."""
    return _run(sid, step_id)
