"""``mainsail schedule`` through the team server: add, list, show, rm, run, enable, disable.

Each is one API call (server/api/schedules.py); what it prints is what the local command prints
(the same functions of cli/schedule.py), from the API's answer. The workspace and added directories
are paths on the server's machine, sent as given.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import quote

import click

from cli import schedule as local
from cli.remote.client import open_client, server_path
from tasks.scheduling import NextRun
from workflows.schedules import Schedule, ScheduleRun
from workflows.store.schedules import BrokenSchedule


def _path(schedule_id: str, *rest: str) -> str:
    return "/".join(["/api/schedules", quote(schedule_id, safe=""), *rest])


def _schedule(view: dict) -> tuple[Schedule | BrokenSchedule, NextRun | None]:
    """A ``ScheduleView``: the schedule and when it fires next (a broken record: what the server said of it)."""
    if view.get("broken"):
        return BrokenSchedule(view["id"], view["broken"], view.get("name") or "", view.get("cron") or "",
                              view.get("workspace") or ""), None
    at = view.get("next_run")
    return Schedule.model_validate(view), NextRun(datetime.fromisoformat(at) if at else None,
                                                   bool(view.get("overdue")))


def add(cron: str, prompt: str, workspace: str | None, name: str | None, continue_: bool, model, fallback_model,
        max_turns, max_budget_usd, system_prompt, append_system_prompt, no_memory: bool, disabled: bool,
        permission_mode, allowed_tools, disallowed_tools, approval_timeout, add_dirs) -> None:
    from cli.trust_flag import flag_trust

    if flag_trust():
        raise click.UsageError("--trust-project is not available through MAINSAIL_SERVER: the server trusts a "
                               "workspace for a token made with `mainsail token create --workspace DIR "
                               "--trust-project`. Unset MAINSAIL_SERVER to use it with Redis directly.")
    if workspace is None:
        raise click.UsageError("Through MAINSAIL_SERVER, give the schedule's workspace with --cwd DIR: an absolute "
                               "path of a directory on the server's machine.")
    options = {"permission_mode": permission_mode, "model": model, "max_turns": max_turns,
               "max_budget_usd": max_budget_usd, "allowed_tools": list(allowed_tools),
               "disallowed_tools": list(disallowed_tools), "add_dirs": [server_path(d, "--add-dir") for d in add_dirs],
               "approval_timeout_seconds": approval_timeout, "fallback_model": fallback_model,
               "system_prompt": system_prompt, "append_system_prompt": append_system_prompt, "no_memory": no_memory}
    body = {"cron": cron, "workspace": server_path(workspace, "--cwd"), "prompt": prompt, "name": name,
            "mode": "continue" if continue_ else "fresh", "enabled": not disabled,
            "options": {k: v for k, v in options.items() if v is not None}}
    with open_client() as client:
        view = client.post("/api/schedules", {k: v for k, v in body.items() if v is not None})
    s, nxt = _schedule(view)
    local.print_added(s, nxt.at)


def list_schedules() -> None:
    with open_client() as client:
        views = client.get("/api/schedules")
    local.print_list([_schedule(v) for v in views])


def show(schedule_id: str) -> None:
    with open_client() as client:
        view = client.get(_path(schedule_id))
    s, nxt = _schedule(view)
    if isinstance(s, BrokenSchedule):
        raise click.ClickException(s.problem())
    local.print_show(s, nxt.at, [ScheduleRun.model_validate(r) for r in view.get("runs") or []][:10])


def rm(schedule_id: str) -> None:
    with open_client() as client:
        s, _ = _schedule(client.get(_path(schedule_id)))
        client.delete(_path(s.id))
    local.print_removed(s)


def run(schedule_id: str) -> None:
    with open_client() as client:
        started = client.post(_path(schedule_id, "run"))
    local.print_ran(started["session_id"], served=True)  # the server's workers (its /metrics says how many)


def enable(schedule_id: str) -> None:
    _toggle(schedule_id, "enable")


def disable(schedule_id: str) -> None:
    _toggle(schedule_id, "disable")


def _toggle(schedule_id: str, verb: str) -> None:
    with open_client() as client:
        s, nxt = _schedule(client.post(_path(schedule_id, verb)))
    local.print_toggled(s, nxt.at)


#: Subcommand of ``mainsail schedule`` -> its function here (cli/remote/__init__.py routes them).
COMMANDS = {"add": add, "list": list_schedules, "show": show, "rm": rm, "run": run, "enable": enable,
            "disable": disable}
