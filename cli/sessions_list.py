"""``mainsail sessions``: the lean path first (cli/lean_read.py: no redis-py, pydantic or settings loaded),
the full one (cli/sessions.py) for everything it does not take."""

from __future__ import annotations

import click

from statemachines import State


@click.command("sessions")
@click.option("--state", type=click.Choice([s.value for s in State]), help="Only sessions in this state.")
@click.option("--workspace", type=click.Path(file_okay=False), help="Only sessions of this directory.")
@click.option("-n", "--limit", type=click.IntRange(1), default=50, show_default=True)
@click.option("--tree", is_flag=True, help="Show each session's sub-agents (child sessions) under it.")
def sessions(state: str | None, workspace: str | None, limit: int, tree: bool) -> None:
    """List sessions, newest first (QUEUED: messages waiting to run next, in order).

    Sub-agents (the child sessions of Task calls) are counted on their parent's row (AGENTS); --tree
    lists them under it, indented."""
    if not tree:
        from cli import lean_read

        if lean_read.sessions(state, workspace, limit):
            return
    from cli.sessions import list_sessions

    list_sessions(state, workspace, limit, tree)


__all__ = ["sessions"]
