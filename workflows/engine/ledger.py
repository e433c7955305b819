"""The step protocol's claim, heartbeat and recovery: claims, leases, the reaper's take-backs.

A part of :class:`workflows.engine.Engine` (``engine.ledger``); it commits through
:class:`workflows.commit.Committer`.
"""

from __future__ import annotations

import socket
import time
from typing import Callable

from workflows.commit import Part, Tx, peers, retry_on_conflict, stale
from workflows.commit.support import (
    Claim,
    display_worker,
    log,
    unknown_outcome,
)
from workflows.exceptions import (
    SessionNotFound,
    StepNotFound,
)
from workflows.mcp.catalog import idempotent
from workflows.models import (
    SessionRecord,
    StepKind,
    StepRecord,
    StepStatus,
    SystemEntry,
    ToolCallStatus,
)
from workflows.shells.groups import kill_guards
from workflows.store import keys
from workflows.store.fenced import reads_transcript
from workflows.store.memory import ExtractionLock


class StepLedger(Part):
    """The step protocol's claim, heartbeat and recovery: claims, leases, the reaper's take-backs."""

    tools: peers.Tools
    turns: peers.Turns

    def step_name(self, rec: SessionRecord, step: StepRecord) -> str:
        if step.kind is StepKind.TOOL:
            call = next((c for c in rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
            return f"Tool step {step.id[:8]} ({call.name if call else 'tool'})"
        if step.kind is StepKind.MCP:
            return f"MCP discovery step {step.id[:8]}"
        return f"{step.kind.value.capitalize()} step {step.id[:8]}"

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
        reply = self.store.claim_step(sid, step_id, owner, now, now + self.settings.lease_seconds,
                                      self.settings.max_attempts, worker)
        if reply.status == "gone":  # removed (`mainsail rm`) since it was sent
            return Claim(None, [], None)
        rec = SessionRecord.model_validate_json(reply.session)
        if reply.status in ("finished", "busy"):
            return Claim(None, [], rec)
        step = StepRecord.model_validate_json(reply.step)
        if reply.status == "claimed":
            if reads_transcript(step.kind):
                self.store.note_rows(sid, reply.mark, reply.extra or [], rec.revision)
            self.committer.remember_claim(reply.session, step, reply.step)
            return Claim(step, [], rec)
        return self._claim_slowly(rec, step, owner, worker, now)

    @retry_on_conflict
    def _claim_slowly(self, rec: SessionRecord, step: StepRecord, owner: str, worker: str | None,
                      now: float) -> Claim:
        """What the claim script hands back: a stale step, attempts used up, or a record it cannot read."""
        sid = rec.id
        try:
            rec, step, deadline = self.store.load_step(sid, step.id)
        except (SessionNotFound, StepNotFound):
            return Claim(None, [], None)
        if step.finished:
            return Claim(None, [], rec)
        if step.status is StepStatus.RUNNING and step.owner == owner:
            return Claim(step, [], rec)
        tx = Tx(rec, fence=(step.id, step.status.value, step.owner or ""))
        if stale(step, rec):
            tx.supersede(step)
            self.committer.commit(tx)
            return Claim(None, [], rec)
        if step.status is StepStatus.RUNNING and ((deadline is not None and deadline > now)
                                                  or (step.worker and self.store.workers.alive(step.worker))):
            return Claim(None, [], rec)  # its claim's worker is alive: the step is taken, never run twice
        if step.attempt >= self.settings.max_attempts:
            self.turns.fail(tx, step, f"{self.step_name(rec, step)} failed after {step.attempt} attempts: "
                            "its worker stopped each time.")
            self.committer.commit(tx)
            return Claim(None, tx.dispatch, rec)
        step.status = StepStatus.RUNNING
        step.attempt += 1
        step.owner = owner
        step.worker = worker
        tx.steps.append(step)
        tx.leases[step.id] = (step, now + self.settings.lease_seconds)
        if worker:
            member = keys.lease_member(sid, step.id)
            tx.extra.append(lambda ops: ops.hset(keys.worker_steps(worker), member, owner))
        self.committer.commit(tx)
        return Claim(step, [], tx.rec)

    def heartbeat(self, sid: str, step_id: str, owner: str, *, extend: bool = True) -> bool:
        """Check (and with ``extend``, renew) a running step's lease. False: no longer ours to run
        (someone else's, superseded, or its session was removed)."""
        return self.heartbeat_many([(sid, step_id, owner, extend)])[0]

    def heartbeat_many(self, items: list[tuple[str, str, str, bool]]) -> list[bool]:
        """:meth:`heartbeat` for each (sid, step id, owner, extend), in one round trip for all."""
        until = time.time() + self.settings.lease_seconds
        kinds = self.store.renew_leases([(sid, step_id, owner, until if extend else None)
                                         for sid, step_id, owner, extend in items])
        out = []
        for (sid, step_id, _, extend), kind in zip(items, kinds):
            if kind == StepKind.EXTRACT.value and extend:
                kind = kind if self._extend_extraction(sid, step_id) else None
            out.append(kind is not None)
        return out

    def _extend_extraction(self, sid: str, step_id: str) -> bool:
        try:
            rec, step, _ = self.store.load_step(sid, step_id)
        except (SessionNotFound, StepNotFound):
            return False
        if rec.project_id:
            self.extraction_lock(rec, step).extend()
        return True

    def extraction_lock(self, rec: SessionRecord, step: StepRecord) -> ExtractionLock:
        return self.store.extraction_lock(rec.project_id, keys.lease_member(rec.id, step.id),
                                          2 * self.settings.lease_seconds)

    def defer_step(self, sid: str, step_id: str, owner: str, delay: float, why: str) -> list[StepRecord]:
        """Give a claimed step back, unrun and not counted as an attempt; the reaper sends it after ``delay``."""

        def apply(tx: Tx, step: StepRecord) -> None:
            step.status = StepStatus.PENDING
            step.owner = None
            step.attempt = max(0, step.attempt - 1)
            step.error = why
            tx.steps.append(step)
            tx.leases[step.id] = (step, time.time() + delay)

        return self.committer.step_event(sid, step_id, owner, apply)

    def fail_step(self, sid: str, step_id: str, owner: str, error: str) -> list[StepRecord]:
        """A step failed for good (e.g. the model API after its retries): end the run with the error."""

        def apply(tx: Tx, step: StepRecord) -> None:
            self.turns.fail(tx, step, error)

        return self.committer.step_event(sid, step_id, owner, apply)

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

    @retry_on_conflict
    def _reap_one(self, sid: str, step_id: str, now: float) -> list[StepRecord]:
        with self.store.lock(sid):
            try:
                rec, step, deadline = self.store.load_step(sid, step_id)
            except (SessionNotFound, StepNotFound):
                self.store.forget_lease(sid, step_id)
                return []
            tx = Tx(rec, fence=(step.id, step.status.value, step.owner or ""))  # a claim may come meanwhile
            if step.finished:
                tx.cleared.append(step)
                self.committer.commit(tx)
                return []
            if stale(step, rec):
                tx.supersede(step)
                self.committer.commit(tx)
                return []
            if deadline is not None and deadline > now:
                return []
            if step.status is StepStatus.RUNNING:
                if self._runs_command(rec, step):
                    self._stop_command(step, deadline)  # (its guard has killed it already: belt and braces)
                self._worker_lost(tx, step, None)
                self.committer.commit(tx)
                return tx.dispatch
            tx.steps.append(step)
            tx.leases[step.id] = (step, now + self.settings.pickup_timeout_seconds)
            self.committer.commit(tx)
            return [step]

    @retry_on_conflict
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
                return [s for s in self.store.steps(sid) if s.status is StepStatus.PENDING and not stale(s, rec)]
            tx = Tx(rec, fence=(step.id, step.status.value, step.owner or ""))  # a claim may come meanwhile
            if stale(step, rec):
                tx.supersede(step)
                self.committer.commit(tx)
                return []
            if step.status is StepStatus.PENDING:
                self.store.set_deadline(step, time.time() + self.settings.pickup_timeout_seconds)
                return [step]
            if not token or step.owner != token:
                return []  # running, but claimed by another worker since
            if self._runs_command(rec, step) and not self._stop_command(step, self.store.deadline(step)):
                return []  # its command may run on another host until its lease lapses: the sweep takes it then
            self._worker_lost(tx, step, worker)
            self.committer.commit(tx)
            return tx.dispatch

    def _runs_command(self, rec: SessionRecord, step: StepRecord) -> bool:
        return self._mutating_call(rec, step) is not None

    @staticmethod
    def _mutating_call(rec: SessionRecord, step: StepRecord):
        """The unfinished mutating call (Bash, Edit, an MCP tool...) ``step`` runs, or None. A take-back records
        its outcome as unknown: its effect must be over, or never start, before that is said."""
        call = next((c for c in rec.tool_calls if c.tool_use_id == step.tool_use_id), None) \
            if step.kind is StepKind.TOOL else None
        if call is not None and call.status is not ToolCallStatus.DONE and not idempotent(call.name):
            return call
        return None

    def _stop_command(self, step: StepRecord, deadline: float | None) -> bool:
        """Make sure the command of ``step`` (a mutating call that was running) is dead; False when that cannot
        be known yet (see workflows/steps/fence.py).

        Its lease lapsed: its guard killed it at its deadline, before that. Its claim was made on this host
        (the owner token starts with the host name): its guard is killed here, now. Else it may still run
        over there, until the lease lapses. A command that had not started cannot start any more: the fence
        it must pass refuses a lapsed lease, and a worker whose steps a reaper is taking back.
        """
        if deadline is None or deadline <= time.time():
            return True
        if (step.owner or "").partition(":")[0] != socket.gethostname():
            return False
        killed = kill_guards(step.owner)
        if killed:
            log.warning("killed the command of step %s (its worker was lost) before recording its outcome",
                        step.id[:8])
        return True

    def _worker_lost(self, tx: Tx, step: StepRecord, worker: str | None) -> None:
        """``step`` was running when its worker was lost: died (``worker`` named) or lease expired (None).

        Decides once, and says exactly that: run it again elsewhere, or (a mutating tool) record that
        its outcome is unknown without running it again, or fail it after ``max_attempts``.
        """
        rec = tx.rec
        name = self.step_name(rec, step)
        lost = (f"Worker {display_worker(worker)} died while {name} was running" if worker else
                f"{name}: its worker sent no heartbeat for {self.settings.lease_seconds:g}s, so its lease expired")
        if (call := self._mutating_call(rec, step)) is not None:
            tx.add(SystemEntry(session_id=rec.id, subtype="warning", step_id=step.id,
                               content=f"{lost}: its outcome is unknown, not re-run."))
            tx.finish(step)
            self.turns.add_tool_result(tx, call.tool_use_id, unknown_outcome(call), step_id=step.id)
            call.status = ToolCallStatus.DONE
            self.tools.advance_tools(tx)
            return
        if step.attempt >= self.settings.max_attempts:
            self.turns.fail(tx, step, f"{lost}; it failed after {step.attempt} attempts, its worker stopping "
                            "each time.")
            return
        step.status = StepStatus.PENDING
        step.owner = None
        step.error = f"{lost} (attempt {step.attempt})"
        tx.add(SystemEntry(session_id=rec.id, subtype="warning", step_id=step.id,
                           content=f"{lost} (attempt {step.attempt}); running it again on another worker."))
        tx.steps.append(step)
        tx.dispatch.append(step)
        tx.leases[step.id] = (step, time.time() + self.settings.pickup_timeout_seconds)
