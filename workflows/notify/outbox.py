"""The notifications' transactional outbox: an event is recorded by the commit that makes it, sent after.

The commit that moves a session into waiting, or ends its run well or in an error, records the event in the
outbox in the same atomic write (:func:`workflows.store.notify.stage`, called by
:meth:`workflows.commit.Committer.commit` for every commit: the one decision point). Nothing is lost when the
process dies right after it: the event is in Redis.

:class:`Outbox` turns outbox events into delivery tasks, once per subscription:

- :meth:`Outbox.landed`: the committing process, at once after its commit landed;
- :meth:`Outbox.sweep`: the reaper's periodic sweep (tasks/reaper.py), for an event whose committing process
  died before it sent it (it is due ``notify_outbox_grace_seconds`` after its commit, or when a dispatcher's
  hold lapsed).

A dispatcher first takes the event (:meth:`workflows.store.notify.NotifyStore.take`: one at a time, held for
``HOLD_SECONDS``), sends the task of each subscription that wants it and notes each one sent
(``notify:queued:{event}``): a dispatcher that takes it after another died sends only what that one had not.
A process killed between a send and its note sends that one task again; the task's own claim
(``notify:delivered``) still makes one POST of it. Subscriptions are read when the event is dispatched, so a
subscription removed in between gets nothing (one added in between gets it).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from workflows.notify.events import NotifyEvent
from workflows.notify.subscriptions import Subscription

log = logging.getLogger(__name__)

#: A dispatcher holds an event this long (its sends take milliseconds); then the sweep may take it again.
HOLD_SECONDS = 60.0
#: Events one sweep takes at most.
SWEEP_LIMIT = 100
#: A test's hook (tests/e2e/test_notify_outbox_e2e.py): the process exits as if killed right after a commit that
#: recorded events landed, before anything is sent.
EXIT_AFTER_COMMIT = "MAINSAIL_TEST_EXIT_AFTER_OUTBOX"


def exit_if_asked() -> None:
    """The test hook :data:`EXIT_AFTER_COMMIT`: leave now, as a killed process would (no clean-up)."""
    if os.environ.get(EXIT_AFTER_COMMIT):
        os._exit(86)


class Outbox:
    """Sends outbox events' delivery tasks (``send(event, subscription)``) once per subscription (``store``: a
    :class:`workflows.store.notify.NotifyStore`)."""

    def __init__(self, store, send: Callable[[NotifyEvent, Subscription], None]) -> None:
        self.store = store
        self.send = send

    def landed(self, staged: list[tuple[str, int]]) -> None:
        """Send the events a commit of this process just recorded (each taken only if still as it left it)."""
        for event_id, due in staged:
            self._dispatch(event_id, due)

    def sweep(self, now: float | None = None) -> int:
        """Send the events whose committing process did not (due, or held by a dispatcher that died). Returns
        how many delivery tasks it sent."""
        now_ms = int((time.time() if now is None else now) * 1000)
        return sum(self._dispatch(event_id, now_ms) for event_id in self.store.due(now_ms, SWEEP_LIMIT))

    def _dispatch(self, event_id: str, upto_ms: int) -> int:
        try:
            raw = self.store.take(event_id, upto_ms, int((time.time() + HOLD_SECONDS) * 1000))
            if raw is None:
                return 0
            event = NotifyEvent.model_validate_json(raw)
            subs = [s for s in self.store.all() if s.covers(event.token, event.workspace) and event.type in s.events]
            done = self.store.queued(event.id)
            sent = 0
            for sub in subs:
                if sub.id not in done:
                    self.send(event, sub)
                    self.store.mark_queued(event.id, sub.id)
                    sent += 1
            self.store.sent(event.id)
            return sent
        except Exception as exc:  # it stays in the outbox: the sweep sends it once its hold lapses
            log.warning("could not send the notification %s yet: %s", event_id, type(exc).__name__)
            return 0


__all__ = ["EXIT_AFTER_COMMIT", "HOLD_SECONDS", "Outbox", "exit_if_asked"]
