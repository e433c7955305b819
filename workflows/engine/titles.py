"""Session titles, the commit side: the first run's end asks for a ``title`` step; its outcome is recorded once.

A part of :class:`workflows.engine.Engine` (a mixin); see :mod:`workflows.titles` for the call and
:mod:`workflows.engine.commit` for the commit every event goes through.
"""

from __future__ import annotations

import logging

from workflows.engine.support import _Tx
from workflows.models import StepKind, StepRecord, StepStatus, Usage

log = logging.getLogger(__name__)


class TitleLogic:
    """The first run's end asks the small model for the session's title; its answer replaces the prompt's."""

    def _ask_title(self, tx: _Tx) -> None:
        """At the end of a run: the session's title step, once in its life (never for a sub-agent, whose
        title is its Task call's description)."""
        rec = tx.rec
        if (not self.settings.session_titles or rec.parent_session_id or rec.title_step is not None
                or not rec.title):
            return
        rec.title_step = self._new_step(tx, StepKind.TITLE).id

    def record_title(self, sid: str, step_id: str, owner: str, title: str | None, *, usage: Usage | None = None,
                     duration_ms: int = 0, model: str | None = None, error: str | None = None) -> list[StepRecord]:
        """Commit a title step's outcome: the model's ``title`` (None: the prompt's stays), its cost."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            if usage is not None:
                self._charge(tx, usage, duration_ms, run=None, kind="title", model=model)
            self._title_done(tx, step, title, error)

        return self._step_event(sid, step_id, owner, apply)

    def _title_done(self, tx: _Tx, step: StepRecord, title: str | None, error: str | None) -> None:
        if title:
            tx.rec.title = title
            self._finish_step(tx, step)
            return
        step.status, step.error = StepStatus.FAILED, error or "no title"
        tx.steps.append(step)
        tx.cleared.append(step)
        log.info("session %s keeps its prompt as its title: %s", tx.rec.id[:8], step.error)


__all__ = ["TitleLogic"]
