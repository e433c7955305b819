"""The webhook delivery task: one event to one subscription, once, with retries and exponential backoff.

:func:`send` (tasks/notify_send.py) sends one task per (event, subscription): the outbox's dispatcher calls it
(workflows/notify/outbox.py), in the process whose commit recorded the event or in the reaper's :func:`sweep`.
The task claims the delivery (:meth:`workflows.store.notify.NotifyStore.claim`): one already made is not made
again, however often the message arrives (a broker redelivery, a retry that crossed a late answer). A POST
answered with anything but a 2xx, or not at all, is tried again after ``notify_backoff_seconds`` × 2^attempt,
up to ``notify_attempts`` tries; each retry is a new message on the broker (durable: a worker that dies holding
it gives it back). The secret and the URL's path are never logged.
"""

from __future__ import annotations

import logging

from tasks import runtime
from tasks.app import app
from tasks.notify_send import TASK, send, sweep
from workflows.notify.events import NotifyEvent
from workflows.notify.subscriptions import shown_url
from workflows.settings import get_settings

log = logging.getLogger(__name__)

@app.task(name=TASK, bind=True, ignore_result=True)
def deliver(self, event_json: str, sub_id: str) -> str:
    """Deliver one session event to one webhook subscription (once; retried with exponential backoff)."""
    from workflows.notify.delivery import DeliveryFailed, post  # (httpx: only where a webhook is sent)

    settings = get_settings()
    store = runtime.engine().store.notify()
    sub = store.get(sub_id)
    if sub is None:
        return "no such subscription"
    event = NotifyEvent.model_validate_json(event_json)
    claim = store.claim(event.id, sub.id)
    if claim == "done":
        return "delivered already"
    attempt = self.request.retries
    if claim == "busy":  # another POST of it is out: look again once it has had its answer
        raise self.retry(countdown=_backoff(settings, attempt), max_retries=settings.notify_attempts)
    try:
        status = post(event, sub)
    except DeliveryFailed as exc:
        store.release(event.id, sub.id)
        if attempt + 1 >= settings.notify_attempts:
            log.warning("gave up on the %s notification %s to %s after %d attempts: %s", event.type, event.id,
                        shown_url(sub.url), attempt + 1, exc)
            return "failed"
        log.info("the %s notification %s to %s failed (%s): trying again", event.type, event.id,
                 shown_url(sub.url), exc)
        raise self.retry(countdown=_backoff(settings, attempt), max_retries=settings.notify_attempts) from None
    store.delivered(event.id, sub.id)
    return f"delivered ({status})"


def _backoff(settings, attempt: int) -> float:
    return settings.notify_backoff_seconds * (2 ** attempt)


__all__ = ["TASK", "deliver", "send", "sweep"]
