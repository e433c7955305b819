"""The fenced-commit primitive every event goes through, and the helpers that fill a transaction.

A part of :class:`workflows.engine.Engine` (a mixin); see :mod:`workflows.engine.commit` for the
commit every event goes through.
"""

from __future__ import annotations

import time
import uuid
from typing import Callable

from statemachines import Snapshot, State, next_state
from workflows import keys
from workflows.engine.support import (
    CLAIMS_KEPT,
    LIST_SECONDS,
    MAX_CONFLICTS,
    QUEUE_FOR_KIND,
    CommitConflict,
    _stale,
    _Tx,
)
from workflows.exceptions import (
    LockTimeout,
    SessionNotFound,
    StepNotFound,
)
from workflows.fenced import Recorder
from workflows.metrics import STEP_BUCKETS, TALLY
from workflows.models import (
    Message,
    ResultEntry,
    SessionRecord,
    StateEntry,
    StepKind,
    StepRecord,
    StepStatus,
    ToolResultBlock,
    UserEntry,
    new_id,
)
from workflows.registry import hold_value
from workflows.settings import Settings
from workflows.store import Store
from workflows.tokens import estimate_tokens, media_tokens
from workflows.tools.base import ToolOutput


class CommitCore:
    """The fenced-commit primitive every event goes through, and the helpers that fill a transaction."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        #: (session, step, owner) -> the record and step JSON as this process's claim (or commit) left them.
        self._claimed: dict[tuple[str, str, str], tuple[bytes | str, bytes | str]] = {}
        #: owner -> (which follow-up steps this worker runs itself, its registered name): see :meth:`keep_next`.
        self._keeping: dict[str, tuple[Callable[[StepRecord], bool], str]] = {}
        #: owner -> the follow-up step its commit claimed for this worker, and the new claim's owner token.
        self._kept: dict[str, tuple[StepRecord, str]] = {}
        #: owner token of a step claimed by a commit -> (field, value) of its hold in the worker's held steps
        #: (a slot it took over from the step before it; see workflows/registry.py).
        self._holds: dict[str, tuple[str, str]] = {}

    def _step_event(self, sid: str, step_id: str, owner: str,
                    apply: Callable[[_Tx, StepRecord], None]) -> list[StepRecord]:
        """The commit of a step's outcome: read, fenced, ``apply``, one atomic write; the steps to send.

        The record and step come from the claim when this process made it (no read), else from
        Redis. A late or duplicate delivery (the step is not ``owner``'s running step, or is of an
        older epoch) changes nothing and returns no steps. When another event committed first (a
        parallel tool, a memory fork, a person's command), ``apply`` runs again on what it wrote.
        """
        loaded = self._claimed.pop((sid, step_id, owner), None)
        try:
            rec, step = ((SessionRecord.model_validate_json(loaded[0]), StepRecord.model_validate_json(loaded[1]))
                         if loaded else self._load_step(sid, step_id))
        except (SessionNotFound, StepNotFound):  # removed while it ran: nothing to record
            return []
        for _ in range(MAX_CONFLICTS):
            if step.status is not StepStatus.RUNNING or step.owner != owner:
                return []
            tx = _Tx(rec, fence=(step.id, StepStatus.RUNNING.value, owner))
            stale = _stale(step, rec)
            if stale:
                self._supersede(tx, step)
            else:
                apply(tx, step)
            try:
                self._commit(tx)
            except CommitConflict as conflict:
                rec, step = conflict.session, conflict.step
                continue
            except (SessionNotFound, StepNotFound):
                return []
            if stale:
                return []
            if step.status is StepStatus.RUNNING:  # its next event (a tool after its hooks) needs no read
                self._remember_claim(tx.written, step)
            return tx.dispatch
        raise LockTimeout(f"Session {sid} changed {MAX_CONFLICTS} times while step {step_id[:8]} committed; "
                          "try again.")

    def _load_step(self, sid: str, step_id: str) -> tuple[SessionRecord, StepRecord]:
        rec, step, _ = self.store.load_step(sid, step_id)
        return rec, step

    def _remember_claim(self, rec_json: bytes | str, step: StepRecord, step_json: bytes | str | None = None) -> None:
        """Keep what a claim (or a commit) of a still-running step returned, for its next event."""
        if len(self._claimed) > CLAIMS_KEPT:  # steps that never committed (their worker gave up)
            self._claimed.clear()
        if len(self._holds) > CLAIMS_KEPT:  # (a hold forgotten here is dropped by the reaper's stale-hold check)
            self._holds.clear()
        self._claimed[(step.session_id, step.id, step.owner)] = (rec_json, step_json or step.model_dump_json())

    # ------------------------------------------------------------------ steps this worker runs next

    def keep_next(self, owner: str, keep: Callable[[StepRecord], bool], worker: str) -> None:
        """The step claimed as ``owner`` runs on ``worker``, which runs itself the first step that follows
        it that ``keep`` accepts: the commit of its outcome claims that step at once, for this worker
        (running, a new owner token, a lease, among the worker's held steps), instead of sending it
        through the broker. :meth:`take_kept` gives it."""
        self._keeping[owner] = (keep, worker)

    def take_kept(self, owner: str) -> tuple[StepRecord, str, SessionRecord] | None:
        """The step the commit of ``owner``'s step claimed for this worker: (step, its owner token, the
        session as that commit left it); None when there is none."""
        self._keeping.pop(owner, None)
        kept = self._kept.pop(owner, None)
        if kept is None:
            return None
        step, token = kept
        loaded = self._claimed.get((step.session_id, step.id, token))
        if loaded is not None:
            return step, token, SessionRecord.model_validate_json(loaded[0])
        # The commit landed but its reply was lost (the step's event was then found done and nothing
        # remembered): the claim it made is in Redis, still this worker's to run unless it moved on.
        try:
            rec, stored, _ = self.store.load_step(step.session_id, step.id)
        except (SessionNotFound, StepNotFound):
            return None
        if stored.status is not StepStatus.RUNNING or stored.owner != token:
            return None
        self._remember_claim(rec.model_dump_json(), stored)
        return stored, token, rec

    def hold_of(self, owner: str, sid: str, step_id: str) -> tuple[str, str]:
        """Where the step claimed as ``owner`` is held in its worker's held steps: (field, value). Asked
        once, when the step is off the worker's hands."""
        member = keys.lease_member(sid, step_id)
        return self._holds.pop(owner, None) or (member, owner)

    def _keep(self, tx: _Tx, ops: Recorder) -> None:
        """Claim, in this commit, the follow-up step this worker runs next (see :meth:`keep_next`).

        The claimed step takes over the finished step's hold (one HSET of its field, the task's slot)
        when nothing else follows; otherwise the finished step stays held until the others are sent
        (then forgotten), and the claimed one is held under a field of its own."""
        if tx.fence is None or not tx.dispatch:
            return
        owner = tx.fence[2]
        keeping = self._keeping.get(owner)
        if keeping is None:
            return
        keep, worker = keeping
        # (never a child session's step: the claim memory holds this session's record)
        step = next((st for st in tx.dispatch if st.session_id == tx.rec.id and keep(st)), None)
        if step is None:
            return
        token = f"{owner.rsplit(':', 1)[0]}:{uuid.uuid4().hex[:8]}"
        step.status, step.owner, step.worker, step.attempt = StepStatus.RUNNING, token, worker, step.attempt + 1
        tx.dispatch.remove(step)
        tx.leases[step.id] = (step, time.time() + self.settings.lease_seconds)
        member = keys.lease_member(step.session_id, step.id)
        field = member if tx.dispatch else self._holds.get(owner, (keys.lease_member(tx.rec.id, tx.fence[0]),))[0]
        hold = (field, hold_value(field, member, token))
        ops.hset(keys.worker_steps(worker), *hold)
        self._kept[owner] = (step, token)
        self._holds[token] = hold

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
        queue = tx.rec.tools_queue if kind in (StepKind.TOOL, StepKind.HOOK, StepKind.MCP) else QUEUE_FOR_KIND[kind]
        step = StepRecord(id=new_id(), session_id=tx.rec.id, kind=kind, epoch=tx.rec.epoch,
                          queue=queue, tool_use_id=tool_use_id, event=event, detail=detail)
        tx.counts.append(lambda: TALLY.add("mainsail_steps_created_total", kind=kind.value))
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
        if tx.rec.command is not None and self.command_output(tx, tool_use_id, output):
            return  # a custom command's line: its result goes into the command's prompt (workflows.engine.commands)
        block = ToolResultBlock(tool_use_id=tool_use_id, content=output.blocks or output.content,
                                is_error=output.is_error)
        tx.rec.context_added += media_tokens(output.blocks) if output.blocks else estimate_tokens(output.content)
        self._add(tx, UserEntry(session_id=tx.rec.id, message=Message(role="user", content=[block]),
                                origin="tool_result", display=output.display or None, step_id=step_id))

    def _add_result(self, tx: _Tx, subtype: str, text: str, is_error: bool = False) -> None:
        """The run's result entry (every end of a run comes here); a sub-agent's also sends its report."""
        rec = tx.rec
        rec.command, rec.run_model, rec.run_allow = None, None, []  # a command's hold on its run ends with it
        self._add(tx, ResultEntry(
            session_id=rec.id, subtype=subtype, is_error=is_error or subtype != "success", result=text,
            num_turns=rec.run_turns, duration_ms=int((time.time() - rec.run_started_at) * 1000),
            duration_api_ms=rec.run_api_ms, usage=rec.run_usage, total_cost_usd=rec.run_cost_usd,
            permission_denials=list(rec.run_denials),
            usage_by_model=dict(rec.run_usage_by_model), cost_by_model=dict(rec.run_cost_by_model),
            memory_usage=rec.run_memory_usage, memory_cost_usd=rec.run_memory_cost_usd,
            memory_saving=rec.saving_memory(), session_usage=rec.usage, session_cost_usd=rec.cost_usd,
        ))
        if rec.parent_session_id:
            self._child_ended(tx)

    def _step_name(self, rec: SessionRecord, step: StepRecord) -> str:
        if step.kind is StepKind.TOOL:
            call = next((c for c in rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
            return f"Tool step {step.id[:8]} ({call.name if call else 'tool'})"
        if step.kind is StepKind.MCP:
            return f"MCP discovery step {step.id[:8]}"
        return f"{step.kind.value.capitalize()} step {step.id[:8]}"

    def _lists(self, tx: _Tx, now: float) -> bool:
        """Whether this commit sets the session's score in the ``sessions`` listing: a person's command,
        a session coming to rest (idle, waiting for a person), else at most every ``LIST_SECONDS`` (the
        steps of a running turn; listings and ``--continue`` see it a few seconds late at worst)."""
        if tx.fence is None or tx.rec.state in (State.IDLE, State.AWAITING_PERMISSION):
            return True
        return now - tx.rec.listed_at >= LIST_SECONDS

    def _commit(self, tx: _Tx) -> None:
        """Write everything ``tx`` holds in one atomic, fenced script call (workflows/fenced.py).

        Raises:
            CommitConflict: the session moved on since ``tx.rec`` was read (its revision), or the
                fenced step is no longer as expected; it carries what Redis holds now.
            SessionNotFound, StepNotFound: removed meanwhile.
        """
        s, rec = self.store, tx.rec
        read, listed = rec.revision, rec.listed_at
        rec.revision, rec.commit = read + 1, uuid.uuid4().hex[:16]
        rec.updated_at = now = time.time()
        ops = Recorder()
        self._keep(tx, ops)
        if self._lists(tx, now):
            rec.listed_at = now
            ops.zadd(keys.sessions(), {rec.id: now})
        written = tx.written = rec.model_dump_json()
        entries = s.append(rec.id, tx.entries, ops, together=True)
        for step in tx.steps:
            s.put_step(step, ops)
        for step in tx.cleared:
            if step.id not in tx.leases:
                s.clear_deadline(step, ops)
        for step, deadline in tx.leases.values():
            s.set_deadline(step, deadline, ops)
        for text in tx.inbox_pushes:  # first: the event saw the inbox as Redis's, then these (_queued)
            ops.rpush(keys.inbox(rec.id), text)
        for _ in range(tx.inbox_pops):
            ops.lpop(keys.inbox(rec.id))
        for member in tx.approvals_cleared:
            ops.zrem(keys.approvals(), member)
        if tx.approval_deadlines:
            ops.zadd(keys.approvals(), tx.approval_deadlines)
        if tx.memory_doc is not None:
            ops.set(keys.session_memory(rec.id), tx.memory_doc)
        if tx.records_put or tx.records_deleted:
            project = s.project_memory(rec.project_id, rec.project_root)
            for record in tx.records_put:
                project.put(record, ops)
            for name in tx.records_deleted:
                project.delete(name, ops)
        for step_id in tx.checkpoints_cleared:
            ops.delete(keys.fork_checkpoint(rec.id, step_id))
        for op in tx.extra:
            op(ops)
        awaiting = rec.state is State.AWAITING_PERMISSION
        if awaiting or tx.was_awaiting:
            if awaiting:
                ops.zadd(keys.awaiting(), {rec.id: time.time()}, nx=True)
            else:
                ops.zrem(keys.awaiting(), rec.id)
        reply = s.commit(rec.id, read, rec.commit, ops, tx.fence, record=written)
        if reply.status in ("ok", "landed"):
            count_commit(tx, now)
            if reply.status == "ok":
                s.note_commit(rec.id, read, reply.extra or "", entries)
            kept = self._kept.get(tx.fence[2]) if tx.fence else None
            if kept is not None:
                self._remember_claim(written, kept[0])
            if tx.stop_children:  # the run ended with sub-agents running (workflows.engine.subagents)
                tx.dispatch.extend(self.stop_children(tx.stop_children))
            return
        if tx.fence:
            kept = self._kept.pop(tx.fence[2], None)
            if kept is not None:
                self._holds.pop(kept[1], None)
        rec.revision, rec.commit, rec.listed_at = read, "", listed
        if reply.status == "gone":
            raise SessionNotFound(f"No session {rec.id!r}. List sessions with `mainsail sessions`.")
        raise CommitConflict(reply.status, SessionRecord.model_validate_json(reply.session),
                             StepRecord.model_validate_json(reply.step) if reply.step else None)

    def _write_new_session(self, tx: _Tx, ops: Recorder) -> None:
        """Record, on another commit's ``ops``, a session that session's event creates (a sub-agent): its
        record, its listing, its first entries, steps and leases (workflows.engine.subagents)."""
        s, rec = self.store, tx.rec
        rec.updated_at = rec.listed_at = time.time()
        ops.set(keys.session(rec.id), rec.model_dump_json())
        ops.zadd(keys.sessions(), {rec.id: rec.updated_at})
        s.append(rec.id, tx.entries, ops, together=True)
        for step in tx.steps:
            s.put_step(step, ops)
        for step, deadline in tx.leases.values():
            s.set_deadline(step, deadline, ops)


_ENDED = {StepStatus.DONE: "done", StepStatus.SUPERSEDED: "superseded", StepStatus.FAILED: "failed"}


def count_commit(tx: _Tx, now: float) -> None:
    """Note what a landed commit did in this process's metrics (workflows/metrics.py; no Redis command)."""
    seen: set[str] = set()
    for step in tx.steps:
        outcome = _ENDED.get(step.status)
        if outcome is None or step.id in seen:
            continue
        seen.add(step.id)
        TALLY.add("mainsail_steps_finished_total", kind=step.kind.value, outcome=outcome)
        if outcome == "done":
            TALLY.observe("mainsail_step_duration_seconds", now - step.created_at, STEP_BUCKETS, kind=step.kind.value)
    for count in tx.counts:
        count()
