"""The engine: apply one event to a session, under its lock, and say what runs next.

Every public method follows the same shape (the step protocol's commit):

1. take the session lock, load the record (and the step, for step events);
2. fence: a step event counts only if the step is still ``running``, owned by the
   caller, and of the session's current epoch; otherwise it is a late or
   duplicate delivery and changes nothing (for step events, :meth:`Engine._step_event`
   does 1, 2 and 4 around the method's own ``apply``);
3. fire the machine's trigger(s), append transcript entries, write new step
   records as ``pending`` with a pickup deadline, all in one MULTI/EXEC;
4. release the lock and return the new steps. The caller dispatches them
   (``tasks/`` does, with ``send_task``); the engine never imports ``tasks/``.

A crash between 3 and 4 loses nothing: the reaper finds pending steps whose
pickup deadline has passed and dispatches them again.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from datetime import date, datetime, timezone
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from statemachines import Snapshot, State, next_state
from workflows import context_files, keys
from workflows.exceptions import (
    ContextFull,
    RequestClosed,
    RequestNotFound,
    SessionBusy,
    SessionNotFound,
    StepNotFound,
    ToolInputError,
)
from workflows.hooks.commits import HookCommits, tool_event_stops
from workflows.hooks.config import HookEvent, HookSet
from workflows.hooks.outcome import HookOutcome
from workflows.housekeeping import Removal, apply_removal, busy_reason, plan_removal
from workflows.memory import (
    ExtractionLock,
    MemoryRecord,
    MemoryThresholds,
    ProjectMemory,
    has_content,
    memory_context,
    project_id,
    project_root,
    should_update_session_memory,
)
from workflows.model_client import ModelReply
from workflows.models import (
    AssistantEntry,
    CompactBoundaryEntry,
    SummaryEntry,
    Message,
    PermissionDecisionEntry,
    PermissionMode,
    PermissionRequest,
    PermissionRequestEntry,
    RequestStatus,
    RuleSet,
    ResultEntry,
    SandboxSettings,
    SessionRecord,
    StateEntry,
    StepKind,
    StepRecord,
    StepStatus,
    SystemEntry,
    ToolCall,
    ToolCallStatus,
    ToolResultBlock,
    Usage,
    UserEntry,
    new_id,
)
from workflows.permissions import Decision, always_rules, decide, summary
from workflows.pricing import add_cost, cost_usd, unknown_price_note
from workflows.settings import Settings
from workflows.store import Store
from workflows.tokens import estimate_tokens, thresholds
from workflows.tools import get_tool, validate_input
from workflows.tools.base import ToolOutput

log = logging.getLogger(__name__)

QUEUE_FOR_KIND = {StepKind.MODEL: "model", StepKind.COMPACT: "model", StepKind.MEMORY: "memory",
                  StepKind.EXTRACT: "memory"}

INTERRUPTED = "[Request interrupted by user for tool use]"

#: The tool result of a mutating call whose worker was lost mid-run (it is never run again blindly).
UNKNOWN_OUTCOME = (
    "The worker running this {tool} call stopped before it reported a result, so its outcome is "
    "unknown: it may have run partly, fully, or not at all. It was not run again automatically. "
    "Check its effects (for example with Read or a read-only command) before deciding to run it again."
)


def display_worker(name: str) -> str:
    """A registered worker's name as people know it (without the per-start suffix)."""
    return name.partition("#")[0]


class Claim(NamedTuple):
    step: StepRecord | None
    follow_ups: list[StepRecord]
    session: SessionRecord | None  # None: the session was removed


@dataclass
class Stopped:
    """What :meth:`Engine.stop` did.

    Attributes:
        was: the state the session was in.
        cancelled: a turn (or the wait for a memory extraction) was stopped.
        cleared: queued messages that were dropped (``clear_queue``), oldest first.
        started: the queued message that runs now, if one did.
        queued: messages still waiting behind it.
        steps: the started message's first steps, to dispatch.
    """

    was: State
    cancelled: bool
    cleared: list[str]
    started: str | None
    queued: int
    steps: list[StepRecord]


@dataclass
class _Tx:
    """What one event changes; written in one MULTI/EXEC by :meth:`Engine._commit`."""

    rec: SessionRecord
    entries: list = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)  # updated or new
    dispatch: list[StepRecord] = field(default_factory=list)  # new pending steps to send
    cleared: list[StepRecord] = field(default_factory=list)  # leases to drop
    leases: dict[str, tuple[StepRecord, float]] = field(default_factory=dict)
    inbox_pops: int = 0
    approval_deadlines: dict[str, float] = field(default_factory=dict)
    approvals_cleared: list[str] = field(default_factory=list)
    memory_doc: str | None = None  # the session's new memory document
    records_put: list[MemoryRecord] = field(default_factory=list)  # project memory records
    records_deleted: list[str] = field(default_factory=list)
    checkpoints_cleared: list[str] = field(default_factory=list)  # finished forks' step ids


