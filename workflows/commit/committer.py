"""The one committer: every event of a session is committed here, read, apply, one atomic write.

:meth:`Committer.commit` writes what a :class:`~workflows.commit.tx.Tx` holds in one fenced script call
(:mod:`workflows.store.fenced`): Redis itself checks the session's revision (and, for a step's outcome, that
the step is still the caller's), so a commit lands whole or not at all. :meth:`Committer.step_event` is
the commit of a step's outcome (a late or duplicate delivery changes nothing); :func:`retry_on_conflict`
applies a person's command again when another commit came first. The committer also remembers this
process's claims, so that a step's next event needs no read, and claims in a commit the step its
worker runs next (:meth:`Committer.keep_next`).
"""

from __future__ import annotations

import functools
import time
import uuid
from typing import Callable

from statemachines import State
from workflows.commit.tx import Tx
from workflows.exceptions import (
    LockTimeout,
    SessionNotFound,
    StepNotFound,
)
from workflows.models import (
    SessionRecord,
    StepKind,
    StepRecord,
    StepStatus,
    new_id,
)
from workflows.notify.outbox import exit_if_asked
from workflows.settings import Settings
from workflows.store import keys
from workflows.store.fenced import Recorder
from workflows.store.metrics import STEP_BUCKETS, TALLY
from workflows.store.notify import stage
from workflows.store.redis_store import Store
from workflows.store.registry import hold_value

#: How many times one event is applied again because another committed first, before it gives up.
MAX_CONFLICTS = 50
#: The steps of a running turn set the session's score in the ``sessions`` listing at most this often.
LIST_SECONDS = 5.0
#: Claims kept for their commit's sake (a process forgets them all past this many: they are only a shortcut).
CLAIMS_KEPT = 10_000


class CommitConflict(Exception):
    """The session moved on since it was read (or the fenced step is not as expected).

    ``session`` and ``step`` are what Redis holds now; the event is applied again on them.
    """

    def __init__(self, status: str, session: SessionRecord, step: StepRecord | None) -> None:
        super().__init__(status)
        self.status, self.session, self.step = status, session, step


