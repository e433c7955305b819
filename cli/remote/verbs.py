"""``export`` through the team server (submit, send, cancel, approve, deny and compact go through the client
protocol instead: cli/clients/).

It is one API call; what it prints is what the local command prints, from the API's answer.
"""

from __future__ import annotations

import click

from cli.remote.client import open_client, session_path


def export_cmd(session: str, fmt: str, output: str | None) -> None:
    """The transcript as Claude Code's JSONL, from the server (``GET /api/sessions/{id}/export``)."""
    import sys

    with open_client() as client:
        sid = client.get(session_path(session))["id"]
        text = client.get_text(session_path(sid, "export"))
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from cli.transfer import write_whole

    write_whole(output, [text])
    click.echo(f"Exported {text.count(chr(10))} entries of session {sid[:8]} to {output}.", err=True)


__all__ = ["export_cmd"]
