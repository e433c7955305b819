"""``mainsail demo``: a complete scripted session with no credentials at all.

The workspace it makes for itself (a temporary directory) is removed when it ends,
unless ``--keep``; a ``--workspace`` you name is yours and always stays.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import click

from cli.attach import finish, submit_and_watch, wait_for_memory
from cli.connect import connect
from cli.figures import memory_saved_line
from cli.session_service import service
from cli.standby import ensure_worker
from demo import PREFIX  # (importing demo registers the scripted models)
from workflows.models import PermissionMode
from workflows.models.options import SessionOptions
from workflows.permissions.bypass import choose_mode
from workflows.settings import load_settings


@click.command("demo")
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path),
              help="Where to put the demo files (default: a new temporary directory, removed afterwards).")
@click.option("--keep", is_flag=True, help="Keep the temporary workspace (its path is printed).")
def demo(workspace: Path | None, keep: bool) -> None:
    """Run a scripted session (Read, Edit, Bash) through Redis, a worker and the machine."""
    from demo.scripts import DEMO_FILES, DEMO_PROMPT

    ws = workspace or Path(tempfile.mkdtemp(prefix="mainsail-demo-"))
    try:
        result, sid = _run(ws, DEMO_FILES, DEMO_PROMPT)
        for name in DEMO_FILES:
            click.secho(f"\n{name} now reads:", dim=True)
            click.echo((ws / name).read_text().rstrip())
    finally:
        if workspace is None and not keep:
            shutil.rmtree(ws, ignore_errors=True)
    if workspace is None:
        where = f"Kept the demo workspace {ws}" if keep else f"Removed the demo workspace {ws} (--keep keeps it)"
        click.secho(f"\n{where}. The session stays: mainsail show {sid[:8]} (mainsail rm {sid[:8]} removes it).",
                    dim=True)
    finish(result, print_mode=False)


def _run(ws: Path, files: dict[str, str], prompt: str):
    """Write the demo files, run the scripted session in ``ws``; its result and session id."""
    ws.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (ws / name).write_text(content)
    settings = load_settings(model=f"{PREFIX}demo")
    rt = connect(settings)
    try:
        ensure_worker(rt, settings)
        # The scripted demo runs in bypassPermissions, unless a settings file disables it (then it asks).
        mode, warnings = choose_mode([(PermissionMode.BYPASS, "the demo")], workspace=str(ws), home=None)
        for warning in warnings:
            click.secho(f"Warning: {warning}", fg="yellow", err=True)
        # Off a terminal nobody can answer: what would ask is denied (as `run -p` does), never a hang.
        asks = "wait" if mode is PermissionMode.BYPASS or sys.stdin.isatty() else "deny"
        if asks == "deny":
            click.secho("Nobody can be asked here (stdin is not a terminal): calls that would ask are denied.",
                        fg="yellow", err=True)
        rec = service(rt).fresh(ws, SessionOptions(permission_mode=mode, asks=asks))
        click.secho(f"Demo workspace: {ws}", dim=True)
        click.secho(f"> {prompt}", bold=True)
        result = submit_and_watch(rt, rec.id, prompt)
        if rt.worker is not None:
            saving = rt.store.get_session(rec.id).saving_memory()
            wait_for_memory(rt, rec.id)
            if saving:
                click.secho(memory_saved_line(rt.store.get_session(rec.id)), dim=True)
    finally:
        rt.close()
    return result, rec.id
