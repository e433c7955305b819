"""One webhook delivery: the body for the subscription's kind, its signature, and the POST.

Generic subscriptions get Mainsail's JSON (the :class:`~workflows.notify.events.NotifyEvent`'s fields) with

- ``Mainsail-Event``: the event's type (``waiting``, ``finished``, ``failed``);
- ``Mainsail-Delivery``: the event's id, the same at every attempt (an idempotency key: a receiver that
  already has it may answer 2xx and drop it);
- ``Mainsail-Signature``: ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the secret>``, as
  Stripe signs: a receiver recomputes it over the raw body, compares in constant time and refuses an old ``t``.

Slack subscriptions get ``text`` (the fallback and the notification's line) and ``blocks`` (the line and a
button that opens the session in the console). A redirect is never followed (a 3xx is a failure, whatever its
``Location``: never ``file://`` nor another host); only a 2xx counts as delivered.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import httpx

from workflows.notify.events import NotifyEvent
from workflows.exceptions import NotifyError
from workflows.notify.subscriptions import Subscription, check_public, check_url

TIMEOUT_SECONDS = 10.0
USER_AGENT = "Mainsail-Webhook/1"


class DeliveryFailed(Exception):
    """A POST was not answered with a 2xx (``status``: its status; None: no answer at all)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Mainsail-Signature`` header's value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, header: str, body: bytes, *, tolerance: float = 300, now: float | None = None) -> bool:
    """Whether ``header`` (a ``Mainsail-Signature``) signs ``body`` with ``secret`` within ``tolerance`` seconds:
    what a receiver written in Python does (docs/notifications.md shows it without Mainsail)."""
    try:
        fields = dict(part.split("=", 1) for part in header.split(","))
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, fields.get("v1", ""))


def slack_body(event: NotifyEvent) -> dict:
    """Slack's incoming-webhook JSON: ``text`` and ``blocks`` (a section and a button to the console)."""
    line = event.text
    if event.type != "waiting" and event.result:
        line += f"\n>{event.result[:300]}"
    return {
        "text": f"{event.text} {event.link}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": line}},
            {"type": "actions", "elements": [{"type": "button", "url": event.link,
                                              "text": {"type": "plain_text", "text": "Open in Mainsail"}}]},
        ],
    }


def request_of(event: NotifyEvent, sub: Subscription, now: float | None = None) -> tuple[bytes, dict[str, str]]:
    """The body and headers a POST of ``event`` to ``sub`` carries."""
    payload = slack_body(event) if sub.kind == "slack" else event.model_dump()
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, "Mainsail-Event": event.type,
               "Mainsail-Delivery": event.id}
    if sub.kind == "generic":
        headers["Mainsail-Signature"] = sign(sub.secret, int(time.time() if now is None else now), body)
    return body, headers


def post(event: NotifyEvent, sub: Subscription) -> int:
    """POST ``event`` to ``sub``; its 2xx status.

    Raises:
        DeliveryFailed: no answer (refused, timed out), or not a 2xx (a redirect included); the message names
            the status and the URL's origin only (its path may be a secret).
    """
    body, headers = request_of(event, sub)
    where = f"{sub.kind} webhook {sub.id}"
    if not sub.private_ok:
        try:
            check_public(sub.url)
        except NotifyError as exc:
            raise DeliveryFailed(f"{where}: {exc}") from None
    try:
        reply = httpx.post(check_url(sub.url), content=body, headers=headers, timeout=TIMEOUT_SECONDS,
                           follow_redirects=False)
    except httpx.HTTPError as exc:
        raise DeliveryFailed(f"{where}: no answer ({type(exc).__name__})") from None
    if not 200 <= reply.status_code < 300:
        raise DeliveryFailed(f"{where}: answered {reply.status_code}", reply.status_code)
    return reply.status_code


__all__ = ["DeliveryFailed", "post", "request_of", "sign", "slack_body", "verify"]
