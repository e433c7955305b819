"""``mainsail rewind`` through the team server (``GET``/``POST /api/sessions/{id}/rewind``): the same list,
questions and report as the local command; the server restores the files on its machine."""

from __future__ import annotations

import sys

import click

from cli.remote.client import open_client, session_path
from cli.rewind import CHOICES, MODES, point_line, report
from workflows.engine.rewinding import Rewound
from workflows.models import RewindEntry


def rewind(session: str, list_: bool, to: int | None, mode: str, force: bool) -> None:
    with open_client() as client:
        sid = client.get(session_path(session))["id"]
        points = client.get(session_path(sid, "rewind"))
        lines = [point_line(p["number"], p["timestamp"], p["message"], p["files"]) for p in points]
        if list_ or (to is None and not sys.stdin.isatty()):
            click.echo("\n".join(lines) if lines else f"Session {sid[:8]} has no message to rewind to.")
            if not list_ and points:
                click.echo(f"Choose one: mainsail rewind {sid[:8]} --to N [--code | --conversation | --both]", err=True)
                sys.exit(2)
            return
        if not points:
            raise click.ClickException(f"Session {sid[:8]} has no message to rewind to.")
        if to is None:
            click.echo(f"Rewind session {sid[:8]} to before which message?")
            click.echo("\n".join(lines))
            to = click.prompt(f"Message number (1-{len(points)})", type=click.IntRange(1, len(points)))
            for i, (_, text) in enumerate(CHOICES, 1):
                click.echo(f"  {i}. {text}")
            mode = CHOICES[click.prompt("Restore what?", type=click.IntRange(1, 3), default=1) - 1][0]
        code, conversation = MODES[mode]
        done = client.post(session_path(sid, "rewind"), {"to": to, "code": code, "conversation": conversation,
                                                         "force": force})
    entry = RewindEntry(session_id=sid, to="", code=code, conversation=conversation, prompt=done["prompt"],
                        restored=done["restored"], deleted=done["deleted"], skipped=done["skipped"])
    for line in report(sid, to, Rewound(entry)):
        click.echo(line)
