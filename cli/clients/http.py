"""The client protocol (:mod:`cli.clients.protocol`) through a team server: each verb is one call of the
server's HTTP API (:mod:`cli.remote.client`), printing what the local command prints, from the API's answer."""

from __future__ import annotations

import json
import sys

import click

from cli.clients.protocol import decided_line
from cli.remote.client import open_client, session_path
from cli.remote.sse import follow_events


class HttpClient:
    """:class:`cli.clients.protocol.SessionClient` on ``MAINSAIL_SERVER`` with ``MAINSAIL_TOKEN``."""

    def send(self, session: str, message: str | None, *, interrupt: bool, clear: bool) -> None:
        with open_client() as client:
            done = client.post(session_path(session, "messages"),
                               {"message": message, "interrupt": interrupt, "clear": clear})
        sid = done["session_id"][:8]
        sent = message is not None and done["message"].lower().endswith("sent.")
        note = f" Watch: mainsail watch {sid}" if sent else ""
        click.echo(f"Session {sid}: {done['message']}{note}")

    def cancel(self, session: str, *, clear: bool) -> None:
        with open_client() as client:
            done = client.post(session_path(session, "cancel"), {"clear": clear})
        click.echo(done["message"])

    def decide(self, session: str, request: str | None, approve: bool, *, always: bool = False,
               message: str | None = None) -> None:
        body = {"request": request, "always": always} if approve else {"request": request, "message": message}
        with open_client() as client:
            d = client.post(session_path(session, "approve" if approve else "deny"), body)
        click.echo(decided_line(d["approved"], d["tool"], d["summary"], d["session_id"], d["request_id"], always,
                                d.get("rules_added") or []))

    def compact(self, session: str, instructions: str | None) -> None:
        with open_client() as client:
            sid = client.get(session_path(session))["id"]
            client.post(session_path(sid, "compact"), {"instructions": instructions})
            result = None
            for event in follow_events(client, sid, deltas=False, until_idle=True):
                if event.event == "entry":
                    entry = json.loads(event.data)["entry"]
                    if entry.get("type") == "result":
                        result = entry
        if result is None:
            raise click.ClickException(f"Session {sid[:8]} went idle without a compaction result; see "
                                       f"`mainsail show {sid[:8]}`.")
        click.echo(result.get("result", "") if not result.get("is_error") else f"Error: {result.get('result', '')}")
        if result.get("is_error"):
            sys.exit(1)


__all__ = ["HttpClient"]
