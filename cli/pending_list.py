"""``mainsail pending``: when no session waits, the lean path says so (cli/lean_read.py: no redis-py,
pydantic or settings loaded); otherwise the full one lists the requests (cli/approvals.py)."""

from __future__ import annotations

import click

from cli.session_table import NONE_PENDING


@click.command("pending")
def pending() -> None:
    """List permission requests waiting for a decision, across sessions."""
    from cli import lean_read

    if lean_read.nothing_pending():
        click.echo(NONE_PENDING)
        return
    from cli.approvals import list_pending

    list_pending()


__all__ = ["pending"]
