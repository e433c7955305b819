"""What clients (the CLI, the API) do to schedules: add, remove, enable or disable, run now, and
when each runs next. The record (``mainsail:schedule:{id}``) is written before its beat entry and
removed after it, so the beat never holds an entry for a schedule that does not exist for long.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tasks import beat
from tasks.dispatch import dispatch
from workflows.exceptions import InvalidSchedule
from workflows.schedules import cron
from workflows.schedules.models import Schedule
from workflows.sessions.firing import Fired, fire
from workflows.sessions.setup import session_options
from workflows.store.schedules import BrokenSchedule


def check_workspace(raw: str) -> str:
    """The absolute, resolved workspace ``raw`` names.

    Raises:
        InvalidSchedule: it is not absolute or not an existing directory.
    """
    path = os.path.realpath(os.path.expanduser(raw))
    if not os.path.isabs(os.path.expanduser(raw)) or not os.path.isdir(path):
        raise InvalidSchedule(f"Workspace {raw!r} is not an existing directory (give an absolute path of a "
                              "directory the workers can reach).")
    return path


def add(engine, settings, schedule: Schedule, token=None, trust: str | None = None, check_dir=None) -> Schedule:
    """Check and keep a new schedule; it first fires at its cron's next time. ``token``: the API
    token adding it, ``check_dir``: its check of each directory the sessions would reach (see
    :func:`check_options`). ``trust``: its maker vouches for the workspace's own
    settings (``--trust-project``); so does a token made with it: the schedule carries the content hash
    trusted now (``trusted_hash``), and its firings apply those settings while the hash is the same.

    Raises:
        InvalidSchedule: a wrong cron expression or workspace.
        SettingsError, McpConfigError: the workspace's settings files (or the options) are wrong, as
            `mainsail submit` there would say.
        BypassDisabled: its sessions would run in bypassPermissions, and ``token`` may not.
    """
    schedule.workspace = check_workspace(schedule.workspace)
    check_options(settings, schedule, token, trust, check_dir)
    if trust or (token is not None and token.trust_project and token.allows_workspace(schedule.workspace)):
        from workflows.trust.gated import project_gated

        schedule.trusted_hash = project_gated(Path(schedule.workspace)).digest()
    beat.ensure_configured(settings)
    engine.store.schedules().add(schedule)
    beat.save_entry(schedule, time.time())
    return schedule


def check_options(settings, schedule: Schedule, token=None, trust: str | None = None, check_dir=None) -> None:
    """Check a schedule's options as a firing would apply them now (settings files included).

    ``token``: an API token acting on it (adding, running, enabling): it must be allowed what its
    sessions would do (bypassPermissions needs ``--allow-bypass``). ``check_dir``: called with each
    directory the sessions would reach besides the workspace (``add_dirs`` and the settings files'
    ``additionalDirectories``), resolved; it raises for one the caller may not use.

    Raises:
        SettingsError, McpConfigError: the workspace's settings files (or the options) are wrong.
        BypassDisabled: its sessions would run in bypassPermissions, and ``token`` may not.
    """
    opts = schedule.options
    checked = settings.model_copy(update={"model": opts.model}) if opts.model else settings
    perms, _ = session_options(Path(schedule.workspace), checked, permission_mode=opts.permission_mode,
                               allowed_tools=opts.allowed_tools, disallowed_tools=opts.disallowed_tools,
                               add_dirs=opts.add_dirs, fallback_model=opts.fallback_model, cwd=schedule.workspace,
                               token=token, mode_given_by="the schedule's permission_mode", trust=trust)
    if check_dir is not None:
        for extra in perms.get("additional_directories") or []:
            check_dir(extra)


def remove(engine, settings, schedule_id: str) -> Schedule | BrokenSchedule:
    """Remove a schedule (a broken record too: that is how one is got rid of)."""
    store = engine.store.schedules()
    schedule = store.record(schedule_id)
    beat.ensure_configured(settings)
    beat.delete_entry(schedule.id)
    store.delete(schedule.id)
    return schedule


def set_enabled(engine, settings, schedule_id: str, enabled: bool) -> Schedule:
    """Enable or disable; a re-enabled schedule next fires at its cron's next time (no catching up)."""
    store = engine.store.schedules()
    schedule = store.get(schedule_id)
    schedule.enabled = enabled
    store.save(schedule)
    beat.ensure_configured(settings)
    beat.save_entry(schedule, time.time())
    return schedule


def run_now(engine, settings, schedule_id: str) -> Fired:
    """Fire a schedule by hand, now (also a disabled one); its steps are dispatched."""
    fired = fire(engine, settings, schedule_id, manual=True)
    dispatch(fired.steps)
    return fired


@dataclass
class NextRun:
    """When a schedule fires next: ``at``, or ``overdue`` since ``at`` (no beat has sent it yet)."""

    at: datetime | None
    overdue: bool = False


def next_run(settings, schedule: Schedule, now: datetime | None = None) -> NextRun:
    if not schedule.enabled:
        return NextRun(None)
    now = now or datetime.now(UTC)
    beat.ensure_configured(settings)
    last = beat.entry_last_run(schedule.id)
    if last is None:
        return NextRun(cron.next_after(schedule.cron, now))
    due = cron.next_after(schedule.cron, last)
    return NextRun(due, overdue=(now - due).total_seconds() > settings.beat_late_seconds)


__all__ = ["NextRun", "add", "check_options", "check_workspace", "next_run", "remove", "run_now", "set_enabled"]
