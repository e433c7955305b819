"""``mainsail schedule``: cron schedules of unattended sessions (add, list, show, rm, run, enable,
disable). ``mainsail beat`` fires them; each firing is a normal session (docs/schedules.md)."""

from __future__ import annotations

import getpass
import os
from datetime import UTC, datetime

import click

from cli.connect import Runtime, connect
from cli.run import permission_options
from cli.trust_flag import flag_trust, trust_option
from tasks import scheduling
from workflows.models.options import RemoteOptions
from workflows.schedules import RunMode, Schedule, ScheduleRun
from workflows.settings import load_settings
from workflows.store.schedules import BrokenSchedule


def _connect() -> tuple[Runtime, object]:
    settings = load_settings()
    return connect(settings), settings


def _utc(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M") if ts else "-"


@click.group("schedule")
def schedule() -> None:
    """Cron schedules of unattended sessions (fired by `mainsail beat`; times are UTC)."""


@schedule.command("add")
@click.argument("cron")
@click.argument("prompt")
@click.option("--cwd", "workspace", default=".", show_default=True, help="The sessions' workspace.")
@click.option("--name", help="A name to show and to use instead of the id (default: the prompt's first words).")
@click.option("--continue", "continue_", is_flag=True,
              help="Each firing continues the schedule's last session (default: a fresh session each time).")
@click.option("--model", help="Model of the sessions (an alias or a model id).")
@click.option("--fallback-model", metavar="MODEL", help="Retry a call once with this model on 529 overloaded.")
@click.option("--max-turns", type=click.IntRange(1), help="Stop a run after this many model turns.")
@click.option("--max-budget-usd", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              help="Stop a run once it has cost this much.")
@click.option("--system-prompt", metavar="TEXT", help="Replace the default system prompt.")
@click.option("--append-system-prompt", metavar="TEXT", help="Append TEXT to the system prompt.")
@click.option("--no-memory", is_flag=True, help="No auto-memory for the sessions.")
@click.option("--disabled", is_flag=True, help="Add it disabled (`mainsail schedule enable` later).")
@permission_options
@trust_option
def add(cron: str, prompt: str, workspace: str, name: str | None, continue_: bool, model, fallback_model,
        max_turns, max_budget_usd, system_prompt, append_system_prompt, no_memory: bool, disabled: bool,
        permission_mode, allowed_tools, disallowed_tools, approval_timeout, add_dirs) -> None:
    """Add a schedule: CRON (5 fields, UTC, e.g. "0 3 * * *") runs PROMPT in --cwd.

    A call that would ask waits for a decision (`mainsail pending`, `mainsail approve`): nobody is at
    a terminal. Use --permission-mode and --allowedTools to say what may run unattended.
    """
    rt, settings = _connect()
    options = RemoteOptions(permission_mode=permission_mode, model=model, max_turns=max_turns,
                             max_budget_usd=max_budget_usd, allowed_tools=list(allowed_tools),
                             disallowed_tools=list(disallowed_tools), add_dirs=[os.path.abspath(d) for d in add_dirs],
                             approval_timeout_seconds=approval_timeout, fallback_model=fallback_model,
                             system_prompt=system_prompt, append_system_prompt=append_system_prompt,
                             no_memory=no_memory)
    s = Schedule(name=name or " ".join(prompt.split()[:5])[:40], cron=cron, workspace=os.path.abspath(workspace),
                 prompt=prompt, mode=RunMode.CONTINUE if continue_ else RunMode.FRESH, options=options,
                 enabled=not disabled, created_by=f"user:{getpass.getuser()}")
    s = scheduling.add(rt.engine, settings, s, trust=flag_trust())
    print_added(s, scheduling.next_run(settings, s).at)


def print_added(s: Schedule, next_at: datetime | None) -> None:
    click.echo(s.id)
    when = f"next run {next_at:%Y-%m-%d %H:%M} UTC" if next_at else "disabled"
    click.echo(f"Schedule {s.id[:8]} ({s.name}): '{s.cron}' in {s.workspace}, {when}. `mainsail beat` fires it; "
               "a worker serving the tools queue starts its sessions.", err=True)


@schedule.command("list")
def list_schedules() -> None:
    """List schedules: next run (UTC), last run and its session."""
    rt, settings = _connect()
    print_list([(s, None if isinstance(s, BrokenSchedule) else scheduling.next_run(settings, s))
                for s in rt.store.schedules().records()])


def print_list(rows: list[tuple[Schedule | BrokenSchedule, scheduling.NextRun | None]]) -> None:
    """The schedules' table: each with its next run; a broken record marked so, and why under the table."""
    if not rows:
        click.echo('No schedules. Add one with `mainsail schedule add "0 3 * * *" --cwd REPO "prompt"`.')
        return
    click.echo(f"{'ID':<9} {'NAME':<20} {'CRON':<15} {'NEXT RUN (UTC)':<25} {'LAST RUN':<17} {'LAST SESSION':<13} "
               "WORKSPACE")
    broken = [s for s, _ in rows if isinstance(s, BrokenSchedule)]
    for s, nxt in rows:
        if isinstance(s, BrokenSchedule):
            click.echo(f"{s.id[:8]:<9} {s.name[:20]:<20} {s.cron[:15]:<15} {'BROKEN (never fires)':<25} {'-':<17} "
                       f"{'-':<13} {s.workspace or '-'}")
            continue
        shown = "disabled" if not s.enabled else f"{nxt.at:%Y-%m-%d %H:%M}" + (" overdue" if nxt.overdue else "")
        last = _utc(s.last_fired_at) + (" failed" if s.last_error else "")
        click.echo(f"{s.id[:8]:<9} {s.name[:20]:<20} {s.cron:<15} {shown:<25} {last:<17} "
                   f"{(s.last_session_id or '-')[:8]:<13} {s.workspace}")
    for s in broken:
        click.echo(s.problem(), err=True)


@schedule.command("show")
@click.argument("schedule_id")
def show(schedule_id: str) -> None:
    """A schedule's settings and its latest runs."""
    rt, settings = _connect()
    store = rt.store.schedules()
    s = store.get(store.resolve(schedule_id))
    print_show(s, scheduling.next_run(settings, s).at, store.runs(s.id, 10))


def print_show(s: Schedule, next_at: datetime | None, runs: list[ScheduleRun]) -> None:
    """A schedule's settings and ``runs`` (its latest, newest first)."""
    opts = {k: v for k, v in s.options.model_dump(mode="json").items() if v not in (None, [], False)}
    for label, value in [("id", s.id), ("name", s.name), ("cron", f"{s.cron} (UTC)"), ("workspace", s.workspace),
                         ("prompt", s.prompt), ("runs", s.mode.value), ("enabled", "yes" if s.enabled else "no"),
                         ("next run", f"{next_at:%Y-%m-%d %H:%M} UTC" if next_at else "-"),
                         ("options", ", ".join(f"{k}={v}" for k, v in opts.items()) or "-"),
                         ("created", f"{_utc(s.created_at)} by {s.created_by or '?'}")]:
        click.echo(f"{label:<10} {value}")
    for run in runs:
        how = "by hand" if run.manual else f"due {_utc(run.due_at)}" + (f", late ({run.missed} missed)"
                                                                          if run.late else "")
        outcome = f"session {run.session_id[:8]}" if run.session_id else f"failed: {run.error}"
        click.echo(f"  {_utc(run.fired_at)}  {how}: {outcome}")


@schedule.command("rm")
@click.argument("schedule_id")
def rm(schedule_id: str) -> None:
    """Remove a schedule (its sessions stay)."""
    rt, settings = _connect()
    print_removed(scheduling.remove(rt.engine, settings, rt.store.schedules().resolve(schedule_id)))


def print_removed(s: Schedule | BrokenSchedule) -> None:
    click.echo(f"Removed schedule {s.id[:8]} ({s.name}).")


@schedule.command("run")
@click.argument("schedule_id")
def run(schedule_id: str) -> None:
    """Fire a schedule now, by hand (also a disabled one); prints the session id."""
    rt, settings = _connect()
    fired = scheduling.run_now(rt.engine, settings, rt.store.schedules().resolve(schedule_id))
    if fired.session_id is None:
        raise click.ClickException(f"Schedule {fired.schedule_id[:8]} did not start a session: {fired.skipped}.")
    queues = rt.store.live_queues()
    print_ran(fired.session_id, "tools" in queues and "model" in queues)


def print_ran(session_id: str, served: bool) -> None:
    """A run by hand started ``session_id`` (``served``: workers listen on its queues)."""
    click.echo(session_id)
    if not served:
        click.echo("No worker is listening: the session waits in its queue until you start `mainsail worker`.",
                   err=True)
    click.echo(f"Watch it with: mainsail watch {session_id[:8]}", err=True)


def _toggle(schedule_id: str, enabled: bool) -> None:
    rt, settings = _connect()
    s = scheduling.set_enabled(rt.engine, settings, rt.store.schedules().resolve(schedule_id), enabled)
    print_toggled(s, scheduling.next_run(settings, s).at)


def print_toggled(s: Schedule, next_at: datetime | None) -> None:
    click.echo(f"Schedule {s.id[:8]} ({s.name}) " + (f"enabled: next run {next_at:%Y-%m-%d %H:%M} UTC."
                                                      if s.enabled else "disabled: it fires no more until enabled."))


@schedule.command("enable")
@click.argument("schedule_id")
def enable(schedule_id: str) -> None:
    """Enable a schedule: it next fires at its cron's next time (missed runs are not caught up)."""
    _toggle(schedule_id, True)


@schedule.command("disable")
@click.argument("schedule_id")
def disable(schedule_id: str) -> None:
    """Disable a schedule: the beat stops firing it (`schedule run` still can)."""
    _toggle(schedule_id, False)


__all__ = ["schedule"]
