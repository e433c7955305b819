"""Compaction: starting one, and committing its summary or its failure.

A part of :class:`workflows.engine.Engine` (``engine.compaction``); it commits through
:class:`workflows.commit.Committer`.
"""

from __future__ import annotations

from workflows.commit import Part, Tx, peers
from workflows.commit.charges import charge
from workflows.commit.support import (
    context_size,
)
from workflows.model.tokens import estimate_tokens
from workflows.models import (
    CompactBoundaryEntry,
    StepKind,
    StepRecord,
    StepStatus,
    SummaryEntry,
    SystemEntry,
    Usage,
)


class Compacting(Part):
    """Compaction: starting one, and committing its summary or its failure."""

    hooks: peers.Hooks
    turns: peers.Turns

    def begin_compaction(self, tx: Tx, trigger: str, instructions: str | None = None) -> None:
        rec = tx.rec
        rec.compact_trigger = trigger
        rec.compact_instructions = instructions
        tx.fire("compact" if trigger == "manual" else "compaction_needed")
        if not self.hooks.pre_compact_gate(tx):
            self.committer.new_step(tx, StepKind.COMPACT)

    def record_compaction(self, sid: str, step_id: str, owner: str, summary: str, *, source: str,
                          usage: Usage | None = None, duration_ms: int = 0, keep: list[str] = (),
                          kept_tokens: int = 0) -> list[StepRecord]:
        """Commit a compaction: a boundary and the summary; then the model call (auto) or idle (manual)."""

        def apply(tx: Tx, step: StepRecord) -> None:
            tx.finish(step)
            rec = tx.rec
            if usage is not None:
                charge(tx, usage, duration_ms)
            before = context_size(rec)
            trigger = rec.compact_trigger or "auto"
            preserved = [rec.run_prompt_uuid] if trigger == "auto" and rec.run_turns == 0 and rec.run_prompt_uuid \
                else []
            preserved = list(dict.fromkeys([*preserved, *keep]))  # the messages the notes do not cover yet
            tx.add(CompactBoundaryEntry(session_id=sid, trigger=trigger, pre_tokens=before, source=source,
                                        preserved=preserved, step_id=step.id))
            tx.add(SummaryEntry(session_id=sid, summary=summary, step_id=step.id))
            rec.context_tokens = (estimate_tokens(summary) + estimate_tokens(rec.system_context + rec.user_context)
                                  + kept_tokens)
            rec.context_added = 0
            rec.compact_failures = 0
            if rec.memory_tokens is not None:  # growth counts from the compacted size
                rec.memory_tokens = rec.context_tokens
            if trigger == "manual":
                rec.auto_compact_off = False
            self.compaction_done(tx, f"Compacted {before:,} tokens into a summary of about "
                                 f"{rec.context_tokens:,}.")

        return self.committer.step_event(sid, step_id, owner, apply)

    def record_compaction_failure(self, sid: str, step_id: str, owner: str, error: str) -> list[StepRecord]:
        """A compaction failed: count it (the circuit breaker), then go on without it or stop."""

        def apply(tx: Tx, step: StepRecord) -> None:
            step.status = StepStatus.FAILED
            step.error = error
            tx.steps.append(step)
            tx.cleared.append(step)
            rec = tx.rec
            rec.compact_failures += 1
            tx.add(SystemEntry(session_id=sid, subtype="warning", step_id=step.id,
                               content=f"Compaction failed ({rec.compact_failures} in a row): {error}"))
            if rec.compact_failures >= self.settings.compact_max_failures and not rec.auto_compact_off:
                rec.auto_compact_off = True
                tx.add(SystemEntry(session_id=sid, subtype="error", content=(
                    f"Auto-compact failed {rec.compact_failures} times in a row, so it is off for this session. "
                    f"Run /compact (or `mainsail compact {sid[:8]}`) to try again.")))
            self.compaction_done(tx, f"Compaction failed: {error}", failed=True)

        return self.committer.step_event(sid, step_id, owner, apply)

    def compaction_done(self, tx: Tx, text: str, failed: bool = False) -> None:
        rec = tx.rec
        manual = rec.compact_trigger == "manual"
        tx.fire("compacted")
        rec.compact_trigger = None
        rec.compact_instructions = None
        # SessionStart(compact): now, or at the next prompt
        restart = not failed and self.hooks.restart_gate(tx, "compact")
        if manual:
            self.turns.add_result(tx, "error_during_execution" if failed else "success", text)
            self.turns.after_idle(tx)
        elif restart:
            self.committer.new_step(tx, StepKind.HOOK, event="SessionStart")  # then the model call
        else:
            # never another compaction: it goes on, over the threshold or not
            self.committer.new_step(tx, StepKind.MODEL)
