"""Running one step: claim, heartbeat, execute, commit.

``run_step`` is what every Celery task calls. It is deliberately free of
Celery: it takes a ``dispatch`` callable for the steps the commit returns.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from typing import Callable, NamedTuple

from redis.exceptions import RedisError

from workflows import keys
from workflows.context import build_request
from workflows.engine import UNKNOWN_OUTCOME, Engine
from workflows.engine.support import unknown_outcome
from workflows.exceptions import MainsailError, MissingCredentials, ToolInputError
from workflows.hooks.config import CallbackHook, HookEvent
from workflows.hooks.runner import hook_input
from workflows.hooks.tool_hooks import post_tool, pre_tool_action, pre_tool_outcome
from workflows.leases import Lease, keeper_for
from workflows.mcp.calls import McpCaller, run_discovery_step
from workflows.mcp.catalog import find_tool
from workflows.mcp.catalog import tool_schemas as mcp_schemas
from workflows.mcp.tools import is_mcp_name
from workflows.memory import ProjectMemory
from workflows.model_client import (
    ModelReply,
    client_for,
    describe_api_error,
    overloaded,
    stream_reply,
)
from workflows.models import SessionRecord, StepKind, StepRecord, ToolCall, new_id
from workflows.permissions import Decision, decide, read_denied_for
from workflows.resilience import TRANSIENT, ResilientEngine, retrying
from workflows.shells import SessionShells
from workflows.tools import run_tool
from workflows.tools.base import ToolContext, ToolOutput
from workflows.tools.web import WebAccess

#: Tools that call the model and the web from the worker (their ToolContext gets a WebAccess).
WEB_TOOLS = frozenset({"WebFetch", "WebSearch"})

log = logging.getLogger(__name__)

Dispatch = Callable[[list[StepRecord]], None]

def owner_token() -> str:
    """Unique per claim attempt: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"


class Heartbeat:
    """Keeps a running step's lease while it runs; sets ``cancel`` when the step is no longer ours.

    A handle on the process's one :class:`~workflows.leases.LeaseKeeper` thread (no thread per step).
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
    what follows has been dispatched. Redis errors on the way are ridden out (workflows.resilience).
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
        next_steps = _run_kind(engine, rec, step, owner, cancel, worker)
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


def _run_kind(engine: ResilientEngine, rec: SessionRecord, step: StepRecord, owner: str,
              cancel: threading.Event, worker: str | None = None) -> list[StepRecord]:
    sid = step.session_id
    if step.kind is StepKind.REPORT:
        return engine.deliver_report(rec, step, owner)
    if rec.parent_session_id and not engine.parent_waits(rec):  # its parent stopped waiting for it
        return engine.abandon_child_step(sid, step.id, owner)
    if step.kind is StepKind.MODEL:
        return _model_step(engine, rec, step, owner, cancel)
    if step.kind is StepKind.TOOL:
        return _tool_step(engine, rec, step, owner, cancel, worker)
    if step.kind is StepKind.HOOK:
        from workflows.hooks.session_hooks import run_hook_step

        return run_hook_step(engine, rec, step, owner, cancel)
    if step.kind is StepKind.MCP:
        return run_discovery_step(engine, rec, step, owner)
    if step.kind is StepKind.COMPACT:
        from workflows.compaction import run_compaction

        body = lambda: run_compaction(engine, rec, step, owner, cancel)  # noqa: E731
    elif step.kind in (StepKind.MEMORY, StepKind.EXTRACT):
        from workflows.forks import run_memory_fork

        body = lambda: run_memory_fork(engine, rec, step, owner, cancel)  # noqa: E731
    else:
        return engine.fail_step(sid, step.id, owner, f"Step kind {step.kind.value} is not supported yet.")
    # A compaction or a memory fork writes nothing until its fenced commit (a fork resumes from its
    # checkpoint), so running it again after a Redis error repeats no effect.
    return retrying(body, what=f"{step.kind.value} step {step.id[:8]} (session {sid[:8]})",
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


def _model_step(engine: ResilientEngine, rec: SessionRecord, step: StepRecord, owner: str,
                cancel: threading.Event) -> list[StepRecord]:
    import anthropic  # here, not at import: a worker starts a second sooner (the SDK is large)

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
        return engine.fail_step(sid, step.id, owner, describe_api_error(exc, settings.api_max_retries))
    except RedisError:
        raise  # not from the deltas (they never raise): let the lease and the reaper handle it
    except Exception as exc:  # a bug or a bad model name: end the run with the reason, never hang
        return engine.fail_step(sid, step.id, owner, f"Model step failed: {type(exc).__name__}: {exc}")
    return engine.record_model_reply(sid, step.id, owner, reply)


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


def project_memory(store, rec: SessionRecord) -> ProjectMemory | None:
    """The session's project memory, when auto-memory is on for it."""
    if rec.auto_memory and rec.project_id:
        return ProjectMemory(store.r, rec.project_id, rec.project_root)
    return None


