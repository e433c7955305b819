"""Memory forks beside the turn: session-memory updates and auto-memory extraction.

A part of :class:`workflows.engine.Engine` (``engine.forks``); it commits through
:class:`workflows.commit.Committer`.
"""

from __future__ import annotations

from statemachines import State
from workflows.commit import Part, Tx, peers
from workflows.commit.charges import charge
from workflows.commit.support import (
    context_size,
)
from workflows.exceptions import (
    SessionNotFound,
    StepNotFound,
)
from workflows.memory.records import (
    MemoryRecord,
    MemoryThresholds,
    has_content,
    should_update_session_memory,
)
from workflows.models import (
    StepKind,
    StepRecord,
    StepStatus,
    SystemEntry,
    Usage,
)


class MemoryForks(Part):
    """Memory forks beside the turn: session-memory updates and auto-memory extraction."""

    turns: peers.Turns

    def maybe_update_session_memory(self, tx: Tx, tool_calls: int) -> None:
        """After a model turn: ask for a session-memory update when the thresholds say so."""
        rec, st = tx.rec, self.settings
        if not st.session_memory:
            return
        rec.memory_tool_calls += tool_calls
        tokens = context_size(rec)
        limits = MemoryThresholds(st.session_memory_init_tokens, st.session_memory_update_tokens,
                                  st.session_memory_tool_calls)
        if not should_update_session_memory(tokens, rec.memory_tokens, rec.memory_tool_calls, tool_calls > 0,
                                            limits):
            return
        rec.memory_tokens = tokens
        rec.memory_tool_calls = 0
        self._request_fork(tx, StepKind.MEMORY)

    def _request_fork(self, tx: Tx, kind: StepKind) -> None:
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
                rec.memory_step = self.committer.new_step(tx, kind).id
        else:
            if rec.extract_step:
                rec.extract_trailing = True
            else:
                rec.extract_step = self.committer.new_step(tx, kind).id

    def begin_extraction(self, tx: Tx) -> None:
        """A final answer: extract durable memories from the turn (the session waits in ``extracting``)."""
        rec = tx.rec
        if rec.run_wrote_memory:
            rec.extract_cursor = rec.last_uuid
            tx.add(SystemEntry(session_id=rec.id, subtype="memory", content=(
                "Memory was written directly in this turn, so the memory extraction is skipped.")))
            self.leave_extracting(tx)
            return
        self._request_fork(tx, StepKind.EXTRACT)
        if len(self.turns.queued(tx)) > tx.inbox_pops:
            self.leave_extracting(tx)  # a message is waiting: it runs now, the extraction beside it

    def leave_extracting(self, tx: Tx) -> None:
        tx.fire("extracted")
        self.turns.after_idle(tx)

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

        def apply(tx: Tx, step: StepRecord) -> None:
            tx.finish(step)
            rec = tx.rec
            cost = charge(tx, usage, duration_ms, run=False)
            if has_content(doc):
                tx.memory_doc = doc
                rec.memory_updates += 1
                rec.memory_covers = covers
                text = f"Session memory updated ({len(doc):,} characters; update {rec.memory_updates})."
            else:
                text = "Session memory unchanged: the update made no edit."
            tx.add(SystemEntry(session_id=sid, subtype="memory", content=text, step_id=step.id,
                               usage=usage, cost_usd=cost))
            self._fork_done(tx, step)

        return self.committer.step_event(sid, step_id, owner, apply)

    def record_extraction(self, sid: str, step_id: str, owner: str, *, puts: list[MemoryRecord],
                          deletes: list[str], start_cursor: str | None, until: str | None, usage: Usage,
                          duration_ms: int) -> list[StepRecord]:
        """Commit an extraction: its record writes in the same MULTI as the step's end (never twice)."""

        def apply(tx: Tx, step: StepRecord) -> None:
            tx.finish(step)
            rec = tx.rec
            cost = charge(tx, usage, duration_ms, run=False, kind="extract")
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
            tx.add(SystemEntry(session_id=sid, subtype="memory", content=text, step_id=step.id,
                               usage=usage, cost_usd=cost))
            self._fork_done(tx, step)

        return self.committer.step_event(sid, step_id, owner, apply)

    def record_fork_failure(self, sid: str, step_id: str, owner: str, error: str) -> list[StepRecord]:
        """A memory fork failed for good: say so; the session goes on (memory is never worth stopping for)."""

        def apply(tx: Tx, step: StepRecord) -> None:
            self.fork_failed(tx, step, error)

        return self.committer.step_event(sid, step_id, owner, apply)

    def fork_failed(self, tx: Tx, step: StepRecord, error: str) -> None:
        step.status = StepStatus.FAILED
        step.error = error
        tx.steps.append(step)
        tx.cleared.append(step)
        what = "Session-memory update" if step.kind is StepKind.MEMORY else "Memory extraction"
        tx.add(SystemEntry(session_id=tx.rec.id, subtype="warning", step_id=step.id,
                           content=f"{what} failed: {error}"))
        self._fork_done(tx, step)

    def _fork_done(self, tx: Tx, step: StepRecord) -> None:
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
            self.leave_extracting(tx)
