"""``mainsail run PROMPT``: a new session in the current directory, watched to the end."""

from __future__ import annotations

from pathlib import Path

import click

from cli.attach import finish, submit_and_watch
from cli.connect import connect, ensure_worker
from workflows.models import PermissionMode
from workflows.settings import load_settings
from workflows.settings_files import load_permission_settings

MODES = [m.value for m in PermissionMode]


def permission_options(f):
    """The permission flags shared by the commands that start sessions."""
    f = click.option("--approval-timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
                     help="Deny a permission request nobody answered within this time.")(f)
    f = click.option("--disallowedTools", "--disallowed-tools", "disallowed_tools", multiple=True,
                     metavar="RULES", help="Deny rules, space- or comma-separated (e.g. 'Bash(rm:*)').")(f)
    f = click.option("--allowedTools", "--allowed-tools", "allowed_tools", multiple=True, metavar="RULES",
                     help="Allow rules, space- or comma-separated (e.g. 'Bash(npm test:*) Edit').")(f)
    f = click.option("--permission-mode", type=click.Choice(MODES),
                     help="default | acceptEdits | plan | dontAsk | bypassPermissions.")(f)
    return f


def session_permissions(workspace: Path, permission_mode, allowed_tools, disallowed_tools, approval_timeout,
                        settings) -> dict:
    """Mode, rules and timeout for a new session: flags, then MAINSAIL_*, then settings files.

    Raises:
        SettingsError: a settings file or a rule is wrong; the session does not start.
    """
    files = load_permission_settings(workspace.resolve(), Path.home(), allowed_tools=list(allowed_tools),
                                     disallowed_tools=list(disallowed_tools))
    mode = permission_mode or settings.permission_mode or files.default_mode or PermissionMode.DEFAULT
    timeout = approval_timeout or settings.approval_timeout_seconds or files.approval_timeout_seconds
    return {"permission_mode": mode, "rules": files.rules, "approval_timeout_seconds": timeout,
            "home": str(Path.home())}


@click.command("run")
@click.argument("prompt")
@click.option("-p", "--print", "print_mode", is_flag=True, help="Print only the final answer (for scripts).")
@click.option("--model", help="Model for this session (default: MAINSAIL_MODEL).")
@permission_options
@click.option("--max-turns", type=click.IntRange(1), help="Stop after this many model turns.")
@click.option("--cwd", "workspace", type=click.Path(exists=True, file_okay=False, path_type=Path), default=".",
              help="The session's workspace (default: the current directory).")
def run(prompt: str, print_mode: bool, model: str | None, permission_mode: str | None, allowed_tools,
        disallowed_tools, approval_timeout: float | None, max_turns: int | None, workspace: Path) -> None:
    """Run PROMPT as a new session and watch it until it finishes."""
    settings = load_settings(model=model)
    settings.require_credentials(settings.model)
    perms = session_permissions(workspace, permission_mode, allowed_tools, disallowed_tools, approval_timeout,
                                settings)
    rt = connect(settings)
    try:
        ensure_worker(rt, settings, quiet=print_mode)
        rec = rt.engine.create_session(str(workspace), max_turns=max_turns, **perms)
        result = submit_and_watch(rt, rec.id, prompt, print_mode=print_mode)
    finally:
        rt.close()
    finish(result, print_mode)
