"""``sessions``, ``show`` and ``pending`` through the team server: the API's views, printed by the
local commands' own renderers (cli/sessions.py, cli/approvals.py, cli/render.py)."""

from __future__ import annotations

import click
from rich.console import Console

from cli.approvals import print_request
from cli.remote.client import Client, open_client, server_path, session_path
from cli.remote.views import record_of
from cli.render import Renderer
from cli.session_table import print_table
from cli.sessions import describe
from workflows.models import PermissionRequest, SessionRecord
from workflows.store.entry_read import read_entry

#: Rows of one transcript page (the API's largest).
PAGE = 5000


def sessions(state: str | None, workspace: str | None, limit: int, tree: bool) -> None:
    with open_client() as client:
        views = client.get("/api/sessions", state=state, workspace=server_path(workspace, "--workspace"),
                           limit=limit)
        if not views:
            click.echo("No sessions" + (" match." if state or workspace
                                        else " yet: start one with `mainsail submit --cwd DIR \"...\"`."))
            return
        rows = [(0, record_of(v)) for v in views]
        if tree:
            rows = _tree(client, [rec for _, rec in rows])
        queued = {v["id"]: v.get("queued", 0) for v in views}
    print_table(rows, queued)


def _tree(client: Client, top: list[SessionRecord]) -> list[tuple[int, SessionRecord]]:
    """Each session followed by its sub-agents (and theirs), indented, as ``--tree`` prints locally."""
    everyone = [record_of(v) for v in client.get("/api/sessions", children="true", limit=10_000)]
    by_parent: dict[str, list[SessionRecord]] = {}
    for rec in everyone:
        if rec.parent_session_id:
            by_parent.setdefault(rec.parent_session_id, []).append(rec)
    rows: list[tuple[int, SessionRecord]] = []

    def add(rec: SessionRecord, depth: int) -> None:
        rows.append((depth, rec))
        for child in sorted(by_parent.get(rec.id, []), key=lambda c: c.created_at):
            add(child, depth + 1)

    for rec in top:
        add(rec, 0)
    return rows


def show(session: str, no_transcript: bool) -> None:
    with open_client() as client:
        view = client.get(session_path(session))
        for line in describe(record_of(view), view.get("inbox") or []):
            click.echo(line)
        if no_transcript:
            return
        click.echo("")
        r = Renderer(Console(highlight=False, soft_wrap=True))
        after = None
        while True:
            page = client.get(session_path(view["id"], "transcript"), after=after, limit=PAGE)
            for entry, row in zip(page["entries"], page.get("ids") or [None] * len(page["entries"])):
                r.entry(read_entry(view["id"], entry, row))
            after = page.get("next")
            if not after:
                break
        r.close()


def pending() -> None:
    with open_client() as client:
        waiting = client.get("/api/approvals")
    for p in waiting:
        print_request(p["session_id"], PermissionRequest.model_validate(p["request"]), p["prompt"],
                      p["session_title"], p.get("agent_type"), p.get("parent_session_id"))
    if not waiting:
        click.echo("No pending permission requests.")


__all__ = ["pending", "sessions", "show"]
