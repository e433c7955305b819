"""Session titles, the commit side: the first run's end asks for a ``title`` step; its outcome is recorded once.

A part of :class:`workflows.engine.Engine` (``engine.titles``); see :mod:`workflows.titles` for the call.
"""

from __future__ import annotations

import logging

from workflows.commit import Part, Tx
from workflows.commit.charges import charge
from workflows.models import StepKind, StepRecord, StepStatus, Usage

log = logging.getLogger(__name__)


class TitleLogic(Part):
    """The first run's end asks the small model for the session's title; its answer replaces the prompt's."""

    def ask_title(self, tx: Tx) -> None:
        """At the end of a run: the session's title step, once in its life (never for a sub-agent, whose
        title is its Task call's description)."""
        rec = tx.rec
        if (not self.settings.session_titles or rec.parent_session_id or rec.title_step is not None
                or not rec.title):
            return
        rec.title_step = self.committer.new_step(tx, StepKind.TITLE).id

    def record_title(self, sid: str, step_id: str, owner: str, title: str | None, *, usage: Usage | None = None,
                     duration_ms: int = 0, model: str | None = None, error: str | None = None) -> list[StepRecord]:
        """Commit a title step's outcome: the model's ``title`` (None: the prompt's stays), its cost."""

        def apply(tx: Tx, step: StepRecord) -> None:
            if usage is not None:
                charge(tx, usage, duration_ms, run=None, kind="title", model=model)
            self.title_done(tx, step, title, error)

        return self.committer.step_event(sid, step_id, owner, apply)

    def title_done(self, tx: Tx, step: StepRecord, title: str | None, error: str | None) -> None:
        if title:
            tx.rec.title = title
            tx.finish(step)
            return
        step.status, step.error = StepStatus.FAILED, error or "no title"
        tx.steps.append(step)
        tx.cleared.append(step)
        log.info("session %s keeps its prompt as its title: %s", tx.rec.id[:8], step.error)


__all__ = ["TitleLogic"]
