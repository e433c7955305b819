"""``mainsail notify``: webhook subscriptions (add, list, remove, test), run at the server (through its Redis).

A token holder does the same through the API (``/api/notify/subscriptions``). A generic subscription's
signing secret is printed once, when it is made (docs/notifications.md: how a receiver checks it).
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime

import click

from cli.connect import connect
from workflows.exceptions import NotifyError
from workflows.notify.delivery import DeliveryFailed, post
from workflows.notify.events import NotifyEvent, session_link
from workflows.notify.subscriptions import EVENTS, make_subscription, shown_url
from workflows.settings import load_settings


def _store():
    return connect(load_settings()).store.notify()


@click.group("notify")
def notify() -> None:
    """Webhooks when a session waits for approval, finishes or fails (Slack, or signed JSON to any URL)."""


@notify.command("add")
@click.option("--url", required=True, help="Where to POST: http:// or https:// (redirects are never followed).")
@click.option("--kind", type=click.Choice(["generic", "slack"]), default="generic", show_default=True,
              help="generic: Mainsail's JSON signed with a secret; slack: an incoming webhook's text/blocks.")
@click.option("--token", "token_name", help="The sessions started with this API token.")
@click.option("--workspace", type=click.Path(exists=True, file_okay=False),
              help="The sessions in this directory (and below).")
@click.option("--event", "events", multiple=True, type=click.Choice(list(EVENTS)),
              help="Only these events (repeatable). Default: all of them.")
@click.option("--secret", help="generic: the signing secret (16+ characters). Default: a random one, printed once.")
def add(url: str, kind: str, token_name: str | None, workspace: str | None, events: tuple[str, ...],
        secret: str | None) -> None:
    """Send a token's or a workspace's session events to URL."""
    sub = make_subscription(kind=kind, url=url, token=token_name, workspace=workspace, events=list(events) or None,
                            secret=secret, created_by="cli", private_ok=True)
    _store().add(sub)
    click.echo(sub.id)
    click.echo(f"Subscription {sub.id}: {', '.join(sub.events)} of {sub.scope()}'s sessions to {kind} webhook "
               f"{shown_url(sub.url)}.", err=True)
    if sub.kind == "generic" and not secret:
        click.echo(f"Signing secret (shown only now): {sub.secret}", err=True)


@notify.command("list")
def list_subscriptions() -> None:
    """List subscriptions (URLs cut to their origin; never the secrets)."""
    subs = _store().all()
    if not subs:
        click.echo("No subscriptions. Add one with `mainsail notify add --url URL --token NAME` (or --workspace DIR).")
        return
    for s in subs:
        made = datetime.fromtimestamp(s.created_at).strftime("%Y-%m-%d %H:%M")
        click.echo(f"{s.id}  {s.kind:<7}  {shown_url(s.url):<32}  {','.join(s.events):<23}  {s.scope()}  ({made})")


@notify.command("remove")
@click.argument("sub_id")
def remove(sub_id: str) -> None:
    """Remove subscription SUB_ID: its events stop at once."""
    if not _store().remove(sub_id):
        raise NotifyError(f"No subscription {sub_id!r}. List them with `mainsail notify list`.")
    click.echo(f"Removed subscription {sub_id}.")


@notify.command("test")
@click.argument("sub_id")
def test(sub_id: str) -> None:
    """POST a test event to subscription SUB_ID now, and say what its receiver answered."""
    sub = _store().get(sub_id)
    if sub is None:
        raise NotifyError(f"No subscription {sub_id!r}. List them with `mainsail notify list`.")
    event = NotifyEvent(id=uuid.uuid4().hex, type="test", session_id="test", text="A test of a Mainsail webhook",
                        link=session_link(load_settings().public_url, "test"), at=time.time())
    try:
        status = post(event, sub)
    except DeliveryFailed as exc:
        raise NotifyError(f"The test event was not delivered: {exc}. Check the URL and the receiver.") from None
    click.echo(f"Delivered the test event to {shown_url(sub.url)}: it answered {status}.")