class Engine(HookCommits):
    """Applies events to sessions. Holds the store and settings, no session state."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    # ================================================================== sessions

    def create_session(
        self,
        workspace: str,
        *,
        model: str | None = None,
        permission_mode: PermissionMode | str | None = None,
        max_turns: int | None = None,
        max_budget_usd: float | None = None,
        tools_queue: str = "tools",
        sid: str | None = None,
        rules: RuleSet | None = None,
        home: str | None = None,
        approval_timeout_seconds: float | None = None,
        system_prompt: str | None = None,
        append_system_prompt: str | None = None,
        auto_memory: bool | None = None,
        sandbox: SandboxSettings | None = None,
        asks: str = "wait",
        hooks: HookSet | None = None,
        additional_directories: list[str] | None = None,
        env: dict[str, str] | None = None,
        model_overrides: dict[str, str] | None = None,
        fallback_model: str | None = None,
    ) -> SessionRecord:
        """Create an idle session for ``workspace`` (an existing directory).

        ``sandbox``: the settings files' sandbox settings; None: the defaults (on where bwrap works).
        ``asks``: who answers a call that would ask ("wait": a person; "deny": nobody, print mode).
        ``hooks``: the settings files' hooks, a snapshot every worker runs (more: :meth:`add_hooks`).
        ``additional_directories``: resolved directories that count as inside the workspace;
        ``env``: the settings files' env for tool processes; ``model_overrides``: what the aliases
        stand for (``ANTHROPIC_DEFAULT_*_MODEL``); ``fallback_model``: see :mod:`workflows.steps`.

        With auto-memory on (``auto_memory``, default the setting), the session
        belongs to the project of its git root and starts with that project's
        MEMORY.md index in its context.
        """
        ws = os.path.realpath(workspace)
        if not os.path.isdir(ws):
            raise FileNotFoundError(f"Workspace {workspace!r} is not a directory")
        rec = SessionRecord(
            id=sid or new_id(),
            model=model or self.settings.model,
            permission_mode=PermissionMode(permission_mode or self.settings.permission_mode or "default"),
            workspace=ws,
            git_branch=_git_branch(ws),
            max_turns=max_turns if max_turns is not None else self.settings.max_turns,
            max_budget_usd=max_budget_usd,
            tools_queue=tools_queue,
            rules=rules or RuleSet(),
            asks=asks,
            home=home or os.path.expanduser("~"),
            custom_system_prompt=system_prompt,
            append_system_prompt=append_system_prompt,
            approval_timeout_seconds=approval_timeout_seconds or self.settings.approval_timeout_seconds,
            sandbox=sandbox or SandboxSettings(),
            hooks=hooks or HookSet(),
            additional_directories=list(additional_directories or []),
            env=dict(env or {}),
            model_overrides=dict(model_overrides or {}),
            fallback_model=fallback_model,
        )
        # Computed once, here: a resumed session, or any worker, sends the same bytes (the cache holds).
        rec.system_context = context_files.system_context(ws)
        rec.auto_memory = self.settings.auto_memory if auto_memory is None else auto_memory
        index = ""
        if rec.auto_memory:
            rec.project_root = project_root(ws)
            rec.project_id = project_id(rec.project_root)
            index = ProjectMemory(self.store.r, rec.project_id, rec.project_root).index(
                self.settings.memory_index_lines)
        rec.user_context = context_files.user_context(ws, rec.home, date.today(),
                                                      auto_memory=memory_context(index))
        rec.context_added = estimate_tokens(rec.system_context + rec.user_context)
        self.store.create_session(rec)
        return rec

    def submit(self, sid: str, prompt: str) -> list[StepRecord]:
        """Start a run with ``prompt``, or queue it in the inbox while the session is busy.

        The inbox is a queue: while messages wait in it, ``prompt`` goes behind them
        and the oldest runs first (an idle session with a queue starts its oldest now).
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            if rec.state is State.IDLE and self.store.inbox(sid):
                self.store.push_inbox(sid, prompt)
                tx = _Tx(rec)
                self._after_idle(tx)
                self._commit(tx)
                return tx.dispatch
            if rec.state is State.EXTRACTING:
                # Nobody waits for memory: the message runs now, the extraction goes on beside it.
                self.store.push_inbox(sid, prompt)
                tx = _Tx(rec)
                self._leave_extracting(tx)
                self._commit(tx)
                return tx.dispatch
            if rec.state is not State.IDLE:
                self.store.push_inbox(sid, prompt)
                return []
            self._check_room(rec, prompt)
            tx = _Tx(rec)
            self._start_run(tx, prompt)
            self._commit(tx)
        return tx.dispatch

    def compact(self, sid: str, instructions: str | None = None) -> list[StepRecord]:
        """Compact an idle session now (``/compact``), with optional instructions for the summary."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            tx = _Tx(rec)
            if rec.state is State.EXTRACTING:  # nobody waits for memory: the extraction goes on beside it
                self._fire(tx, "extracted")
            require_idle(rec, "compact")
            rec.run_started_at = time.time()
            rec.run_turns = rec.run_api_ms = 0
            rec.run_usage = Usage()
            rec.run_cost_usd = 0.0
            _reset_run_figures(rec)
            self._begin_compaction(tx, "manual", instructions)
            self._commit(tx)
        return tx.dispatch

    def context_size(self, rec: SessionRecord) -> int:
        """Tokens in the session's context: the last reported usage plus estimates since."""
        return rec.context_tokens + rec.context_added

    def _check_room(self, rec: SessionRecord, prompt: str) -> None:
        limits = thresholds(rec.sent_model(), self.settings.autocompact_pct_override)
        size = self.context_size(rec) + estimate_tokens(prompt)
        auto = self.settings.auto_compact and not rec.auto_compact_off
        if size >= limits.blocking and not auto:
            why = ("auto-compact is off for this session after repeated failures"
                   if rec.auto_compact_off else "auto-compact is disabled")
            raise ContextFull(
                f"Session {rec.id[:8]} is at {size:,} of {limits.window:,} tokens, past the blocking limit "
                f"({limits.blocking:,}), and {why}. Run /compact (or `mainsail compact {rec.id[:8]}`) "
                "before sending another prompt.")

    def cancel(self, sid: str, reason: str = "Cancelled by user", *, clear_queue: bool = False,
               dispatch: Callable[[list[StepRecord]], None] | None = None) -> bool:
        """Stop the running turn; the oldest queued message (if any) starts at once.

        Returns False when the session was already idle. ``dispatch`` receives the
        steps of the message that starts (without it they wait for the reaper's
        pickup timeout). See :meth:`stop` for the details.
        """
        outcome = self.stop(sid, reason, clear_queue=clear_queue)
        if dispatch is not None and outcome.steps:
            dispatch(outcome.steps)
        return outcome.cancelled

    def stop(self, sid: str, reason: str = "Cancelled by user", *, clear_queue: bool = False) -> Stopped:
        """Cancel: bump the epoch, close dangling tool calls, return to idle; then run the queue.

        The inbox is a queue that a cancel does not drop: the oldest message starts
        at once, the others stay behind it in the order sent. With ``clear_queue``
        they are all dropped first, so the session stays idle. An idle session with
        a queue nothing runs (left by an older version) starts its oldest message.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            tx = _Tx(rec)
            was = rec.state
            cleared = self.store.inbox(sid) if clear_queue else []
            tx.inbox_pops = len(cleared)
            if rec.state is State.EXTRACTING:  # the run already has its result; stop waiting for memory
                self._add(tx, SystemEntry(session_id=sid, subtype="memory", content=(
                    "Stopped waiting for the memory extraction; it goes on in the background.")))
                self._fire(tx, "cancel")
                self._after_idle(tx)
            elif rec.state is not State.IDLE:
                self._add(tx, SystemEntry(session_id=sid, subtype="interrupted", content=reason))
                self._abort_run(tx, "cancel", "cancelled", reason)
            else:
                self._after_idle(tx)
            started = None
            if tx.inbox_pops > len(cleared):
                started = self.store.inbox(sid)[len(cleared)]
            if was is not State.IDLE or tx.inbox_pops:
                self._commit(tx)
            queued = len(self.store.inbox(sid))
        return Stopped(was=was, cancelled=was is not State.IDLE, cleared=cleared, started=started,
                       queued=queued, steps=tx.dispatch)

    def clear_queue(self, sid: str) -> list[str]:
        """Drop the messages waiting in the session's inbox; returns them, oldest first."""
        with self.store.lock(sid):
            self.store.get_session(sid)
            dropped = self.store.inbox(sid)
            if dropped:
                self.store.r.ltrim(keys.inbox(sid), len(dropped), -1)
        return dropped

    def set_model(self, sid: str, model: str) -> SessionRecord:
        """Switch the model for the session's next calls (usage and cost stay per model)."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            rec.model = model
            self.store.save_session(rec)
        return rec

    def update_limits(self, sid: str, *, max_turns: int | None = None, max_budget_usd: float | None = None,
                      permission_mode: PermissionMode | str | None = None, rules: RuleSet | None = None,
                      approval_timeout_seconds: float | None = None, auto_memory: bool | None = None,
                      asks: str | None = None, tools: list[str] | None = ...,
                      additional_directories: list[str] | None = None,
                      fallback_model: str | None = None) -> SessionRecord:
        """Change a session's limits, mode, rules (added to its own), approval timeout, auto-memory, who
        answers its asks (``asks``, see :attr:`SessionRecord.asks`), the tools it offers (``tools``: a
        list, or None for all; left as is unless given), added directories (joining its own) or
        fallback model."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            if asks is not None:
                rec.asks = asks
            if tools is not ...:
                rec.tools = None if tools is None else list(tools)
            for path in additional_directories or ():
                if path not in rec.additional_directories:
                    rec.additional_directories.append(path)
            if fallback_model is not None:
                rec.fallback_model = fallback_model
            if auto_memory is False:  # turning it on later would need the project's index in the context
                rec.auto_memory = False
            if rules is not None:
                for kind in ("allow", "ask", "deny"):
                    for spec in getattr(rules, kind):
                        rec.rules.add(kind, spec.rule, spec.source)
            if approval_timeout_seconds is not None:
                rec.approval_timeout_seconds = approval_timeout_seconds
            if max_turns is not None:
                rec.max_turns = max_turns
            if max_budget_usd is not None:
                rec.max_budget_usd = max_budget_usd
            if permission_mode is not None:
                rec.permission_mode = PermissionMode(permission_mode)
            self.store.save_session(rec)
        return rec

    def fork_session(self, sid: str) -> SessionRecord:
        """Copy a session's transcript into a new session; the original is left untouched.

        A busy session is copied up to the end of its last finished run, so the
        fork never holds a tool call without its result.
        """
        with self.store.lock(sid):
            src = self.store.get_session(sid)
            entries = self.store.entries(sid)
        if src.state is not State.IDLE:
            ends = [i for i, e in enumerate(entries) if isinstance(e, ResultEntry)]
            entries = entries[: ends[-1] + 1] if ends else []
        rec = src.model_copy(deep=True, update={
            "id": new_id(), "state": State.IDLE, "epoch": 0, "forked_from": src.id, "tool_calls": [],
            "memory_step": None, "memory_trailing": False, "extract_step": None, "extract_trailing": False,
            "permission_requests": [], "current_batch": 0, "created_at": time.time(),
            "last_uuid": entries[-1].uuid if entries else None,
        })
        self.store.create_session(rec)
        p = self.store.pipeline()
        copies = []
        for e in entries:
            e.session_id = rec.id
            copies.append(e)
        self.store.append(rec.id, copies, p)
        self.store.save_session(rec, p)
        read = self.store.r.hgetall(keys.files_read(sid))  # files the fork may Edit without re-reading
        if read:
            p.hset(keys.files_read(rec.id), mapping=read)
        p.execute()
        return rec

    def delete_session(self, sid: str, *, force: bool = False,
                       check: Callable[[SessionRecord], bool] | None = None) -> Removal | None:
        """Remove a session: its keys, its members of the shared sets, its saved tool results.

        Under the session's lock. ``check`` (gc's re-check of age and state) may
        decline: then nothing is removed and None is returned.

        Raises:
            SessionBusy: the session is busy and ``force`` is not set (cancel it first:
                ``mainsail rm --force`` does).
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            steps = self.store.steps(sid)
            if check is not None and not check(rec):
                return None
            why = busy_reason(rec, steps)
            if why and not force:
                raise SessionBusy(f"Cannot remove session {sid[:8]}: {why}. Wait for it, or "
                                  f"`mainsail rm --force {sid[:8]}` (cancels it first).")
            removal = plan_removal(self.store, rec)
            apply_removal(self.store, removal)
        return removal

    # ================================================================== step protocol

    def claim(self, sid: str, step_id: str, owner: str, worker: str | None = None) -> Claim:
        """Claim a step for ``owner``; with ``worker``, the claim joins that worker's held steps.

        ``Claim.step`` is set when the caller now runs it (with ``Claim.session`` as
        of the claim); it is None when the caller must not (done, superseded,
        someone else's live lease, or attempts used up, in which case the failure
        is committed and ``Claim.follow_ups`` may hold steps to dispatch). Asking
        again with the same ``owner`` (its first reply was lost to a Redis error)
        gives the same claim back, without counting another attempt.
        """
        now = time.time()
        with self.store.lock(sid):
            try:
                rec, step, deadline = self.store.load_step(sid, step_id)
            except (SessionNotFound, StepNotFound):  # removed (`mainsail rm`) since it was sent
                return Claim(None, [], None)
            if step.finished:
                return Claim(None, [], rec)
            if step.status is StepStatus.RUNNING and step.owner == owner:
                return Claim(step, [], rec)
            tx = _Tx(rec)
            if _stale(step, rec):
                self._supersede(tx, step)
                self._commit(tx)
                return Claim(None, [], rec)
            if step.status is StepStatus.RUNNING and deadline is not None and deadline > now:
                return Claim(None, [], rec)
            if step.attempt >= self.settings.max_attempts:
                self._fail(tx, step, f"{self._step_name(rec, step)} failed after {step.attempt} attempts: "
                           "its worker stopped each time.")
                self._commit(tx)
                return Claim(None, tx.dispatch, rec)
            step.status = StepStatus.RUNNING
            step.attempt += 1
            step.owner = owner
            # Only the step and its lease change (the session record does not): one small MULTI.
            p = self.store.pipeline()
            self.store.put_step(step, p)
            self.store.set_deadline(step, now + self.settings.lease_seconds, p)
            if worker:
                p.hset(keys.worker_steps(worker), keys.lease_member(sid, step_id), owner)
            p.execute()
        return Claim(step, [], rec)

    def heartbeat(self, sid: str, step_id: str, owner: str, *, extend: bool = True) -> bool:
        """Check (and with ``extend``, renew) a running step's lease. False: no longer ours to run
        (someone else's, superseded, or its session was removed)."""
        try:
            rec, step, _ = self.store.load_step(sid, step_id)
        except (SessionNotFound, StepNotFound):
            return False
        if step.status is not StepStatus.RUNNING or step.owner != owner or _stale(step, rec):
            return False
        if extend:
            self.store.set_deadline(step, time.time() + self.settings.lease_seconds, only_existing=True)
            if step.kind is StepKind.EXTRACT and rec.project_id:
                self.extraction_lock(rec, step).extend()
        return True

    def extraction_lock(self, rec: SessionRecord, step: StepRecord) -> ExtractionLock:
        return ExtractionLock(self.store.r, rec.project_id, keys.lease_member(rec.id, step.id),
                              2 * self.settings.lease_seconds)

    def defer_step(self, sid: str, step_id: str, owner: str, delay: float, why: str) -> list[StepRecord]:
        """Give a claimed step back, unrun and not counted as an attempt; the reaper sends it after ``delay``."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            step.status = StepStatus.PENDING
            step.owner = None
            step.attempt = max(0, step.attempt - 1)
            step.error = why
            tx.steps.append(step)
            tx.leases[step.id] = (step, time.time() + delay)

        return self._step_event(sid, step_id, owner, apply)

    def record_model_reply(self, sid: str, step_id: str, owner: str, reply: ModelReply) -> list[StepRecord]:
        """Commit a model reply: record it, then fan out tool calls or end the run."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            self._finish_step(tx, step)
            rec = tx.rec
            msg = reply.message
            if reply.fallback_from:
                self._add(tx, SystemEntry(session_id=sid, subtype="warning", step_id=step.id, content=(
                    f"Model {reply.fallback_from} is overloaded ({reply.fallback_error}); this call was retried "
                    f"once with the fallback model {reply.model}.")))
            cost = self._charge(tx, msg.usage, reply.duration_ms, model=reply.model)
            rec.turns += 1
            rec.run_turns += 1
            u = msg.usage
            rec.context_tokens = (u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
                                  + u.output_tokens)
            rec.context_added = 0
            self._add(tx, AssistantEntry(session_id=sid, message=msg, cost_usd=cost,
                                         duration_ms=reply.duration_ms, step_id=step.id))
            tool_uses = msg.tool_uses()
            self._maybe_update_session_memory(tx, len(tool_uses))
            if tool_uses:
                self._fan_out(tx, tool_uses)
            elif not self.stop_gate(tx):  # no Stop hooks: the run ends here
                self._end_run(tx)

        return self._step_event(sid, step_id, owner, apply)

    def _charge(self, tx: _Tx, usage: Usage, duration_ms: int, *, run: bool = True, kind: str | None = None,
                model: str | None = None) -> float | None:
        """Add a call's usage and cost to the session's totals, per model and per kind of call.

        ``run``: a call of the run's main loop (a model turn or a compaction), counted in the
        run's figures; otherwise a memory fork, counted in the run's memory figures.
        ``kind`` (a key of :data:`COST_KINDS`) defaults to ``compact`` while compacting,
        ``main`` for other run calls and ``memory`` for forks. ``model``: the id the call sent
        (default: what the session's model resolves to now). A model without a price makes the
        call's cost, and every figure it goes into, None (unknown); the session says so once.
        """
        rec = tx.rec
        kind = kind or (("compact" if rec.state is State.COMPACTING else "main") if run else "memory")
        model = model or rec.sent_model()
        cost = cost_usd(model, usage)
        if cost is None and model not in rec.unpriced_models:
            rec.unpriced_models.append(model)
            self._add(tx, SystemEntry(session_id=rec.id, subtype="warning", content=unknown_price_note(model)))
        rec.usage = rec.usage + usage
        _add_to(rec.usage_by_model, rec.cost_by_model, model, usage, cost)
        _add_to(rec.usage_by_kind, rec.cost_by_kind, kind, usage, cost)
        rec.cost_usd = add_cost(rec.cost_usd, cost)
        rec.api_ms += duration_ms
        if run:
            rec.run_usage = rec.run_usage + usage
            rec.run_cost_usd = add_cost(rec.run_cost_usd, cost)
            rec.run_api_ms += duration_ms
            _add_to(rec.run_usage_by_model, rec.run_cost_by_model, model, usage, cost)
        else:
            rec.run_memory_usage = rec.run_memory_usage + usage
            rec.run_memory_cost_usd = add_cost(rec.run_memory_cost_usd, cost)
        return cost

    def record_tool_output(self, sid: str, step_id: str, owner: str, output: ToolOutput,
                           hook: HookOutcome | None = None) -> list[StepRecord]:
        """Commit one tool result (and its PostToolUse ``hook`` outcome); when its batch is complete,
        start the next batch or model call."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            self._finish_step(tx, step)
            call = next((c for c in tx.rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
            if call is None or call.status is ToolCallStatus.DONE:
                return
            if hook is not None:
                self.add_hook_entry(tx, hook, call, step)
            self._add_tool_result(tx, call.tool_use_id, output, step_id=step.id)
            call.status = ToolCallStatus.DONE
            if call.name in MEMORY_WRITERS and not output.is_error:
                tx.rec.run_wrote_memory = True
            if (stop := tool_event_stops(hook)) is not None:
                self._abort_run(tx, "halt", "error_during_execution", f"Stopped by a PostToolUse hook: {stop}")
                return
            self._advance_tools(tx)

        return self._step_event(sid, step_id, owner, apply)

    def fail_step(self, sid: str, step_id: str, owner: str, error: str) -> list[StepRecord]:
        """A step failed for good (e.g. the model API after its retries): end the run with the error."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            self._fail(tx, step, error)

        return self._step_event(sid, step_id, owner, apply)

    def reap(self, now: float | None = None, dispatch: Callable[[list[StepRecord]], None] | None = None,
             ) -> list[StepRecord]:
        """Steps whose lease or pickup deadline passed (the last resort; dead workers are found sooner).

        With ``dispatch``, each step is sent as soon as it is taken back, not at the end of the sweep.
        Returns every step to dispatch (already sent when ``dispatch`` was given).
        """
        now = now or time.time()
        out: list[StepRecord] = []
        for sid, step_id in self.store.due(now):
            try:
                steps = self._reap_one(sid, step_id, now)
            except Exception:  # one broken session must not stop the sweep
                log.exception("reaping %s/%s failed", sid, step_id)
                continue
            if dispatch and steps:
                dispatch(steps)
            out.extend(steps)
        return out

    def _reap_one(self, sid: str, step_id: str, now: float) -> list[StepRecord]:
        with self.store.lock(sid):
            try:
                rec, step, deadline = self.store.load_step(sid, step_id)
            except (SessionNotFound, StepNotFound):
                self.store.r.zrem(keys.leases(), keys.lease_member(sid, step_id))
                return []
            tx = _Tx(rec)
            if step.finished:
                tx.cleared.append(step)
                self._commit(tx)
                return []
            if _stale(step, rec):
                self._supersede(tx, step)
                self._commit(tx)
                return []
            if deadline is not None and deadline > now:
                return []
            if step.status is StepStatus.RUNNING:
                self._worker_lost(tx, step, None)
                self._commit(tx)
                return tx.dispatch
            tx.steps.append(step)
            tx.leases[step.id] = (step, now + self.settings.pickup_timeout_seconds)
            self._commit(tx)
            return [step]

    def take_back(self, worker: str, sid: str, step_id: str, token: str) -> list[StepRecord]:
        """Take back a step dead ``worker`` held; returns the steps to dispatch now.

        ``token`` is the owner token of its claim (``""``: it took the message and died before
        claiming). Fenced: a step someone else claimed since is left alone. A step that had finished
        may have died before its follow-ups were sent: the session's pending steps are sent again
        (a duplicate message is a no-op at claim). A session lock the dead worker held is freed first.
        """
        self.store.workers.break_lock(sid, worker)
        with self.store.lock(sid):
            try:
                rec, step, _ = self.store.load_step(sid, step_id)
            except (SessionNotFound, StepNotFound):
                return []
            if step.finished:
                return [s for s in self.store.steps(sid) if s.status is StepStatus.PENDING and not _stale(s, rec)]
            tx = _Tx(rec)
            if _stale(step, rec):
                self._supersede(tx, step)
                self._commit(tx)
                return []
            if step.status is StepStatus.PENDING:
                self.store.set_deadline(step, time.time() + self.settings.pickup_timeout_seconds)
                return [step]
            if not token or step.owner != token:
                return []  # running, but claimed by another worker since
            self._worker_lost(tx, step, worker)
            self._commit(tx)
            return tx.dispatch

    def _worker_lost(self, tx: _Tx, step: StepRecord, worker: str | None) -> None:
        """``step`` was running when its worker was lost: died (``worker`` named) or lease expired (None).

        Decides once, and says exactly that: run it again elsewhere, or (a mutating tool) record that
        its outcome is unknown without running it again, or fail it after ``max_attempts``.
        """
        rec = tx.rec
        name = self._step_name(rec, step)
        lost = (f"Worker {display_worker(worker)} died while {name} was running" if worker else
                f"{name}: its worker sent no heartbeat for {self.settings.lease_seconds:g}s, so its lease expired")
        call = next((c for c in rec.tool_calls if c.tool_use_id == step.tool_use_id), None) \
            if step.kind is StepKind.TOOL else None
        if call is not None and call.status is not ToolCallStatus.DONE and not get_tool(call.name).idempotent:
            self._add(tx, SystemEntry(session_id=rec.id, subtype="warning", step_id=step.id,
                                      content=f"{lost}: its outcome is unknown, not re-run."))
            self._finish_step(tx, step)
            self._add_tool_result(tx, call.tool_use_id, ToolOutput(
                content=UNKNOWN_OUTCOME.format(tool=call.name), is_error=True,
                display="outcome unknown (its worker was lost); not re-run"), step_id=step.id)
            call.status = ToolCallStatus.DONE
            self._advance_tools(tx)
            return
        if step.attempt >= self.settings.max_attempts:
            self._fail(tx, step, f"{lost}; it failed after {step.attempt} attempts, its worker stopping each time.")
            return
        step.status = StepStatus.PENDING
        step.owner = None
        step.error = f"{lost} (attempt {step.attempt})"
        self._add(tx, SystemEntry(session_id=rec.id, subtype="warning", step_id=step.id,
                                  content=f"{lost} (attempt {step.attempt}); running it again on another worker."))
        tx.steps.append(step)
        tx.dispatch.append(step)
        tx.leases[step.id] = (step, time.time() + self.settings.pickup_timeout_seconds)

    # ================================================================== run logic

    def _start_run(self, tx: _Tx, prompt: str) -> None:
        rec = tx.rec
        rec.run_started_at = time.time()
        rec.run_turns = 0
        rec.run_api_ms = 0
        rec.run_usage = Usage()
        rec.run_cost_usd = 0.0
        _reset_run_figures(rec)
        rec.tool_calls = []
        rec.run_denials = []
        rec.run_wrote_memory = False
        rec.last_error = None
        if not rec.title:
            rec.title = _title(prompt)
        if self.hold_prompt(tx, prompt):  # its session hooks run first, in a hook step
            return
        self._add_prompt(tx, prompt)
        self._fire(tx, "submit")
        self._next_model_call(tx)

    def _add_prompt(self, tx: _Tx, prompt: str) -> None:
        entry = UserEntry(session_id=tx.rec.id, message=Message(role="user", content=prompt))
        self._add(tx, entry)
        tx.rec.run_prompt_uuid = entry.uuid
        tx.rec.context_added += estimate_tokens(prompt)

    def _fan_out(self, tx: _Tx, tool_uses) -> None:
        """Check every tool call (input, permission); dispatch the first batch, or ask.

        Consecutive read-only calls form one batch that runs in parallel; each
        mutating call is a batch of its own, so they run in the order given. A
        call that asks holds every batch until a person (or a timeout) decides;
        no worker waits meanwhile.
        """
        rec = tx.rec
        calls: list[ToolCall] = []
        refused: list[tuple[str, ToolOutput]] = []
        asked: list[PermissionRequest] = []
        batch, prev_read_only = -1, False
        for tu in tool_uses:
            try:
                tool = get_tool(tu.name)
                if tool.memory_tool and not (rec.auto_memory and rec.project_id):
                    raise ToolInputError(f"{tu.name} is not available: auto-memory is off for this session.")
                if rec.tools is not None and tu.name not in rec.tools:
                    raise ToolInputError(f"{tu.name} is not available in this session; its tools are: "
                                         f"{', '.join(rec.tools) or 'none'}.")
                validate_input(tu.name, tu.input)
            except ToolInputError as exc:
                refused.append((tu.id, ToolOutput(content=str(exc), is_error=True, display=str(exc)[:120])))
                continue
            perm = decide(tool, tu.input, rec)
            if tool.inline and perm.decision is Decision.ALLOW:  # TodoWrite: applied here, with the reply
                refused.append((tu.id, self._run_inline(rec, tool, tu.input)))
                continue
            if perm.decision is Decision.DENY:
                refused.append((tu.id, ToolOutput(content=perm.reason, is_error=True, display=perm.display)))
                rec.run_denials.append(_denial(tu.name, tu.id, tu.input))
                self._add(tx, PermissionDecisionEntry(
                    session_id=rec.id, tool_use_id=tu.id, tool=tu.name, decision="deny",
                    decided_by="rule" if perm.rule else "mode", reason=perm.source))
                continue
            if not (tool.read_only and prev_read_only):
                batch += 1
            prev_read_only = tool.read_only
            call = ToolCall(tool_use_id=tu.id, name=tu.name, input=tu.input, batch=batch)
            if perm.decision is Decision.ASK and rec.hooks.for_event(HookEvent.PRE_TOOL_USE, tu.name):
                call.hooks_pending = True  # its hooks run first, on the tools worker; they may allow or deny it
            elif perm.decision is Decision.ASK:
                call.status = ToolCallStatus.AWAITING_APPROVAL
                asked.append(self._request(rec, call, tu.input, perm.reason or perm.source))
            elif perm.rule:
                self._add(tx, PermissionDecisionEntry(
                    session_id=rec.id, tool_use_id=tu.id, tool=tu.name, decision="allow", decided_by="rule",
                    reason=perm.source))
            calls.append(call)
        rec.tool_calls = calls
        rec.current_batch = -1
        for tool_use_id, output in refused:
            self._add_tool_result(tx, tool_use_id, output)
        if asked:
            self._ask(tx, asked)
            return
        self._fire(tx, "tools_requested")
        self._advance_tools(tx)

    def _run_inline(self, rec: SessionRecord, tool, tool_input: dict) -> ToolOutput:
        """A tool that needs no worker (TodoWrite): its effect on the record and its result, at once."""
        return tool.apply(rec, validate_input(tool.name, tool_input))

    def _request(self, rec: SessionRecord, call: ToolCall, tool_input: dict, reason: str) -> PermissionRequest:
        """The durable question about ``call`` (run with ``tool_input``) for a person."""
        return PermissionRequest(
            id=_request_id(rec), tool_use_id=call.tool_use_id, tool=call.name, input=tool_input, epoch=rec.epoch,
            summary=summary(call.name, tool_input), reason=reason, always=always_rules(call.name, tool_input),
            expires_at=(time.time() + rec.approval_timeout_seconds) if rec.approval_timeout_seconds else None,
        )

    def _ask(self, tx: _Tx, asked: list[PermissionRequest]) -> None:
        """Put the session in ``awaiting_permission`` with these questions; no worker waits."""
        rec = tx.rec
        rec.permission_requests = rec.permission_requests[-(KEEP_REQUESTS - len(asked)):] + asked
        self._fire(tx, "approval_needed")
        self.notify_permission(tx, asked)
        for req in asked:
            self._add(tx, PermissionRequestEntry(
                session_id=rec.id, request_id=req.id, tool_use_id=req.tool_use_id, tool=req.tool,
                input=req.input, summary=req.summary, reason=req.reason, expires_at=req.expires_at,
                always=req.always, kind=req.kind, callbacks=req.callbacks, hook_input=req.hook_input))
            if req.expires_at:
                tx.approval_deadlines[keys.lease_member(rec.id, req.id)] = req.expires_at

    def _advance_tools(self, tx: _Tx) -> None:
        """Dispatch the current batch's waiting calls; when it is done, the next batch; after the last, the model.

        A call of the current batch may wait again (its PreToolUse hook asked; it was approved since).
        """
        rec = tx.rec
        while True:
            batch = [c for c in rec.tool_calls if c.batch == rec.current_batch]
            for call in batch:
                if call.status is ToolCallStatus.WAITING:
                    step = self._new_step(tx, StepKind.TOOL, tool_use_id=call.tool_use_id)
                    call.step_id = step.id
                    call.status = ToolCallStatus.DISPATCHED
            if any(c.status is not ToolCallStatus.DONE for c in batch):
                return
            rec.current_batch += 1
            if not any(c.batch >= rec.current_batch for c in rec.tool_calls):
                rec.tool_calls = []
                self._fire(tx, "tools_finished")
                self._next_model_call(tx)
                return

    # ================================================================== permission decisions

    def decide_request(self, sid: str, request: str | None, approve: bool, *, always: bool = False,
                       message: str | None = None, by: str = "user",
                       updated_input: dict | None = None) -> list[StepRecord]:
        """Approve or deny a pending permission request (``request``: id, prefix, or None for the only one).

        ``updated_input``: the approver's changed input for the call (an SDK client's ``updatedInput``);
        it must be valid for the tool, and it is checked again where the call runs (a deny rule
        still refuses it).

        Raises:
            RequestNotFound: no such request, or several pending and none named.
            RequestClosed: already decided, or superseded by a cancel.
            ToolInputError: ``updated_input`` is not valid input for the tool.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            req = find_request(rec, request)
            if approve and updated_input is not None and updated_input != req.input:
                validate_input(req.tool, updated_input)
                req.input = updated_input
                call = next(c for c in rec.tool_calls if c.tool_use_id == req.tool_use_id)
                call.input = updated_input
            tx = _Tx(rec)
            self._settle(tx, req, approve, by=by, message=message, always=always)
            if approve and always:
                for other in rec.pending_requests():
                    perm = decide(get_tool(other.tool), other.input, rec)
                    if perm.decision is Decision.ALLOW:
                        self._settle(tx, other, True, by="rule", reason=perm.source)
            self._fire(tx, "permission_decided")
            if rec.state is State.RUNNING_TOOLS:
                self._advance_tools(tx)
            self._commit(tx)
        return tx.dispatch

    def expire_approvals(self, now: float | None = None) -> list[StepRecord]:
        """Deny every request whose approval timeout has passed; return the steps that follow."""
        now = now or time.time()
        out: list[StepRecord] = []
        for sid, request_id in self.store.due_approvals(now):
            try:
                out.extend(self.decide_request(sid, request_id, False, by="timeout"))
            except (RequestClosed, RequestNotFound, SessionNotFound):
                self.store.r.zrem(keys.approvals(), keys.lease_member(sid, request_id))
        return out

    def _settle(self, tx: _Tx, req: PermissionRequest, approve: bool, *, by: str, message: str | None = None,
                always: bool = False, reason: str = "") -> None:
        rec = tx.rec
        req.status = RequestStatus.APPROVED if approve else RequestStatus.DENIED
        req.decided_by = by
        req.decided_at = time.time()
        req.message = message
        tx.approvals_cleared.append(keys.lease_member(rec.id, req.id))
        call = next(c for c in rec.tool_calls if c.tool_use_id == req.tool_use_id)
        added: list[str] = []
        if approve and req.kind == "hook":  # skip the client's callbacks; the permission is decided as usual
            call.status = ToolCallStatus.WAITING
            call.client_hook_runs = call.client_hook_runs or []
        elif approve:
            call.status = ToolCallStatus.WAITING
            call.approved_by = by if by != "rule" else None
            if always:  # exactly the rules the person was shown
                for rule in req.always:
                    rec.rules.add("allow", rule, "session")
                    added.append(rule)
        else:
            if by == "timeout":
                text = (f"Permission to use {call.name} was denied: nobody answered within "
                        f"{rec.approval_timeout_seconds:g} seconds. Continue without it, or ask the user.")
            else:
                text = DENIED_BY_USER.format(tool=call.name)
                if message:
                    text += f" To tell you how to proceed, the user said:\n{message}"
            self._add_tool_result(tx, call.tool_use_id, ToolOutput(
                content=text, is_error=True,
                display=f"denied ({by})" + (f": {message}" if message else "")))
            call.status = ToolCallStatus.DONE
            rec.run_denials.append(_denial(call.name, call.tool_use_id, call.input))
        self._add(tx, PermissionDecisionEntry(
            session_id=rec.id, request_id=req.id, tool_use_id=req.tool_use_id, tool=req.tool,
            decision="allow" if approve else "deny", decided_by=by, reason=reason, message=message,
            rules_added=added))

    def _next_model_call(self, tx: _Tx) -> None:
        rec = tx.rec
        if rec.max_turns is not None and rec.run_turns >= rec.max_turns:
            self._fire(tx, "halt")
            self._add_result(tx, "error_max_turns", f"Stopped after reaching the turn limit ({rec.max_turns}).")
            self._after_idle(tx)
            return
        if rec.max_budget_usd is not None and (rec.run_cost_usd is None or rec.run_cost_usd >= rec.max_budget_usd):
            # An unknown cost cannot be held to a budget: stop rather than spend blind.
            spent = (f"spending ${rec.run_cost_usd:.4f} of" if rec.run_cost_usd is not None else
                     f"a call of a model without a price ({', '.join(rec.unpriced_models)}): the cost against")
            self._fire(tx, "halt")
            self._add_result(tx, "error_max_budget_usd", f"Stopped after {spent} the ${rec.max_budget_usd:g} budget.")
            self._after_idle(tx)
            return
        limits = thresholds(rec.sent_model(), self.settings.autocompact_pct_override)
        if (self.settings.auto_compact and not rec.auto_compact_off
                and self.context_size(rec) >= limits.auto_compact):
            self._begin_compaction(tx, "auto")
            return
        self._new_step(tx, StepKind.MODEL)

    # ================================================================== compaction

    def _begin_compaction(self, tx: _Tx, trigger: str, instructions: str | None = None) -> None:
        rec = tx.rec
        rec.compact_trigger = trigger
        rec.compact_instructions = instructions
        self._fire(tx, "compact" if trigger == "manual" else "compaction_needed")
        if not self.pre_compact_gate(tx):
            self._new_step(tx, StepKind.COMPACT)

    def record_compaction(self, sid: str, step_id: str, owner: str, summary: str, *, source: str,
                          usage: Usage | None = None, duration_ms: int = 0, keep: list[str] = (),
                          kept_tokens: int = 0) -> list[StepRecord]:
        """Commit a compaction: a boundary and the summary; then the model call (auto) or idle (manual)."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            self._finish_step(tx, step)
            rec = tx.rec
            if usage is not None:
                self._charge(tx, usage, duration_ms)
            before = self.context_size(rec)
            trigger = rec.compact_trigger or "auto"
            preserved = [rec.run_prompt_uuid] if trigger == "auto" and rec.run_turns == 0 and rec.run_prompt_uuid \
                else []
            preserved = list(dict.fromkeys([*preserved, *keep]))  # the messages the notes do not cover yet
            self._add(tx, CompactBoundaryEntry(session_id=sid, trigger=trigger, pre_tokens=before, source=source,
                                               preserved=preserved, step_id=step.id))
            self._add(tx, SummaryEntry(session_id=sid, summary=summary, step_id=step.id))
            rec.context_tokens = (estimate_tokens(summary) + estimate_tokens(rec.system_context + rec.user_context)
                                  + kept_tokens)
            rec.context_added = 0
            rec.compact_failures = 0
            if rec.memory_tokens is not None:  # growth counts from the compacted size
                rec.memory_tokens = rec.context_tokens
            if trigger == "manual":
                rec.auto_compact_off = False
            self._compaction_done(tx, f"Compacted {before:,} tokens into a summary of about "
                                      f"{rec.context_tokens:,}.")

        return self._step_event(sid, step_id, owner, apply)

    def record_compaction_failure(self, sid: str, step_id: str, owner: str, error: str) -> list[StepRecord]:
        """A compaction failed: count it (the circuit breaker), then go on without it or stop."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            step.status = StepStatus.FAILED
            step.error = error
            tx.steps.append(step)
            tx.cleared.append(step)
            rec = tx.rec
            rec.compact_failures += 1
            self._add(tx, SystemEntry(session_id=sid, subtype="warning", step_id=step.id,
                                      content=f"Compaction failed ({rec.compact_failures} in a row): {error}"))
            if rec.compact_failures >= self.settings.compact_max_failures and not rec.auto_compact_off:
                rec.auto_compact_off = True
                self._add(tx, SystemEntry(session_id=sid, subtype="error", content=(
                    f"Auto-compact failed {rec.compact_failures} times in a row, so it is off for this session. "
                    f"Run /compact (or `mainsail compact {sid[:8]}`) to try again.")))
            self._compaction_done(tx, f"Compaction failed: {error}", failed=True)

        return self._step_event(sid, step_id, owner, apply)

    def _compaction_done(self, tx: _Tx, text: str, failed: bool = False) -> None:
        rec = tx.rec
        manual = rec.compact_trigger == "manual"
        self._fire(tx, "compacted")
        rec.compact_trigger = None
        rec.compact_instructions = None
        restart = not failed and self.restart_gate(tx, "compact")  # SessionStart(compact): now, or at the next prompt
        if manual:
            self._add_result(tx, "error_during_execution" if failed else "success", text)
            self._after_idle(tx)
        elif restart:
            self._new_step(tx, StepKind.HOOK, event="SessionStart")  # then the model call
        else:
            self._new_step(tx, StepKind.MODEL)  # never another compaction: it goes on, over the threshold or not

    def _end_run(self, tx: _Tx, text: str | None = None) -> None:
        """The model answered: the result (``text``, else the answer in ``tx``), then memory or idle."""
        self._fire(tx, "answered")
        for e in reversed(tx.entries if text is None else []):
            if isinstance(e, AssistantEntry):
                text = e.message.text()
                break
        text = text or ""
        self._add_result(tx, "success", text)
        result = tx.entries[-1]
        if tx.rec.state is State.EXTRACTING:
            self._begin_extraction(tx)
            result.memory_saving = bool(tx.rec.extract_step or tx.rec.memory_step)
        else:
            self._after_idle(tx)

    def _after_idle(self, tx: _Tx) -> None:
        """The session is idle: the oldest queued message, if any, starts the next run."""
        queued = self.store.inbox(tx.rec.id)
        if tx.rec.state is State.IDLE and len(queued) > tx.inbox_pops:
            prompt = queued[tx.inbox_pops]
            tx.inbox_pops += 1
            self._start_run(tx, prompt)

    def _fail(self, tx: _Tx, step: StepRecord, error: str) -> None:
        if step.background and step.kind is StepKind.HOOK:
            self.background_hook_failed(tx, step, error)
            return
        if step.background:
            self._fork_failed(tx, step, error)
            return
        step.status = StepStatus.FAILED
        step.error = error
        tx.steps.append(step)
        tx.cleared.append(step)
        tx.rec.last_error = error
        self._add(tx, SystemEntry(session_id=tx.rec.id, subtype="error", content=error, step_id=step.id))
        self._abort_run(tx, "fail", "error_during_execution", error)

    def _abort_run(self, tx: _Tx, trigger: str, subtype: str, reason: str) -> None:
        """End the run early: newer epoch, every dangling tool call closed, back to idle."""
        rec = tx.rec
        rec.epoch += 1
        for req in rec.pending_requests():
            req.status = RequestStatus.SUPERSEDED
            tx.approvals_cleared.append(keys.lease_member(rec.id, req.id))
        for call in rec.tool_calls:
            if call.status is not ToolCallStatus.DONE:
                self._add_tool_result(tx, call.tool_use_id, ToolOutput(content=INTERRUPTED, is_error=True,
                                                                       display="interrupted"))
        rec.tool_calls = []
        self._fire(tx, trigger)
        self._add_result(tx, subtype, reason, is_error=True)
        self._after_idle(tx)  # the inbox is a queue: a cancel or a failure does not drop it

    # ================================================================== memory forks

    def _maybe_update_session_memory(self, tx: _Tx, tool_calls: int) -> None:
        """After a model turn: ask for a session-memory update when the thresholds say so."""
        rec, st = tx.rec, self.settings
        if not st.session_memory:
            return
        rec.memory_tool_calls += tool_calls
        tokens = self.context_size(rec)
        limits = MemoryThresholds(st.session_memory_init_tokens, st.session_memory_update_tokens,
                                  st.session_memory_tool_calls)
        if not should_update_session_memory(tokens, rec.memory_tokens, rec.memory_tool_calls, tool_calls > 0,
                                            limits):
            return
        rec.memory_tokens = tokens
        rec.memory_tool_calls = 0
        self._request_fork(tx, StepKind.MEMORY)

    def _request_fork(self, tx: _Tx, kind: StepKind) -> None:
        """Start a memory fork of ``kind``, or, while one runs, ask for one trailing run after it.

        The slot in the session record (``memory_step`` / ``extract_step``) is the
        fork's lock: written under the session lock, released by its commit or
        its failure, so two forks of a kind never run at once; a trailing run
        reads the transcript when it starts, so only the latest request counts.
        """
        rec = tx.rec
        if kind is StepKind.MEMORY:
            if rec.memory_step:
                rec.memory_trailing = True
            else:
                rec.memory_step = self._new_step(tx, kind).id
        else:
            if rec.extract_step:
                rec.extract_trailing = True
            else:
                rec.extract_step = self._new_step(tx, kind).id

    def _begin_extraction(self, tx: _Tx) -> None:
        """A final answer: extract durable memories from the turn (the session waits in ``extracting``)."""
        rec = tx.rec
        if rec.run_wrote_memory:
            rec.extract_cursor = rec.last_uuid
            self._add(tx, SystemEntry(session_id=rec.id, subtype="memory", content=(
                "Memory was written directly in this turn, so the memory extraction is skipped.")))
            self._leave_extracting(tx)
            return
        self._request_fork(tx, StepKind.EXTRACT)
        if len(self.store.inbox(rec.id)) > tx.inbox_pops:
            self._leave_extracting(tx)  # a message is waiting: it runs now, the extraction beside it

    def _leave_extracting(self, tx: _Tx) -> None:
        self._fire(tx, "extracted")
        self._after_idle(tx)

    def save_fork_checkpoint(self, sid: str, step_id: str, owner: str, data: str) -> bool:
        """Save a memory fork's progress; False when the step is no longer ``owner``'s to run."""
        with self.store.lock(sid):
            try:
                _, step, _ = self.store.load_step(sid, step_id)
            except (SessionNotFound, StepNotFound):
                return False
            if step.status is not StepStatus.RUNNING or step.owner != owner:
                return False
            self.store.save_fork_checkpoint(sid, step_id, data)
        return True

    def record_session_memory(self, sid: str, step_id: str, owner: str, doc: str | None, *, covers: str | None,
                              usage: Usage, duration_ms: int) -> list[StepRecord]:
        """Commit a session-memory update: the document, once; then a trailing update if one was asked for."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            self._finish_step(tx, step)
            rec = tx.rec
            cost = self._charge(tx, usage, duration_ms, run=False)
            if has_content(doc):
                tx.memory_doc = doc
                rec.memory_updates += 1
                rec.memory_covers = covers
                text = f"Session memory updated ({len(doc):,} characters; update {rec.memory_updates})."
            else:
                text = "Session memory unchanged: the update made no edit."
            self._add(tx, SystemEntry(session_id=sid, subtype="memory", content=text, step_id=step.id,
                                      usage=usage, cost_usd=cost))
            self._fork_done(tx, step)

        return self._step_event(sid, step_id, owner, apply)

    def record_extraction(self, sid: str, step_id: str, owner: str, *, puts: list[MemoryRecord],
                          deletes: list[str], start_cursor: str | None, until: str | None, usage: Usage,
                          duration_ms: int) -> list[StepRecord]:
        """Commit an extraction: its record writes in the same MULTI as the step's end (never twice)."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            self._finish_step(tx, step)
            rec = tx.rec
            cost = self._charge(tx, usage, duration_ms, run=False, kind="extract")
            tx.records_put = puts
            tx.records_deleted = deletes
            if rec.extract_cursor == start_cursor:  # a direct write since may have moved it further on
                rec.extract_cursor = until
            parts = []
            if puts:
                parts.append(f"saved {len(puts)} memor{'y' if len(puts) == 1 else 'ies'}: "
                             + ", ".join(f"{r.name} ({r.type})" for r in puts))
            if deletes:
                parts.append("deleted " + ", ".join(deletes))
            text = ("Memory extraction " + "; ".join(parts) + ".") if parts else "Memory extraction: nothing new to save."
            self._add(tx, SystemEntry(session_id=sid, subtype="memory", content=text, step_id=step.id,
                                      usage=usage, cost_usd=cost))
            self._fork_done(tx, step)

        return self._step_event(sid, step_id, owner, apply)

    def record_fork_failure(self, sid: str, step_id: str, owner: str, error: str) -> list[StepRecord]:
        """A memory fork failed for good: say so; the session goes on (memory is never worth stopping for)."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            self._fork_failed(tx, step, error)

        return self._step_event(sid, step_id, owner, apply)

    def _fork_failed(self, tx: _Tx, step: StepRecord, error: str) -> None:
        step.status = StepStatus.FAILED
        step.error = error
        tx.steps.append(step)
        tx.cleared.append(step)
        what = "Session-memory update" if step.kind is StepKind.MEMORY else "Memory extraction"
        self._add(tx, SystemEntry(session_id=tx.rec.id, subtype="warning", step_id=step.id,
                                  content=f"{what} failed: {error}"))
        self._fork_done(tx, step)

    def _fork_done(self, tx: _Tx, step: StepRecord) -> None:
        """Release the fork's slot; start the trailing run, or let a session waiting in ``extracting`` go."""
        rec = tx.rec
        tx.checkpoints_cleared.append(step.id)
        if step.kind is StepKind.MEMORY:
            if rec.memory_step == step.id:
                rec.memory_step = None
            if rec.memory_trailing and rec.memory_step is None:
                rec.memory_trailing = False
                self._request_fork(tx, StepKind.MEMORY)
            return
        if rec.extract_step == step.id:
            rec.extract_step = None
        if rec.extract_trailing and rec.extract_step is None:
            rec.extract_trailing = False
            self._request_fork(tx, StepKind.EXTRACT)
        elif rec.state is State.EXTRACTING and rec.extract_step is None:
            self._leave_extracting(tx)

    # ================================================================== helpers

    def _step_event(self, sid: str, step_id: str, owner: str,
                    apply: Callable[[_Tx, StepRecord], None]) -> list[StepRecord]:
        """The commit of a step's outcome: under the lock, fenced, ``apply``, one MULTI/EXEC; the steps to send.

        A late or duplicate delivery (the step is not ``owner``'s running step, or is
        of an older epoch) changes nothing and returns no steps.
        """
        with self.store.lock(sid):
            tx, step = self._fenced(sid, step_id, owner)
            if tx is None:
                return []
            apply(tx, step)
            self._commit(tx)
        return tx.dispatch

    def _fenced(self, sid: str, step_id: str, owner: str) -> tuple[_Tx | None, StepRecord | None]:
        try:
            rec, step, _ = self.store.load_step(sid, step_id)
        except (SessionNotFound, StepNotFound):  # removed while it ran: nothing to record
            return None, None
        if step.status is not StepStatus.RUNNING or step.owner != owner:
            return None, step
        if _stale(step, rec):
            tx = _Tx(rec)
            self._supersede(tx, step)
            self._commit(tx)
            return None, step
        return _Tx(rec), step

    def _finish_step(self, tx: _Tx, step: StepRecord) -> None:
        step.status = StepStatus.DONE
        tx.steps.append(step)
        tx.cleared.append(step)

    def _supersede(self, tx: _Tx, step: StepRecord) -> None:
        step.status = StepStatus.SUPERSEDED
        tx.steps.append(step)
        tx.cleared.append(step)

    def _new_step(self, tx: _Tx, kind: StepKind, tool_use_id: str | None = None,
                  event: str | None = None, detail: str | None = None) -> StepRecord:
        queue = tx.rec.tools_queue if kind in (StepKind.TOOL, StepKind.HOOK) else QUEUE_FOR_KIND[kind]
        step = StepRecord(id=new_id(), session_id=tx.rec.id, kind=kind, epoch=tx.rec.epoch,
                          queue=queue, tool_use_id=tool_use_id, event=event, detail=detail)
        tx.steps.append(step)
        tx.dispatch.append(step)
        tx.leases[step.id] = (step, time.time() + self.settings.pickup_timeout_seconds)
        return step

    def _fire(self, tx: _Tx, trigger: str) -> None:
        rec = tx.rec
        snap = Snapshot(auto_memory=rec.auto_memory and rec.project_id is not None,
                        manual_compaction=rec.compact_trigger == "manual",
                        permissions_pending=len(rec.pending_requests()))
        dest = next_state(rec.state, trigger, snap)
        self._add(tx, StateEntry(session_id=rec.id, trigger=trigger, source=rec.state, dest=dest))
        rec.state = dest

    def _add(self, tx: _Tx, entry) -> None:
        rec = tx.rec
        entry.parent_uuid = rec.last_uuid
        entry.cwd = rec.workspace
        entry.git_branch = rec.git_branch
        rec.last_uuid = entry.uuid
        tx.entries.append(entry)

    def _add_tool_result(self, tx: _Tx, tool_use_id: str, output: ToolOutput, step_id: str | None = None) -> None:
        block = ToolResultBlock(tool_use_id=tool_use_id, content=output.content, is_error=output.is_error)
        tx.rec.context_added += estimate_tokens(output.content)
        self._add(tx, UserEntry(session_id=tx.rec.id, message=Message(role="user", content=[block]),
                                origin="tool_result", display=output.display or None, step_id=step_id))

    def _add_result(self, tx: _Tx, subtype: str, text: str, is_error: bool = False) -> None:
        rec = tx.rec
        self._add(tx, ResultEntry(
            session_id=rec.id, subtype=subtype, is_error=is_error or subtype != "success", result=text,
            num_turns=rec.run_turns, duration_ms=int((time.time() - rec.run_started_at) * 1000),
            duration_api_ms=rec.run_api_ms, usage=rec.run_usage, total_cost_usd=rec.run_cost_usd,
            permission_denials=list(rec.run_denials),
            usage_by_model=dict(rec.run_usage_by_model), cost_by_model=dict(rec.run_cost_by_model),
            memory_usage=rec.run_memory_usage, memory_cost_usd=rec.run_memory_cost_usd,
            memory_saving=rec.saving_memory(), session_usage=rec.usage, session_cost_usd=rec.cost_usd,
        ))

    def _step_name(self, rec: SessionRecord, step: StepRecord) -> str:
        if step.kind is StepKind.TOOL:
            call = next((c for c in rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
            return f"Tool step {step.id[:8]} ({call.name if call else 'tool'})"
        return f"{step.kind.value.capitalize()} step {step.id[:8]}"

    def _commit(self, tx: _Tx) -> None:
        s = self.store
        p = s.pipeline()
        s.save_session(tx.rec, p)
        s.append(tx.rec.id, tx.entries, p)
        for step in tx.steps:
            s.put_step(step, p)
        for step in tx.cleared:
            if step.id not in tx.leases:
                s.clear_deadline(step, p)
        for step, deadline in tx.leases.values():
            s.set_deadline(step, deadline, p)
        for _ in range(tx.inbox_pops):
            p.lpop(keys.inbox(tx.rec.id))
        for member in tx.approvals_cleared:
            p.zrem(keys.approvals(), member)
        if tx.approval_deadlines:
            p.zadd(keys.approvals(), tx.approval_deadlines)
        if tx.memory_doc is not None:
            p.set(keys.session_memory(tx.rec.id), tx.memory_doc)
        if tx.records_put or tx.records_deleted:
            project = ProjectMemory(s.r, tx.rec.project_id, tx.rec.project_root)
            for record in tx.records_put:
                project.put(record, p)
            for name in tx.records_deleted:
                project.delete(name, p)
        for step_id in tx.checkpoints_cleared:
            p.delete(keys.fork_checkpoint(tx.rec.id, step_id))
        if tx.rec.state is State.AWAITING_PERMISSION:
            p.zadd(keys.awaiting(), {tx.rec.id: time.time()}, nx=True)
        else:
            p.zrem(keys.awaiting(), tx.rec.id)
        p.execute()


def _reset_run_figures(rec: SessionRecord) -> None:
    """A new run counts its own per-model and memory figures (``run_usage``/``run_cost_usd`` too)."""
    rec.run_usage_by_model = {}
    rec.run_cost_by_model = {}
    rec.run_memory_usage = Usage()
    rec.run_memory_cost_usd = 0.0


def _add_to(usages: dict[str, Usage], costs: dict[str, float | None], key: str, usage: Usage,
            cost: float | None) -> None:
    usages[key] = usages.get(key, Usage()) + usage
    costs[key] = add_cost(costs.get(key, 0.0), cost)


#: Tools whose success means the main agent saved memory itself (the turn's extraction is skipped).
MEMORY_WRITERS = frozenset({"MemoryWrite", "MemoryDelete"})


def _stale(step: StepRecord, rec: SessionRecord) -> bool:
    """A step of an older epoch (a cancel came since); memory forks run beside turns and never go stale."""
    return not step.background and step.epoch != rec.epoch


KEEP_REQUESTS = 50  # decided requests kept in the record, so a late approve gets a clear answer

DENIED_BY_USER = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected "
    "(eg. if it was a file edit, the new_string was NOT written to the file). Permission to use {tool} "
    "was denied."
)


def _denial(tool: str, tool_use_id: str, tool_input: dict) -> dict:
    return {"tool_name": tool, "tool_use_id": tool_use_id, "tool_input": tool_input}


def _request_id(rec: SessionRecord) -> str:
    taken = {r.id for r in rec.permission_requests}
    while True:
        rid = new_id().replace("-", "")[:8]
        if rid not in taken:
            return rid


def find_request(rec: SessionRecord, request: str | None) -> PermissionRequest:
    """The request named by id or unique prefix; with None, the only pending one."""
    sid = rec.id[:8]
    if not request:
        pending = rec.pending_requests()
        if len(pending) == 1:
            return pending[0]
        if not pending:
            raise RequestNotFound(f"Session {sid} has no pending permission request (it is {rec.state.value}).")
        listing = ", ".join(f"{r.id} ({r.tool}: {r.summary})" for r in pending)
        raise RequestNotFound(f"Session {sid} has {len(pending)} pending requests; name one: {listing}")
    matches = [r for r in rec.permission_requests if r.id.startswith(request)]
    if not matches:
        raise RequestNotFound(f"Session {sid} has no permission request {request!r}. "
                              f"See `mainsail pending`.")
    if len(matches) > 1:
        raise RequestNotFound(f"Request prefix {request!r} matches {len(matches)} requests of session {sid}: "
                              + ", ".join(r.id for r in matches))
    req = matches[0]
    if req.status is RequestStatus.SUPERSEDED:
        raise RequestClosed(f"Request {req.id} of session {sid} ({req.tool}: {req.summary}) was superseded "
                            "by a cancel; there is nothing to decide.")
    if req.status is not RequestStatus.PENDING:
        when = datetime.fromtimestamp(req.decided_at or 0, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        raise RequestClosed(f"Request {req.id} of session {sid} ({req.tool}: {req.summary}) was already "
                            f"{req.status.value} by {req.decided_by} at {when}.")
    return req


def require_idle(rec: SessionRecord, action: str) -> None:
    if rec.state is not State.IDLE:
        raise SessionBusy(f"Cannot {action} session {rec.id[:8]}: it is {rec.state.value}. "
                          f"Wait for it, or `mainsail cancel {rec.id[:8]}`.")


def _title(prompt: str) -> str:
    line = " ".join(prompt.split())
    return line if len(line) <= 60 else line[:57] + "..."


def _git_branch(path: str) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=path, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
