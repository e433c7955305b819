"""``mainsail watch`` through the team server: the session's event stream, drawn by the local
:class:`~cli.render.Renderer`, so it looks as it does against Redis (streamed text, tool calls,
permission prompts, sub-agents, the result line).

The stream (``/api/sessions/{id}/events?until_idle=true``) replays the transcript, then follows
it, and sends ``end`` once the session is idle with nothing queued. A dropped connection is
resumed with ``Last-Event-ID`` (cli/remote/sse.py): no entry is missed or shown twice. Deltas (a
reply's text as it streams) are ephemeral: those sent while the connection was down are gone, so
after a reconnect the renderer takes no deltas until the next reply is recorded, and never again
those of a reply it was streaming when the connection dropped: that reply's entry prints the rest of
its text (the part already streamed is not repeated). A reply that began during the outage and is
still streaming when the replay ends can show its text once more, whole, when recorded.
"""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console

from cli.remote.client import open_client, session_path
from cli.remote.sse import Event, follow_events
from cli.render import Renderer
from workflows.models import AssistantEntry
from workflows.store.entry_read import read_entry

IDLE = ("idle", "extracting")


class _Screen:
    """Events to the renderer, and what a reconnect changes."""

    def __init__(self, renderer: Renderer) -> None:
        self.r = renderer
        self.deltas_on = True
        self.muted: set[str] = set()  # steps whose deltas were cut by a reconnect

    def event(self, ev: Event) -> None:
        if ev.event not in ("entry", "delta", "child"):
            return
        data = json.loads(ev.data)
        if ev.event == "delta":
            step = data.get("step") or ""
            if self.deltas_on and step not in self.muted:
                self.r.delta(step, int(data.get("attempt") or 0), data.get("text", ""))
            else:
                self.muted.add(step)
            return
        entry = read_entry(data.get("session") or "", data["entry"], data.get("id"))
        if ev.event == "child":
            self.r.link_child(data["session"], data.get("call"))  # (the Task call it runs: its label)
            self.r.child_entry(data["session"], entry)
            return
        self.r.entry(entry)
        if isinstance(entry, AssistantEntry):
            self.muted.discard(entry.step_id)
            self.deltas_on = True

    def dropped(self, why: str) -> None:
        self.r.close()
        self.deltas_on = False
        self.muted |= set(self.r.shown)
        click.secho(f"(lost the connection to the server: {why}; reconnecting...)", dim=True, err=True)

    def reconnected(self) -> None:
        click.secho("(reconnected)", dim=True, err=True)


def watch(session: str, forever: bool) -> None:
    with open_client() as client:
        view = client.get(session_path(session))
        sid = view["id"]
        idle_at_start = view["state"] in IDLE and not view.get("inbox")
        screen = _Screen(Renderer(Console(highlight=False, soft_wrap=True)))
        try:
            for ev in follow_events(client, sid, until_idle=not forever, on_drop=screen.dropped,
                                    on_reconnect=screen.reconnected):
                screen.event(ev)
        except KeyboardInterrupt:
            screen.r.close()
            click.echo(f"\nDetached from session {sid[:8]}; it goes on.", err=True)
            sys.exit(130)
    screen.r.close()
    if idle_at_start:
        click.secho(f"(session {sid[:8]} is idle{'; saving memory' if view['state'] == 'extracting' else ''})",
                    dim=True)


__all__ = ["watch"]
