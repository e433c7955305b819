"""``mainsail demo``: a complete scripted session with no credentials at all."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from cli.attach import finish, submit_and_watch, wait_for_memory
from cli.connect import connect, ensure_worker
from workflows.models import PermissionMode
from workflows.settings import load_settings


@click.command("demo")
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path),
              help="Where to put the demo files (default: a new temporary directory).")
def demo(workspace: Path | None) -> None:
    """Run a scripted session (Read, Edit, Bash) through Redis, a worker and the machine."""
    from workflows.scripted import DEMO_FILES, DEMO_PROMPT

    ws = workspace or Path(tempfile.mkdtemp(prefix="mainsail-demo-"))
    ws.mkdir(parents=True, exist_ok=True)
    for name, content in DEMO_FILES.items():
        (ws / name).write_text(content)
    settings = load_settings(model="scripted:demo")
    rt = connect(settings)
    try:
        ensure_worker(rt, settings)
        rec = rt.engine.create_session(str(ws), permission_mode=PermissionMode.BYPASS)
        click.secho(f"Demo workspace: {ws}", dim=True)
        click.secho(f"> {DEMO_PROMPT}", bold=True)
        result = submit_and_watch(rt, rec.id, DEMO_PROMPT)
        if rt.worker is not None:
            wait_for_memory(rt, rec.id)
    finally:
        rt.close()
    for name in DEMO_FILES:
        click.secho(f"\n{name} now reads:", dim=True)
        click.echo((ws / name).read_text().rstrip())
    finish(result, print_mode=False)