def retry_on_conflict(method):
    """Run an engine method again (it reads afresh) when its commit met a newer revision."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        for attempt in range(MAX_CONFLICTS):
            try:
                return method(self, *args, **kwargs)
            except CommitConflict:
                time.sleep(min(0.001 * attempt, 0.05))
        raise LockTimeout(f"{method.__name__}: the session changed {MAX_CONFLICTS} times while this "
                          "command committed; try again.")

    return wrapper


def stale(step: StepRecord, rec: SessionRecord) -> bool:
    """A step of an older epoch (a cancel came since); memory forks run beside turns and never go stale."""
    return not step.background and step.epoch != rec.epoch


class Committer:
    """Commits transactions (see the module docstring); holds the store, the settings and this process's
    claims, no session state.

    ``queues``: the queue of each kind of step the engine's own workers run (the tools' kinds go to the
    session's tools queue).
    """

    def __init__(self, store: Store, settings: Settings, queues: dict[StepKind, str]) -> None:
        self.store = store
        self.settings = settings
        self.queues = queues
        #: (session, step, owner) -> the record and step JSON as this process's claim (or commit) left them.
        self._claimed: dict[tuple[str, str, str], tuple[bytes | str, bytes | str]] = {}
        #: owner -> (which follow-up steps this worker runs itself, its registered name): see :meth:`keep_next`.
        self._keeping: dict[str, tuple[Callable[[StepRecord], bool], str]] = {}
        #: owner -> the follow-up step its commit claimed for this worker, and the new claim's owner token.
        self._kept: dict[str, tuple[StepRecord, str]] = {}
        #: owner token of a step claimed by a commit -> (field, value) of its hold in the worker's held steps
        #: (a slot it took over from the step before it; see workflows/store/registry.py).
        self._holds: dict[str, tuple[str, str]] = {}
        #: Called with the record and the entries of every landed commit that appended entries, after it
        #: landed (Claude Code's copy of the transcript: workflows/context/claude_copy.py, set by the engine).
        self.copies: list[Callable[[SessionRecord, list], None]] = []
        #: Called with the notification events a landed commit recorded in the outbox (tasks/notify.py sends
        #: them: workflows/notify/outbox.py); a process that has none leaves them to the reaper's sweep.
        self.outboxes: list[Callable[[list[tuple[str, int]]], None]] = []

    def step_event(self, sid: str, step_id: str, owner: str,
                   apply: Callable[[Tx, StepRecord], None]) -> list[StepRecord]:
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
            tx = Tx(rec, fence=(step.id, StepStatus.RUNNING.value, owner))
            old = stale(step, rec)
            if old:
                tx.supersede(step)
            else:
                apply(tx, step)
            try:
                self.commit(tx)
            except CommitConflict as conflict:
                rec, step = conflict.session, conflict.step
                continue
            except (SessionNotFound, StepNotFound):
                return []
            if old:
                return []
            if step.status is StepStatus.RUNNING:  # its next event (a tool after its hooks) needs no read
                self.remember_claim(tx.written, step)
            return tx.dispatch
        raise LockTimeout(f"Session {sid} changed {MAX_CONFLICTS} times while step {step_id[:8]} committed; "
                          "try again.")

    def _load_step(self, sid: str, step_id: str) -> tuple[SessionRecord, StepRecord]:
        rec, step, _ = self.store.load_step(sid, step_id)
        return rec, step

    def remember_claim(self, rec_json: bytes | str, step: StepRecord, step_json: bytes | str | None = None) -> None:
        """Keep what a claim (or a commit) of a still-running step returned, for its next event."""
        if len(self._claimed) > CLAIMS_KEPT:  # steps that never committed (their worker gave up)
            self._claimed.clear()
        if len(self._holds) > CLAIMS_KEPT:  # (a hold forgotten here is dropped by the reaper's stale-hold check)
            self._holds.clear()
        self._claimed[(step.session_id, step.id, step.owner)] = (rec_json, step_json or step.model_dump_json())

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
        self.remember_claim(rec.model_dump_json(), stored)
        return stored, token, rec

    def hold_of(self, owner: str, sid: str, step_id: str) -> tuple[str, str]:
        """Where the step claimed as ``owner`` is held in its worker's held steps: (field, value). Asked
        once, when the step is off the worker's hands."""
        member = keys.lease_member(sid, step_id)
        return self._holds.pop(owner, None) or (member, owner)

    def _keep(self, tx: Tx, ops: Recorder) -> None:
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

    def new_step(self, tx: Tx, kind: StepKind, tool_use_id: str | None = None,
                 event: str | None = None, detail: str | None = None) -> StepRecord:
        queue = tx.rec.tools_queue if kind in (StepKind.TOOL, StepKind.HOOK, StepKind.MCP) else self.queues[kind]
        step = StepRecord(id=new_id(), session_id=tx.rec.id, kind=kind, epoch=tx.rec.epoch,
                          queue=queue, tool_use_id=tool_use_id, event=event, detail=detail)
        tx.counts.append(lambda: TALLY.add("mainsail_steps_created_total", kind=kind.value))
        tx.steps.append(step)
        tx.dispatch.append(step)
        tx.leases[step.id] = (step, time.time() + self.settings.pickup_timeout_seconds)
        return step

    def _lists(self, tx: Tx, now: float) -> bool:
        """Whether this commit sets the session's score in the ``sessions`` listing: a person's command,
        a session coming to rest (idle, waiting for a person), else at most every ``LIST_SECONDS`` (the
        steps of a running turn; listings and ``--continue`` see it a few seconds late at worst)."""
        if tx.fence is None or tx.rec.state in (State.IDLE, State.AWAITING_PERMISSION):
            return True
        return now - tx.rec.listed_at >= LIST_SECONDS

    def commit(self, tx: Tx) -> None:
        """Write everything ``tx`` holds in one atomic, fenced script call (workflows/store/fenced.py).

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
        for text in tx.inbox_pushes:  # first: the event saw the inbox as Redis's, then these (TurnLogic.queued)
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
        # The notification events (waiting, finished, failed) land with the commit that makes them, or not at all.
        tx.staged = stage(rec, tx.entries, self.settings.public_url, ops, self.settings.notify_outbox_grace_seconds)
        reply = s.commit(rec.id, read, rec.commit, ops, tx.fence, record=written)
        if reply.status in ("ok", "landed"):
            count_commit(tx, now)
            if tx.staged:
                exit_if_asked()
                for outbox in self.outboxes:
                    outbox(tx.staged)
            if reply.status == "ok":
                s.note_commit(rec.id, read, reply.extra or "", entries)
            kept = self._kept.get(tx.fence[2]) if tx.fence else None
            if kept is not None:
                self.remember_claim(written, kept[0])
            if tx.entries:
                for copy in self.copies:
                    copy(rec, tx.entries)
            for after in tx.after:  # e.g. the run ended with sub-agents running (workflows.engine.subagents)
                tx.dispatch.extend(after())
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

    def write_new_session(self, tx: Tx, ops: Recorder) -> None:
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


def count_commit(tx: Tx, now: float) -> None:
    """Note what a landed commit did in this process's metrics (workflows/store/metrics.py; no Redis command)."""
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
