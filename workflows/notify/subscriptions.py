"""Webhook subscriptions: where a token's or a workspace's session events go.

A subscription is for the sessions of one API token (``token``: its name) or of one workspace (``workspace``:
a resolved directory, everything under it included), and for some of the events ``waiting`` (a session starts
waiting for a person's approval), ``finished`` (a run ended well) and ``failed`` (a run ended in an error).
``kind`` ``slack``: the URL is a Slack (or Mattermost, Discord ``/slack``...) incoming webhook and gets
``text``/``blocks`` JSON; ``generic``: the URL gets Mainsail's JSON, signed with the subscription's ``secret``
(docs/notifications.md says how a receiver checks it).
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import time
import uuid
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from workflows.exceptions import NotifyError
from workflows.models.valid_text import ValidJson

EVENTS = ("waiting", "finished", "failed")
SECRET_PREFIX = "whsec_"


class Subscription(ValidJson):
    """One webhook: ``url`` gets ``events`` of the sessions of ``token`` or under ``workspace``."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    kind: Literal["slack", "generic"]
    url: str
    events: list[Literal["waiting", "finished", "failed"]] = Field(default_factory=lambda: list(EVENTS))
    token: str = ""
    workspace: str = ""
    secret: str = ""  # generic: the HMAC key (shown once, when made); slack: none (its URL is the secret)
    created_by: str = ""
    created_at: float = Field(default_factory=time.time)
    # Whether this webhook may go to a loopback, private or link-local address: only when made by the server's
    # operator (`mainsail notify add`) or an admin token. A writer token's webhooks reach public addresses only,
    # checked when made and again at each delivery (its host could be made to resolve elsewhere later).
    private_ok: bool = False

    def covers(self, token: str, workspace: str) -> bool:
        """Whether a session of ``token`` in ``workspace`` notifies this subscription."""
        if self.token:
            return token == self.token
        return workspace == self.workspace or workspace.startswith(self.workspace.rstrip("/") + "/")

    def scope(self) -> str:
        return f"token {self.token}" if self.token else f"workspace {self.workspace}"

    def shown(self, *, with_secret: bool = False) -> dict:
        """What a listing shows: the URL cut to its origin (a Slack URL's path is its secret), no secret unless
        ``with_secret`` (once, when it is made)."""
        out = self.model_dump(exclude={"secret", "url"})
        out["url"] = shown_url(self.url)
        if with_secret and self.secret:
            out["secret"] = self.secret
        return out


def shown_url(url: str) -> str:
    """``url`` as it may be shown or logged: scheme, host and port only (paths and queries hold secrets)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "?", f":{parts.port}" if parts.port else ""
    except ValueError:  # (a malformed port or host: nothing of it is shown)
        return "(malformed URL)"
    return f"{parts.scheme}://{host}{port}/…"


def check_url(url: str) -> str:
    """``url`` if a webhook may be sent to it: ``http`` or ``https`` with a host, no user or password in it.

    Raises:
        NotifyError: anything else (``file:``, ``ftp:``, a relative URL, credentials in the URL).
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a malformed port raises here)
    except ValueError:
        raise NotifyError(f"Webhook URL {shown_url(url)!r} is malformed: give an http:// or https:// URL.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise NotifyError(f"Webhook URL scheme {parts.scheme or '(none)'!r} is refused: a webhook goes to an http:// "
                          "or https:// URL with a host.")
    if parts.username or parts.password:
        raise NotifyError("A webhook URL may not carry a user or password (it would be shown and logged): put the "
                          "credential in the receiver's path, or use a generic subscription's signing secret.")
    return url


def check_public(url: str) -> None:
    """Refuse ``url`` unless every address its host resolves to is a public (global) one: a webhook made by a
    writer token must not reach the server's own machine or network (Redis, a metadata service, an internal API).

    Raises:
        NotifyError: the host does not resolve, or resolves to a loopback, private, link-local or reserved address.
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        raise NotifyError(f"Webhook host {host!r} does not resolve: give a URL whose host this server can "
                          "reach.") from None
    inner = sorted(a for a in addresses if not ipaddress.ip_address(a.split("%", 1)[0]).is_global)
    if inner or not addresses:
        raise NotifyError(f"Webhook host {host!r} resolves to a non-public address ({', '.join(inner) or 'none'}): "
                          "only the server's operator (`mainsail notify add`) or an admin token may send webhooks "
                          "inside the server's network.")


def make_subscription(*, kind: str, url: str, token: str | None, workspace: str | None,
                      events: list[str] | None = None, secret: str | None = None, created_by: str = "",
                      private_ok: bool = False) -> Subscription:
    """A subscription checked: exactly one of ``token``/``workspace``, known events, an http(s) URL; a generic
    one gets a new random secret unless one is given (at least 16 characters).

    Raises:
        NotifyError: what is wrong, and how to say it instead.
    """
    if bool(token) == bool(workspace):
        raise NotifyError("A subscription is for one API token's sessions (--token NAME) or one workspace's "
                          "(--workspace DIR): give exactly one.")
    if kind not in ("slack", "generic"):
        raise NotifyError(f"Unknown webhook kind {kind!r}: use slack (an incoming webhook) or generic (signed JSON).")
    wanted = list(dict.fromkeys(events or EVENTS))
    unknown = [e for e in wanted if e not in EVENTS]
    if unknown:
        raise NotifyError(f"Unknown event(s) {', '.join(unknown)}: use any of {', '.join(EVENTS)}.")
    if kind == "slack" and secret:
        raise NotifyError("A slack subscription has no signing secret (Slack does not check one): leave --secret out, "
                          "or use --kind generic.")
    if secret is not None and kind == "generic" and len(secret) < 16:
        raise NotifyError("A signing secret must have at least 16 characters; leave it out to get a random one.")
    if kind == "generic" and not secret:
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    ws = os.path.realpath(os.path.expanduser(workspace)) if workspace else ""
    url = check_url(url.strip())
    if not private_ok:
        check_public(url)
    return Subscription(kind=kind, url=url, events=wanted, token=token or "", workspace=ws,
                        secret=secret or "", created_by=created_by, private_ok=private_ok)


__all__ = ["EVENTS", "Subscription", "check_public", "check_url", "make_subscription", "shown_url"]