def _tool_step(engine: Engine, rec: SessionRecord, step: StepRecord, owner: str,
               cancel: threading.Event, worker: str | None = None) -> list[StepRecord]:
    store, settings = engine.store, engine.settings
    sid = step.session_id
    call = next((c for c in rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
    if call is None:
        return engine.fail_step(sid, step.id, owner, f"Tool step {step.id} has no tool call in the session.")
    try:
        tool = find_tool(store, rec, call.name)
    except ToolInputError as exc:  # (its MCP tool list was lost: the fan-out found it)
        return engine.record_tool_output(sid, step.id, owner, ToolOutput(content=str(exc), is_error=True,
                                                                         display=str(exc)[:120]))
    post, files = None, None
    if step.attempt > 1 and not tool.idempotent:
        output = unknown_outcome(call)
    elif (pre := _pre_tool(engine, rec, step, owner, call, tool, cancel)).call is None:
        return pre.follow_ups
    elif not pre.decided and (refused := recheck(tool, call, rec)) is not None:
        output = refused
    else:
        call = pre.call
        mcp = is_mcp_name(call.name)
        # (a custom command's line is cut by the tool itself: its output goes into a prompt, not into a file)
        limit = None if call.prelude else (settings.tool_result_limits.get(call.name)
                                           or (settings.mcp_max_output_chars if mcp else None))
        files = store.files_tracker(sid, deferred=True)  # written by the result's commit
        ctx = ToolContext(
            workspace=rec.workspace,
            session_id=sid,
            home=rec.home,
            files_read=files,
            cancel=cancel,
            bash_default_timeout_ms=settings.bash_default_timeout_ms,
            bash_max_timeout_ms=settings.bash_max_timeout_ms,
            # A tool with a result limit keeps (nearly) everything: the full result is saved below.
            max_output_chars=SAVED_RESULT_CAP if limit else settings.bash_max_output_chars,
            memory=project_memory(store, rec),
            read_denied=read_denied_for(rec),
            sandbox=rec.sandbox,
            additional_dirs=tuple(rec.additional_directories),
            env=dict(rec.env),
            web=WebAccess(store.r, settings, rec) if call.name in WEB_TOOLS else None,
            shells=SessionShells(store.r, sid, worker, output_chars=settings.bash_background_output_chars,
                                 ttl=settings.shell_ttl_seconds, renew_every=settings.worker_heartbeat_seconds),
            tool_use_id=call.tool_use_id,
            mcp=McpCaller(rec, settings) if mcp else None,
        )
        output = run_tool(call.name, call.input, ctx, tool=tool)
        if limit and len(output.content) > limit:
            output = save_large_result(rec.workspace, call.tool_use_id, call.name, output, limit)
        output, post = post_tool(rec, call, call.input, output, cancel)
    return engine.record_tool_output(sid, step.id, owner, output, hook=post,
                                     writes=files.write if files is not None and files.pending else None)


class _Pre(NamedTuple):
    call: ToolCall | None  # what runs; None: the step ended here
    follow_ups: list[StepRecord]
    decided: bool  # the permission was decided with the hooks' verdict (no re-check needed)


def _pre_tool(engine: Engine, rec: SessionRecord, step: StepRecord, owner: str, call: ToolCall, tool,
              cancel: threading.Event) -> _Pre:
    """PreToolUse: run the hooks (or read their recorded verdict), commit the verdict, then act on it.

    The call to run carries the hook's updatedInput. The step ends here when the call was refused or
    turned into a question (committed with the verdict), or is no longer ours.
    """
    hooks = rec.hooks.for_event(HookEvent.PRE_TOOL_USE, call.name)
    fresh = call.pre_hook is None and bool(hooks)
    callbacks = [h.callback_id for h in hooks if isinstance(h, CallbackHook)]
    if fresh and callbacks and call.client_hook_runs is None:  # the SDK client runs those: ask it, durably
        payload = hook_input(HookEvent.PRE_TOOL_USE, rec, tool_name=call.name, tool_input=call.input,
                             tool_use_id=call.tool_use_id)
        return _Pre(None, engine.ask_client_hooks(rec.id, step.id, owner, call, callbacks, payload), True)
    outcome = pre_tool_outcome(rec, call, cancel) if fresh else call.pre_hook
    if outcome is None and not call.hooks_pending:
        return _Pre(call, [], False)  # no hooks: the ordinary re-check decides
    action = pre_tool_action(tool, call, outcome, rec)
    go_on, follow_ups = engine.settle_pre_tool(rec.id, step.id, owner, call.tool_use_id,
                                               outcome if fresh else None, action)
    if not go_on:
        return _Pre(None, follow_ups, True)
    return _Pre(call.model_copy(update={"input": action.input, "pre_hook": outcome}), [], True)


def recheck(tool, call: ToolCall, rec: SessionRecord) -> ToolOutput | None:
    """The permission check again, here, where the call runs and its paths are real (the first check ran
    where the model call committed, which may not see the workspace, and files change in between).

    A call a rule or the mode allowed must still be allowed; a call a person approved must still not be
    denied. Otherwise the call is not run and the model is told why.
    """
    perm = decide(tool, call.input, rec, approved=bool(call.approved_by))
    if perm.decision is Decision.ALLOW or (call.approved_by and perm.decision is Decision.ASK):
        return None
    why = perm.reason if perm.decision is Decision.DENY else (
        f"when it was about to run, it needed approval ({perm.reason}), though it did not when it was checked "
        "before (the files it names changed in between). It was not run; call it again to be asked")
    return ToolOutput(content=why, is_error=True, display=f"not run: {perm.display or 'permission changed'}")


SAVED_RESULT_CAP = 20_000_000  # characters a tool may return before its own truncation applies
PREVIEW_CHARS = 2_000
RESULTS_DIR = os.path.join(".mainsail", "tool-results")


def save_large_result(workspace: str, tool_use_id: str, tool: str, output: ToolOutput, limit: int) -> ToolOutput:
    """Save a result past ``limit`` characters in the workspace; the model gets a preview and the path.

    The folder ignores itself (a ``.gitignore`` of ``*``), so it never shows in git status; it lives in the
    workspace, so any tools worker that serves the session can Read it.
    """
    folder = os.path.join(workspace, RESULTS_DIR)
    os.makedirs(folder, exist_ok=True)
    ignore = os.path.join(folder, ".gitignore")
    if not os.path.exists(ignore):
        with open(ignore, "w") as f:
            f.write("*\n")
    name = re.sub(r"[^A-Za-z0-9_-]", "_", tool_use_id) + ".txt"
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(output.content)
    lines = output.content.count("\n") + 1
    preview = output.content[:PREVIEW_CHARS]
    note = (f"\n\n... [{tool} output too large: {len(output.content):,} characters in {lines:,} lines, over the "
            f"{limit:,}-character limit. The full output is saved at {path}; read the rest with Read "
            f"(file_path, offset, limit) or search it with Grep.]")
    return ToolOutput(content=preview + note, is_error=output.is_error,
                      display=(output.display or f"{tool} output") + f" (full output saved: {len(output.content):,} chars)")


__all__ = ["Heartbeat", "LiveDeltas", "run_step", "run_one", "owner_token", "MainsailError", "UNKNOWN_OUTCOME"]
