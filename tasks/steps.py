"""The step tasks: parse ids, claim, run one workflow function, commit, dispatch.

Each is a thin shell around :func:`workflows.steps.run_step`; the names are
explicit so producers never import this module.
"""

from __future__ import annotations

from tasks import runtime
from tasks.app import app
from tasks.dispatch import dispatch
from workflows.steps import run_step


@app.task(name="mainsail.model.call")
def call_model(sid: str, step_id: str) -> str:
    """One model call of a session."""
    return run_step(runtime.engine(), sid, step_id, dispatch)


@app.task(name="mainsail.tools.run")
def run_tool(sid: str, step_id: str) -> str:
    """One tool call of a session, in the session's workspace."""
    return run_step(runtime.engine(), sid, step_id, dispatch)


@app.task(name="mainsail.model.compact")
def compact(sid: str, step_id: str) -> str:
    """One compaction of a session (a summary call, or its memory document)."""
    return run_step(runtime.engine(), sid, step_id, dispatch)


@app.task(name="mainsail.memory.session")
def update_session_memory(sid: str, step_id: str) -> str:
    """One session-memory update: a fork that edits the session's notes (in the background)."""
    return run_step(runtime.engine(), sid, step_id, dispatch)


@app.task(name="mainsail.memory.extract")
def extract_memories(sid: str, step_id: str) -> str:
    """One auto-memory extraction: a fork that saves durable records for the session's project."""
    return run_step(runtime.engine(), sid, step_id, dispatch)
