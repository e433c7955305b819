"""Running one step: claim, heartbeat, execute, commit.

``run_step`` is what every Celery task calls. It is deliberately free of
Celery: it takes a ``dispatch`` callable for the steps the commit returns.
What runs a step of each kind is in the table of workflows/commit/kinds.py;
the model call's runner, :func:`model_step`, is here.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Callable

from workflows.store import keys
from workflows.context.assemble import build_request
from workflows.engine import UNKNOWN_OUTCOME, Engine
from workflows.exceptions import MainsailError, MissingCredentials
from workflows.store.leases import Lease, keeper_for
from workflows.mcp.catalog import tool_schemas as mcp_schemas
from workflows.model.client import (
    ModelReply,
    client_for,
    describe_api_error,
    overloaded,
    stream_reply,
)
from workflows.model.lifecycle import lifecycle_note, retired
from workflows.models import SessionRecord, StepKind, StepRecord, new_id
from workflows.store.resilience import TRANSIENT, RedisError, ResilientEngine, retrying
from workflows.commit.kinds import StepRun, runner_for, spec_for
from workflows.steps.tool import quick_calls, run_quick

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


def model_step(run: StepRun) -> list[StepRecord]:
    """One model call and the commit of its reply (with the results of its quick calls: workflows/steps/tool.py)."""
    import anthropic  # here, not at import: a worker starts a second sooner (the SDK is large)

    engine, rec, step, owner, cancel, worker = run.engine, run.rec, run.step, run.owner, run.cancel, run.worker

    store, settings = engine.store, engine.settings
    sid = step.session_id
    request = engine.read(lambda: build_request(rec, store.cached_entries(sid, rec.revision), settings.max_tokens,
                                                mcp_schemas(store, rec)),
                          what=f"transcript of session {sid[:8]}")
    on_text = LiveDeltas(store, step).publish

    try:
        reply = _call_with_fallback(rec, request, settings, on_text, cancel)
    except InterruptedError:
        return []  # cancelled: the epoch moved on; nothing to record
    except MissingCredentials as exc:
        return engine.fail_step(sid, step.id, owner, str(exc))
    except anthropic.APIError as exc:
        why = describe_api_error(exc, settings.api_max_retries)
        if retired(request["model"]):  # the likely reason, which the API's own message may not give
            why += " " + lifecycle_note(request["model"])
        return engine.fail_step(sid, step.id, owner, why)
    except RedisError:
        raise  # not from the deltas (they never raise): let the lease and the reaper handle it
    except Exception as exc:  # a bug or a bad model name: end the run with the reason, never hang
        return engine.fail_step(sid, step.id, owner, f"Model step failed: {type(exc).__name__}: {exc}")
    ran = {}
    try:
        if calls := quick_calls(engine, rec, reply, run.serves_tools):
            ran = run_quick(engine, rec, calls, cancel, worker)
    except Exception:  # (a bug: the reply is paid for, so it is recorded; its calls go to tool steps, which report it)
        log.exception("quick calls of step %s (session %s) failed; they go to tool steps", step.id[:8], sid[:8])
    return engine.record_model_reply(sid, step.id, owner, reply, ran=ran)


def _call_with_fallback(rec: SessionRecord, request: dict, settings, on_text, cancel) -> ModelReply:
    """The model call; when the model is still overloaded (529) after the SDK's retries and the session
    has a fallback model, the call is made once more with it, as Claude Code's ``--fallback-model`` does.

    Raises:
        anthropic.APIError: the call failed (the fallback's error, when it was tried).
    """
    import anthropic

    try:
        return stream_reply(client_for(request["model"], settings), request, on_text, cancel)
    except anthropic.APIStatusError as exc:
        fallback = rec.sent_model(rec.fallback_model) if rec.fallback_model else None
        if not overloaded(exc) or not fallback or fallback == request["model"]:
            raise
        first = describe_api_error(exc, settings.api_max_retries)
    log.warning("model %s overloaded for session %s; retrying once with fallback %s", request["model"],
                rec.id[:8], fallback)
    reply = stream_reply(client_for(fallback, settings), {**request, "model": fallback}, on_text, cancel)
    reply.fallback_from, reply.fallback_error = request["model"], first
    return reply


class LiveDeltas:
    """Publishes a model call's text deltas for watchers; a delta Redis refuses is dropped, never fatal.

    Deltas are a courtesy (the reply is recorded whole when the call ends), so a Redis outage in the
    middle of a call must not abort it: the call goes on, watchers miss some text, and it is logged once.
    """

    #: A long call refreshes the stream's expiry this often (its first delta sets it).
    EXPIRE_EVERY = 60.0

    def __init__(self, store, step: StepRecord) -> None:
        self.store = store
        self.step = step
        self.dropped = 0
        self._expire_at = 0.0

    def publish(self, text: str) -> None:
        step = self.step
        now = time.monotonic()
        expire = now >= self._expire_at
        try:
            self.store.publish(step.session_id, {"type": "text", "step": step.id, "attempt": step.attempt,
                                                 "text": text}, expire=expire)
            if expire:
                self._expire_at = now + self.EXPIRE_EVERY
        except RedisError as exc:
            self.dropped += 1
            if self.dropped == 1:
                log.warning("dropping live text of step %s: Redis refused it (%s); the reply is still recorded "
                            "whole", step.id[:8], f"{type(exc).__name__}: {exc}".splitlines()[0][:200])


__all__ = ["Heartbeat", "LiveDeltas", "run_step", "run_one", "owner_token", "MainsailError", "UNKNOWN_OUTCOME"]
