"""Prompting and stopping a session (human-paced verbs): submit, compact, cancel, stop, clear the queue.

A part of :class:`workflows.engine.Engine`: a run starts here (:meth:`PromptVerbs.submit`) or waits in the
session's inbox; a cancel bumps the epoch so that every step of the old run is superseded.
"""

from __future__ import annotations

import time
from typing import Callable

from statemachines import State
from workflows.commit import Part, Tx, peers, retry_on_conflict
from workflows.commit.support import (
    Stopped,
    _reset_run_figures,
    context_size,
    require_idle,
    stop_shells,
)
from workflows.costs.budgets import days_for, read_budgets, refusal
from workflows.exceptions import (
    BudgetExceeded,
    ContextFull,
)
from workflows.model.tokens import estimate_tokens, thresholds
from workflows.models import (
    ResultEntry,
    SessionRecord,
    StepRecord,
    SystemEntry,
    Usage,
)

#: Message keys a session remembers (:meth:`PromptVerbs.submit`'s ``once``).
SUBMIT_KEYS_KEPT = 20


class PromptVerbs(Part):
    """Prompting and stopping a session: submit, compact, cancel, stop, clear the queue."""

    compaction: peers.Compaction
    forks: peers.Forks
    turns: peers.Turns

    @retry_on_conflict
    def submit(self, sid: str, prompt: str, once: str | None = None) -> list[StepRecord]:
        """Start a run with ``prompt``, or queue it in the inbox while the session is busy.

        The inbox is a queue: while messages wait in it, ``prompt`` goes behind them
        and the oldest runs first (an idle session with a queue starts its oldest now).

        ``once``: a key for this message; if a message with the same key was submitted to the session
        (among its last :data:`SUBMIT_KEYS_KEPT`), nothing is submitted and no step returned. The key
        is written by the same commit as the message, so a sender that died after submitting and
        tries again (a schedule's firing) cannot send it twice.

        Raises:
            BudgetExceeded: the budget of the session's token or workspace is spent (workflows/costs/budgets.py):
                the message is neither run nor queued; the refusal is written into the transcript too.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            why = self._over_budget(rec)
            if why is not None:
                tx = Tx(rec)
                rec.budget_stop = why
                # A result (no turn ran): every watcher shows it, and webhooks get a ``failed`` event.
                tx.add(ResultEntry(session_id=sid, subtype="error_max_budget_usd", is_error=True, result=why,
                                   num_turns=0, session_usage=rec.usage, session_cost_usd=rec.cost_usd))
                self.committer.commit(tx)
                raise BudgetExceeded(why)
            rec.budget_stop = None
            if once is not None:
                if once in rec.submit_keys:
                    return []
                rec.submit_keys = [*rec.submit_keys[-(SUBMIT_KEYS_KEPT - 1):], once]
            tx = Tx(rec)
            if rec.state is State.IDLE and self.store.inbox(sid):
                tx.inbox_pushes.append(prompt)
                self.turns.after_idle(tx)
            elif rec.state is State.EXTRACTING:
                # Nobody waits for memory: the message runs now, the extraction goes on beside it.
                tx.inbox_pushes.append(prompt)
                self.forks.leave_extracting(tx)
            elif rec.state is not State.IDLE:
                # Queued in the same commit as the revision it read: a step that ends the run meanwhile
                # is refused by the revision, reads the inbox again and starts this message.
                tx.inbox_pushes.append(prompt)
            else:
                self._check_room(rec, prompt)
                self.turns.start_run(tx, prompt)
            self.committer.commit(tx)
        return tx.dispatch

    def _over_budget(self, rec: SessionRecord) -> str | None:
        """Why a new turn of ``rec`` may not start (None: no budget covering it is spent). No budget set: one
        read of the budgets; a budget covering it: the ledger's days of its period too."""
        costs = self.store.costs()
        budgets = read_budgets(costs.budgets())
        days = days_for(budgets, rec.token, rec.workspace, costs.days()) if budgets else []
        return refusal(budgets, costs.rows(days), rec.token, rec.workspace) if days else None

    @retry_on_conflict
    def compact(self, sid: str, instructions: str | None = None) -> list[StepRecord]:
        """Compact an idle session now (``/compact``), with optional instructions for the summary."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            tx = Tx(rec)
            if rec.state is State.EXTRACTING:  # nobody waits for memory: the extraction goes on beside it
                tx.fire("extracted")
            require_idle(rec, "compact")
            rec.run_started_at = time.time()
            rec.run_turns = rec.run_api_ms = 0
            rec.run_usage = Usage()
            rec.run_cost_usd = 0.0
            _reset_run_figures(rec)
            self.compaction.begin_compaction(tx, "manual", instructions)
            self.committer.commit(tx)
        return tx.dispatch

    def context_size(self, rec: SessionRecord) -> int:
        """Tokens in the session's context: the last reported usage plus estimates since."""
        return context_size(rec)

    def _check_room(self, rec: SessionRecord, prompt: str) -> None:
        limits = thresholds(rec.sent_model(), self.settings.autocompact_pct_override)
        size = context_size(rec) + estimate_tokens(prompt)
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

    @retry_on_conflict
    def stop(self, sid: str, reason: str = "Cancelled by user", *, clear_queue: bool = False) -> Stopped:
        """Cancel: bump the epoch, close dangling tool calls, return to idle; then run the queue. The
        session's background shells are stopped too (by the workers running them).

        The inbox is a queue that a cancel does not drop: the oldest message starts
        at once, the others stay behind it in the order sent. With ``clear_queue``
        they are all dropped first, so the session stays idle. An idle session with
        a queue nothing runs (left by an older version) starts its oldest message.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            tx = Tx(rec)
            was = rec.state
            cleared = self.store.inbox(sid) if clear_queue else []
            tx.inbox_pops = len(cleared)
            if rec.state is State.EXTRACTING:  # the run already has its result; stop waiting for memory
                tx.add(SystemEntry(session_id=sid, subtype="memory", content=(
                    "Stopped waiting for the memory extraction; it goes on in the background.")))
                tx.fire("cancel")
                self.turns.after_idle(tx)
            elif rec.state is not State.IDLE:
                tx.add(SystemEntry(session_id=sid, subtype="interrupted", content=reason))
                self.turns.abort_run(tx, "cancel", "cancelled", reason)
            else:
                self.turns.after_idle(tx)
            queue = self.turns.queued(tx)
            started = queue[len(cleared)] if tx.inbox_pops > len(cleared) else None
            if was is not State.IDLE or tx.inbox_pops:
                self.committer.commit(tx)
            queued = len(queue) - tx.inbox_pops
        stop_shells(self.store, sid, "the session was cancelled")
        return Stopped(was=was, cancelled=was is not State.IDLE, cleared=cleared, started=started,
                       queued=queued, steps=tx.dispatch)

    @retry_on_conflict
    def clear_queue(self, sid: str) -> list[str]:
        """Drop the messages waiting in the session's inbox; returns them, oldest first."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            dropped = self.store.inbox(sid)
            if dropped:
                tx = Tx(rec)
                tx.inbox_pops = len(dropped)
                self.committer.commit(tx)
        return dropped
