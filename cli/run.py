"""``mainsail run PROMPT``: a new session in the current directory, watched to the end."""

from __future__ import annotations

from pathlib import Path

import click

from cli.attach import finish, submit_and_watch
from cli.connect import connect, ensure_worker
from workflows.models import PermissionMode
from workflows.settings import load_settings

MODES = [m.value for m in PermissionMode]


@click.command("run")
@click.argument("prompt")
@click.option("-p", "--print", "print_mode", is_flag=True, help="Print only the final answer (for scripts).")
@click.option("--model", help="Model for this session (default: MAINSAIL_MODEL).")
@click.option("--permission-mode", type=click.Choice(MODES), help="How tool calls are allowed (default: default).")
@click.option("--max-turns", type=click.IntRange(1), help="Stop after this many model turns.")
@click.option("--cwd", "workspace", type=click.Path(exists=True, file_okay=False, path_type=Path), default=".",
              help="The session's workspace (default: the current directory).")
def run(prompt: str, print_mode: bool, model: str | None, permission_mode: str | None,
        max_turns: int | None, workspace: Path) -> None:
    """Run PROMPT as a new session and watch it until it finishes."""
    settings = load_settings(model=model, permission_mode=permission_mode)
    settings.require_credentials(settings.model)
    rt = connect(settings)
    try:
        ensure_worker(rt, settings, quiet=print_mode)
        rec = rt.engine.create_session(str(workspace), max_turns=max_turns)
        result = submit_and_watch(rt, rec.id, prompt, print_mode=print_mode)
    finally:
        rt.close()
    finish(result, print_mode)
