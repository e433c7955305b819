"""The engine's part of PreCompact, Notification, SessionEnd and SessionStart's resume/clear/compact sources.

Part of the hooks' commit side (:class:`~workflows.hooks.commits.HookCommits` extends it). Each
check for hooks is an in-memory look at a record the caller already holds: a session without such hooks
gets no step and no Redis round trip. PreCompact is a hook step the session waits for (``compacting``);
Notification and SessionEnd are background hook steps nothing waits for (``StepRecord.background``).
"""

from __future__ import annotations

from workflows.commit import Tx, peers, retry_on_conflict
from workflows.hooks.client_hooks import ClientHookCommits
from workflows.hooks.session_hooks import NOTIFICATION_TYPE, permission_message
from workflows.models import PermissionRequest, StepKind, StepRecord, StepStatus, SystemEntry
from workflows.models.hook_outcome import HookOutcome
from workflows.models.hooks import HookEvent

__all__ = ["LifecycleHooks"]


class LifecycleHooks(ClientHookCommits):
    """The commit side of the lifecycle hook events (see the module docstring)."""

    compaction: peers.Compaction

    def pre_compact_gate(self, tx) -> bool:
        """A compaction begins (the session is ``compacting``): True when PreCompact hooks for its trigger
        run first, in a hook step; False (no such hooks): the compaction step goes out now."""
        if not tx.rec.hooks.for_event(HookEvent.PRE_COMPACT, tx.rec.compact_trigger or "auto"):
            return False
        self.committer.new_step(tx, StepKind.HOOK, event=HookEvent.PRE_COMPACT.value)
        return True

    def _after_pre_compact(self, tx, outcome: HookOutcome | None) -> None:
        """Exit 2 or ``"decision": "block"`` (or ``"continue": false``) blocks the compaction, manual or auto
        (Claude Code since 2.1.105); otherwise it runs."""
        if outcome is None or not (outcome.blocked or outcome.stop):
            self.committer.new_step(tx, StepKind.COMPACT)
            return
        why = (outcome.reason if outcome.blocked else outcome.stop_reason) or "no reason given"
        if tx.rec.compact_trigger != "manual":
            tx.add(SystemEntry(session_id=tx.rec.id, subtype="warning", content=(
                f"Auto-compaction blocked by a PreCompact hook: {why}. The run goes on without it.")))
        self.compaction.compaction_done(tx, f"Compaction blocked by a PreCompact hook: {why}", failed=True)

    def restart_gate(self, tx, source: str) -> bool:
        """When SessionStart hooks match ``source`` (resume, clear, compact): the next SessionStart is for it."""
        if not tx.rec.hooks.for_event(HookEvent.SESSION_START, source):
            return False
        tx.rec.session_started, tx.rec.start_source = False, source
        return True

    @retry_on_conflict
    def mark_session_start(self, sid: str, source: str, rec=None) -> bool:
        """A session goes on from another command (``resume``) or a new one replaces another (``clear``): its
        next prompt runs SessionStart hooks for ``source`` first. Without such hooks (read from ``rec``, when
        given) nothing is written. True when they will run."""
        rec = rec or self.store.get_session(sid)
        if not rec.hooks.for_event(HookEvent.SESSION_START, source):
            return False
        with self.store.lock(sid):
            tx = Tx(self.store.get_session(sid))
            self.restart_gate(tx, source)
            self.committer.commit(tx)
        return True

    def notify_permission(self, tx, asked: list[PermissionRequest]) -> None:
        """The session starts waiting for permission: Notification hooks run in a background step (nothing waits)."""
        tools = [r.tool for r in asked if r.kind == "permission"]
        if tools and tx.rec.hooks.for_event(HookEvent.NOTIFICATION, NOTIFICATION_TYPE):
            self.committer.new_step(tx, StepKind.HOOK, event=HookEvent.NOTIFICATION.value,
                                    detail=permission_message(tools))

    @retry_on_conflict
    def session_end(self, sid: str, reason: str, rec=None) -> list[StepRecord]:
        """An interactive session ends (``reason``: clear, logout, prompt_input_exit, other): SessionEnd hooks
        run in a background step. Nothing waits for it and it cannot block. Without such hooks: no write, no
        step. (:meth:`workflows.engine.sessions.SessionVerbs.end_session` stops its background shells first.)"""
        rec = rec or self.store.get_session(sid)
        if not rec.hooks.for_event(HookEvent.SESSION_END, reason):
            return []
        with self.store.lock(sid):
            tx = Tx(self.store.get_session(sid))
            self.committer.new_step(tx, StepKind.HOOK, event=HookEvent.SESSION_END.value, detail=reason)
            self.committer.commit(tx)
        return tx.dispatch

    def settle_background_hook(self, sid: str, step_id: str, owner: str,
                               outcome: HookOutcome | None) -> list[StepRecord]:
        """Commit a Notification or SessionEnd step's outcome: a ``hook`` entry (and warnings), nothing else."""

        def apply(tx, step: StepRecord) -> None:
            tx.finish(step)
            self.drop_client_request(tx, step)
            if outcome is not None:
                self.add_hook_entry(tx, outcome, step=step)

        return self.committer.step_event(sid, step_id, owner, apply)

    def background_hook_failed(self, tx, step: StepRecord, error: str) -> None:
        """A Notification or SessionEnd step failed for good: a warning; the session is not touched."""
        step.status, step.error = StepStatus.FAILED, error
        tx.steps.append(step)
        tx.cleared.append(step)
        tx.add(SystemEntry(session_id=tx.rec.id, subtype="warning", step_id=step.id,
                           content=f"{step.event} hooks failed: {error}"))
