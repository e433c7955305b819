"""Firing a schedule: one normal session (or the next message of the schedule's last one), once per
due time, however many messages ask for it.

A firing claims ``(schedule, due minute)`` with ``SET NX`` before it does anything, under the
schedule's lock: a second beat message for the same run (a redelivery, two beats in a split second of
a leader change) finds the claim and starts nothing. A firing whose worker died half-way is finished
by the redelivered message: the claim names the session to create, and says whether its prompt went
in.

The session is made as ``mainsail submit`` makes one (:class:`workflows.sessions.service.SessionService`:
the workspace's settings files, permission rules, hooks, sandbox), and nobody is at a terminal: a
call that would ask waits for a decision (``asks="wait"``; ``mainsail approve`` or the API).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from workflows.exceptions import InvalidSchedule, MainsailError, ScheduleBroken, SessionNotFound
from workflows.models import StepRecord, SystemEntry, new_id
from workflows.models.options import SessionOptions
from workflows.schedules import cron
from workflows.schedules.models import RunMode, Schedule, ScheduleRun
from workflows.sessions.service import SessionService

log = logging.getLogger(__name__)

#: How long a firing waits for its schedule's lock before giving up (its task then tries again later).
LOCK_WAIT_SECONDS = 60.0


@dataclass
class Fired:
    """What a firing did: the session it started (None: nothing, see ``skipped``) and its steps to dispatch."""

    schedule_id: str
    session_id: str | None = None
    steps: list[StepRecord] = field(default_factory=list)
    skipped: str | None = None  # why nothing started: "duplicate", "disabled", "removed", "broken: ...", "failed: ..."
    note: str | None = None


def _when(ts: float) -> str:
    return cron.utc(ts).strftime("%Y-%m-%d %H:%M UTC")


def timing_note(schedule: Schedule, run: ScheduleRun) -> str:
    """What the session says about its firing: when it was due, when it fired, and if it was late."""
    head = f"Scheduled run of {schedule.name!r} (schedule {schedule.id[:8]}, cron '{schedule.cron}')"
    if run.manual:
        return f"{head}: run by hand at {cron.utc(run.fired_at).strftime('%Y-%m-%d %H:%M:%S UTC')}."
    text = f"{head}: scheduled for {_when(run.due_at)}, fired {cron.utc(run.fired_at).strftime('%H:%M:%S UTC')}"
    if not run.late:
        return text + "."
    text += " after downtime"
    if run.missed > 1:
        text += f" ({run.missed} runs missed, fired once)"
    return text + "."


def creator_token(engine, schedule: Schedule):
    """The API token that made ``schedule`` (its scope holds for every firing: a token without
    ``--allow-bypass`` cannot get bypassPermissions sessions later through the beat), or None for a
    schedule made at a terminal. A token revoked since counts as one without the bypass scope."""
    from workflows.models import TokenRecord

    if not schedule.created_by.startswith("token:"):
        return None
    name = schedule.created_by.removeprefix("token:")
    return engine.store.tokens().named(name) or TokenRecord(name=name, allow_bypass=False)


def carried_trust(schedule: Schedule) -> str | None:
    """The trust its maker gave the workspace (``--trust-project``), while its gated settings are unchanged."""
    from workflows.trust.gated import project_gated

    if schedule.trusted_hash and project_gated(Path(schedule.workspace)).digest() == schedule.trusted_hash:
        return f"schedule {schedule.id[:8]} (made with --trust-project)"
    return None


def new_session(engine, schedule: Schedule, settings, sid: str):
    """Create the session of a firing, as ``mainsail submit`` would in the schedule's workspace.

    Raises:
        InvalidSchedule: the workspace is gone.
        SettingsError, McpConfigError: its settings files are wrong (the run fails, and says so).
        BypassDisabled: it would run in bypassPermissions, and the API token that made it may not.
    """
    ws = Path(schedule.workspace)
    if not ws.is_dir():
        raise InvalidSchedule(f"The workspace {schedule.workspace} of schedule {schedule.id[:8]} "
                              f"({schedule.name}) is not a directory on this worker; restore it, or remove the "
                              f"schedule (`mainsail schedule rm {schedule.id[:8]}`).")
    options = SessionOptions.of(schedule.options, asks="wait", session_id=sid, trust=carried_trust(schedule))
    # A scoped token's schedule runs sessions that hide the other tokens' workspaces, as the API's do.
    opened = SessionService(engine).create(ws, options, settings, token=creator_token(engine, schedule),
                                           cwd=str(ws), mode_given_by="the schedule's permission_mode")
    rec, warnings = opened.rec, opened.warnings
    warnings += [f"custom command {p}" for p in engine.refresh_commands(rec.id)]
    return rec, warnings


def _note_entry(engine, sid: str, text: str, warnings: list[str]) -> None:
    entries = [SystemEntry(session_id=sid, subtype="info", content=text)]
    entries += [SystemEntry(session_id=sid, subtype="warning", content=w) for w in warnings]
    with engine.store.pipeline() as pipe:
        engine.store.append(sid, entries, pipe)
        pipe.execute()


def continued_session(engine, schedule: Schedule) -> str | None:
    """With ``--continue``: the schedule's last session, if it still exists; else None (a new one)."""
    if schedule.mode is not RunMode.CONTINUE or not schedule.last_session_id:
        return None
    try:
        engine.store.get_session(schedule.last_session_id)
    except SessionNotFound:
        return None
    return schedule.last_session_id


