"""``mainsail rm`` and ``mainsail gc``: removing sessions, by name or by age.

Both remove exactly what a session owns (see :mod:`workflows.store.housekeeping`): its
keys, its entries in the shared sets, the saved tool results of its own calls.
Neither starts a server: with none running there is nothing to remove.
"""

from __future__ import annotations

import re
import time
from datetime import datetime

import click

from cli.connect import Runtime
from cli.readonly import existing_runtime
from cli.session_service import service
from statemachines import State
from workflows.commit.support import cancel_message
from workflows.exceptions import SessionBusy
from workflows.settings import load_settings
from workflows.store.housekeeping import (
    GC_STATES,
    STOP_WAIT_SECONDS,
    GcReport,
    Removal,
    busy_reason,
    remove_old,
    running_steps,
)

_AGE = re.compile(r"\A\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*\Z")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` (a bare number is days) in seconds.

    Raises:
        click.BadParameter: anything else.
    """
    m = _AGE.match(text or "")
    if not m or float(m.group(1)) <= 0:
        raise click.BadParameter(f"{text!r} is not an age: use a number with s, m, h, d or w (30d, 12h); "
                                 "a bare number is days.", param_hint="--older-than")
    return float(m.group(1)) * _UNIT[m.group(2)]


def size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def describe_removal(r: Removal) -> str:
    """One line: id, state, last activity, what it frees, title and workspace."""
    rec = r.record
    files = f" + {_plural(len(r.files), 'saved result')} {size(r.file_bytes)}" if r.files else ""
    kept = f" ({r.kept_files} kept: another session refers to them)" if r.kept_files else ""
    title = rec.title if len(rec.title) <= 40 else rec.title[:39] + "…"
    return (f"  {rec.id[:8]}  {rec.state.value:<19} {datetime.fromtimestamp(rec.updated_at):%Y-%m-%d %H:%M}  "
            f"{_plural(len(r.keys), 'key')} {size(r.redis_bytes)}{files}{kept}  {title or '-'}  {rec.workspace}")


@click.command("rm")
@click.argument("sessions", nargs=-1, required=True)
@click.option("--force", is_flag=True, help="Cancel a busy session (dropping its queued messages) first.")
def rm(sessions: tuple[str, ...], force: bool) -> None:
    """Remove sessions (id or unique prefix): records, transcripts, steps, queues, memory notes, and the
    saved tool results of their own calls. A busy session is refused unless --force."""
    rt = existing_runtime(what="no session to remove", code=1)
    sids = list(dict.fromkeys(rt.store.resolve_session(s) for s in sessions))
    if not force:
        busy = [(sid, busy_reason(rt.store.get_session(sid), rt.store.steps(sid))) for sid in sids]
        busy = [(sid, why) for sid, why in busy if why]
        if busy:
            listing = "; ".join(f"{sid[:8]}: {why}" for sid, why in busy)
            raise SessionBusy(f"Nothing was removed: {_plural(len(busy), 'session')} busy ({listing}). Wait, "
                              "or `mainsail rm --force` to cancel first.")
    for sid in sids:
        if force:
            _stop(rt, sid)
        removal = service(rt).remove(sid, force=force)
        files = f" and {_plural(len(removal.files), 'saved tool result')} ({size(removal.file_bytes)})" \
            if removal.files else ""
        click.echo(f"Removed session {sid[:8]} ({removal.record.title or 'untitled'}): "
                   f"{_plural(len(removal.keys), 'key')} ({size(removal.redis_bytes)}){files}.")


def _stop(rt: Runtime, sid: str) -> None:
    """Cancel a busy session and let its running steps notice (a killed command, a dropped model call)."""
    rec = rt.store.get_session(sid)
    if rec.state is State.IDLE and not rt.store.inbox(sid):
        return
    stopped = service(rt).stop(sid, "Removed by user (mainsail rm --force)", clear_queue=True)
    if stopped.cancelled:
        click.echo(cancel_message(sid, stopped))
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    while running_steps(rt.store, sid) and time.monotonic() < deadline:
        time.sleep(0.1)


@click.command("gc")
@click.option("--older-than", "older_than", metavar="AGE",
              help="Remove sessions inactive for longer: 30d, 12h, 90m, 2w (a bare number is days). "
                   "Default: MAINSAIL_RETENTION_DAYS.")
@click.option("--state", "states", multiple=True, type=click.Choice(GC_STATES), default=("idle",),
              show_default=True, help="Only sessions in this state (repeat for both). Never a busy one.")
@click.option("--dry-run", is_flag=True, help="List what would be removed, with sizes; remove nothing.")
def gc(older_than: str | None, states: tuple[str, ...], dry_run: bool) -> None:
    """Remove sessions inactive for longer than AGE, and forget old finished steps of the others."""
    settings = load_settings()
    if older_than is None:
        if not settings.retention_days:
            raise click.UsageError("Missing --older-than AGE (e.g. 30d), and MAINSAIL_RETENTION_DAYS is not set.")
        age = settings.retention_days * 86400
    else:
        age = parse_age(older_than)
    rt = existing_runtime(settings, what="nothing to remove")
    report = remove_old(rt.engine, age, states=states, dry_run=dry_run)
    _report(report, age, states, dry_run)


def _age(seconds: float) -> str:
    for unit, n in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= n and seconds % n == 0:
            return f"{seconds / n:g}{unit}"
    return f"{seconds:g}s"


def _report(report: GcReport, age: float, states: tuple[str, ...], dry_run: bool) -> None:
    verb = "Would remove" if dry_run else "Removed"
    which = " or ".join(states)
    removed = report.removed
    if removed:
        redis_bytes = sum(r.redis_bytes for r in removed)
        file_bytes = sum(r.file_bytes for r in removed)
        files = f" and {size(file_bytes)} of saved tool results" if file_bytes else ""
        click.echo(f"{verb} {_plural(len(removed), 'session')} {which} for over {_age(age)} "
                   f"({size(redis_bytes)} in Redis{files}):")
        for r in removed:
            click.echo(describe_removal(r))
    else:
        click.echo(f"No session has been {which} for over {_age(age)}: nothing to remove.")
    busy = [(rec, why) for rec, why in report.skipped if why != "active since"]
    if busy:
        click.echo(f"Kept {_plural(len(busy), 'older session')}: "
                   + ", ".join(f"{rec.id[:8]} ({why})" for rec, why in busy) + ".")
    if report.pruned:
        steps = sum(len(p.step_ids) for p in report.pruned)
        click.echo(f"{'Would forget' if dry_run else 'Forgot'} {_plural(steps, 'finished step')} "
                   f"({size(sum(p.bytes for p in report.pruned))}) of "
                   f"{_plural(len(report.pruned), 'kept session')}; their transcripts stay whole.")
    if dry_run and (removed or report.pruned):
        click.echo("Nothing was removed (--dry-run).")


__all__ = ["rm", "gc", "parse_age", "size"]
