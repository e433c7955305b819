"""An SDK client's ``updatedPermissions`` (``PermissionResultAllow(updated_permissions=[...])``): applied to the
session that asked, and written to the settings files they name, as Claude Code does
(:mod:`workflows.permissions.updates` says what each type and destination does)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from workflows.exceptions import MainsailError
from workflows.permissions.updates import session_change, write_updates
from workflows.sessions.session_keys import resolve_added_dir
from workflows.settings.errors import SettingsError


def apply_updates(svc, sid: str, updates) -> None:
    """Apply ``updates`` to session ``sid`` and their files. One that cannot be applied is named on stderr
    (the call is still allowed: the approver said so), never a traceback."""
    if not isinstance(updates, list) or not updates:
        return
    try:
        rec = svc.store.get_session(sid)
        workspace, home = Path(rec.workspace), Path(rec.home or os.path.expanduser("~"))
        change = session_change(updates, workspace, home, rec.rules)
        dirs = [resolve_added_dir(d, cwd=str(workspace), home=str(home)) for d in change.directories]
        for written in write_updates(updates, workspace, home):
            if written.note:
                click.echo(written.note, err=True)
        svc.update_limits(sid, rules=change.add, removed_rules=change.remove, permission_mode=change.mode,
                          additional_directories=dirs or None)
    except (MainsailError, SettingsError, OSError) as exc:
        click.echo(f"Warning: the permission updates of the client's answer were not all applied: {exc}", err=True)