def fire(engine, settings, schedule_id: str, due_at: float | None = None, *, fired_at: float | None = None,
         manual: bool = False) -> Fired:
    """Fire ``schedule_id`` for its run due at ``due_at`` (None with ``manual``: a run by hand, now).

    Returns what happened; the caller dispatches ``steps``. A failure to start the session (a workspace
    gone, a broken settings file) is recorded in the schedule's runs and returned as ``skipped``, not
    raised: a retry would fail the same way.
    """
    store = engine.store.schedules()
    fired_at = fired_at or time.time()
    slot = f"manual-{new_id().replace('-', '')[:16]}" if manual or due_at is None else cron.slot(cron.utc(due_at))
    with store.lock(schedule_id, wait=LOCK_WAIT_SECONDS):
        try:
            schedule = store.get(schedule_id)
        except ScheduleBroken as exc:  # a record that cannot be read: this one is skipped, the others fire
            log.error("schedule %s not fired: %s", schedule_id[:8], exc)
            return Fired(schedule_id, skipped=f"broken: {exc}")
        except MainsailError:
            return Fired(schedule_id, skipped="removed")
        if not schedule.enabled and not manual:
            return Fired(schedule_id, skipped="disabled")
        due = fired_at if manual or due_at is None else due_at
        missed = 1 if manual else max(1, len(cron.occurrences(schedule.cron, cron.utc(due), cron.utc(fired_at))))
        run = ScheduleRun(due_at=due, fired_at=fired_at, manual=manual, missed=missed,
                          late=not manual and fired_at - due > settings.beat_late_seconds)
        target = continued_session(engine, schedule)
        claimed, firing = store.claim(schedule_id, slot, target or new_id())
        if not claimed and firing.submitted:
            return Fired(schedule_id, firing.session_id, skipped="duplicate")
        note = timing_note(schedule, run)
        try:
            steps = _start(engine, settings, schedule, firing.session_id, target is not None, run, note,
                           once=f"schedule:{schedule_id}:{slot}")
        except MainsailError as exc:
            run.error = str(exc)
            store.record_run(schedule, run)
            store.mark_submitted(schedule_id, slot, firing)  # the same message again would fail the same way
            log.warning("schedule %s (%s) did not fire: %s", schedule.id[:8], schedule.name, exc)
            return Fired(schedule_id, skipped=f"failed: {exc}", note=note)
        store.mark_submitted(schedule_id, slot, firing)
        run.session_id = firing.session_id
        store.record_run(schedule, run)
        return Fired(schedule_id, firing.session_id, steps, note=note)


def _start(engine, settings, schedule: Schedule, sid: str, existing: bool, run: ScheduleRun,
           note: str, once: str) -> list[StepRecord]:
    """Create the session (unless it exists) and submit the schedule's prompt to it, once: ``once`` (the
    run's key) is written with the prompt, so a redelivered firing whose worker died after submitting
    finds it and sends nothing again (its steps are in the ledger: the reaper's)."""
    prompt = schedule.prompt
    if run.late:  # the model, too, should know this run is not on time (a nightly report, say)
        prompt = f"{prompt}\n\n({note})"  # after it: the session's title stays the prompt's
    if not existing:
        try:
            rec = engine.store.get_session(sid)
        except SessionNotFound:
            _rec, warnings = new_session(engine, schedule, settings, sid)
            _note_entry(engine, sid, note, warnings)
        else:
            if rec.title:  # a worker that died after submitting: its steps are in the ledger (the reaper's)
                return []
    else:  # --continue: the session may have been put into bypassPermissions since the schedule was made
        require_token_may_continue(engine.store.get_session(sid), creator_token(engine, schedule))
    return SessionService(engine).submit(sid, prompt, once=once)  # dispatched once the firing is marked


def require_token_may_continue(rec, token) -> None:
    """Refuse sending a schedule's prompt to session ``rec`` in bypassPermissions on behalf of ``token``
    (the schedule's maker, or a caller running it by hand) made without ``--allow-bypass``.

    Raises:
        BypassDisabled: it may not (the firing records the reason; the API answers 403).
    """
    if token is None:
        return
    from workflows.permissions.bypass import require_token_for

    require_token_for(rec, token, f"continue session {rec.id[:8]} (it runs in bypassPermissions mode)",
                      "continue a session in another mode, or start new sessions")


__all__ = ["Fired", "continued_session", "creator_token", "fire", "new_session", "require_token_may_continue",
           "timing_note"]
