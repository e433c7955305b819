"""Schedules through the API (``mainsail schedule``): list, add, remove, run now, enable, disable.

Writer tokens only for changes. A token restricted to workspaces sees, adds and runs only the
schedules of its workspaces; another schedule is answered 404, as if it did not exist. A token made
without ``--allow-bypass`` cannot add, run or enable a schedule whose sessions would run in
bypassPermissions (403); the sessions of a schedule a token added are held to that token's scope.
"""

from __future__ import annotations

import os
from datetime import datetime

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field, field_validator

from server.api.common import engine, reach
from server.auth import Caller, require_reader, require_writer
from server.schemas import problems
from tasks import scheduling
from workflows.exceptions import BypassDisabled, ConfigurationError, ScheduleBroken, ScheduleNotFound
from workflows.models import PathText
from workflows.models.options import RemoteOptions
from workflows.schedules import RunMode, Schedule, ScheduleRun
from workflows.sessions.firing import continued_session, require_token_may_continue
from workflows.settings import get_settings
from workflows.store.schedules import BrokenSchedule, ScheduleStore

router = APIRouter(tags=["schedules"], responses=problems(403, 404, 409))
READER = Depends(require_reader)
WRITER = Depends(require_writer)


class NewSchedule(BaseModel):
    """``POST /api/schedules``: run ``prompt`` in ``workspace`` at each time of ``cron`` (UTC)."""

    cron: str = Field(description="Five cron fields in UTC ('0 3 * * *'), or @hourly, @daily, @weekly...")
    workspace: PathText = Field(description="Absolute path of the workspace on the workers' machines.")
    prompt: str = Field(min_length=1)
    name: str | None = None
    mode: RunMode = Field(default=RunMode.FRESH, description="continue: each firing continues the last session.")
    options: RemoteOptions = Field(default_factory=RemoteOptions)
    enabled: bool = True


class ScheduleView(Schedule):
    """A schedule, when it runs next, and its latest runs (newest first). A stored record that cannot
    be read is listed too, with ``broken`` saying why (and only what could be read of it)."""

    prompt: str = ""
    next_run: datetime | None = None
    overdue: bool = Field(default=False, description="Its run is past due: no beat has sent it yet.")
    runs: list[ScheduleRun] = Field(default_factory=list)
    broken: str | None = Field(default=None, description="Why its stored record cannot be read: it never fires; "
                                                         "remove it (DELETE) and add it again.")

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:  # a view shows the stored text, a broken record's too
        return value


class RunStarted(BaseModel):
    schedule_id: str
    session_id: str


def _view(s: Schedule | BrokenSchedule, store: ScheduleStore, runs: int = 5) -> ScheduleView:
    if isinstance(s, BrokenSchedule):
        return ScheduleView(id=s.id, name=s.name, cron=s.cron, workspace=s.workspace, enabled=False, created_at=0,
                            broken=s.reason, runs=store.runs(s.id, runs))
    nxt = scheduling.next_run(get_settings(), s)
    return ScheduleView(**s.model_dump(), next_run=nxt.at, overdue=nxt.overdue, runs=store.runs(s.id, runs))


def _sees(caller: Caller, s: Schedule | BrokenSchedule) -> bool:
    """A broken record whose workspace cannot be read: only a token for every workspace sees it."""
    return caller.token.allows_workspace(s.workspace) if s.workspace else not caller.token.workspaces


def found(request: Request, caller: Caller, schedule: str) -> tuple[Schedule | BrokenSchedule, ScheduleStore]:
    """The schedule ``schedule`` names (id, unique id prefix or name) and the store; 404 unless this token sees it."""
    store = engine(request).store.schedules()
    try:
        s = store.record(store.resolve(schedule))
    except ScheduleNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    if not _sees(caller, s):
        raise HTTPException(404, f"No schedule {schedule!r} visible to token {caller.name!r}.")
    return s, store


def _visible(request: Request, caller: Caller, schedule: str) -> tuple[Schedule, ScheduleStore]:
    """The schedule ``schedule`` names, readable (a broken one: ``ScheduleBroken``, a 400 naming the fix)."""
    s, store = found(request, caller, schedule)
    if isinstance(s, BrokenSchedule):
        raise ScheduleBroken(s.problem())
    return s, store


@router.get("/schedules", response_model=list[ScheduleView])
def list_schedules(request: Request, caller: Caller = READER):
    """The schedules of the workspaces this token may see, oldest first (broken records marked)."""
    store = engine(request).store.schedules()
    return [_view(s, store) for s in store.records() if _sees(caller, s)]


@router.get("/schedules/{schedule}", response_model=ScheduleView)
def get_schedule(schedule: str, request: Request, caller: Caller = READER):
    """One schedule (id, unique id prefix or name) and its latest runs."""
    s, store = found(request, caller, schedule)
    return _view(s, store, runs=50)


@router.post("/schedules", response_model=ScheduleView, status_code=201)
def add_schedule(body: NewSchedule, request: Request, caller: Caller = WRITER):
    """Add a schedule; it first fires at its cron's next time. Its sessions are made as
    ``POST /api/sessions`` makes one; a call that would ask waits for a decision."""
    # The token's scope first, then the disk: a restricted token learns nothing of other directories.
    ws = scheduling.check_workspace(reach(caller, os.path.expanduser(body.workspace), body.options.add_dirs))
    s = Schedule(name=body.name or " ".join(body.prompt.split()[:5])[:40], cron=body.cron, workspace=ws,
                 prompt=body.prompt, mode=body.mode, options=body.options, enabled=body.enabled,
                 created_by=caller.decided_by)
    s = scheduling.add(engine(request), get_settings(), s, token=caller.token, check_dir=caller.check_workspace)
    return _view(s, engine(request).store.schedules())


@router.delete("/schedules/{schedule}", status_code=204)
def remove_schedule(schedule: str, request: Request, caller: Caller = WRITER):
    """Remove a schedule (its sessions stay), a broken one too."""
    s, _ = found(request, caller, schedule)
    scheduling.remove(engine(request), get_settings(), s.id)


@router.post("/schedules/{schedule}/run", response_model=RunStarted, status_code=202)
def run_schedule(schedule: str, request: Request, caller: Caller = WRITER):
    """Fire a schedule now, by hand (also a disabled one): the session it started."""
    s, _ = _visible(request, caller, schedule)
    _check_bypass(request, caller, s)
    fired = scheduling.run_now(engine(request), get_settings(), s.id)
    if fired.session_id is None:
        raise HTTPException(409, f"Schedule {s.id[:8]} ({s.name}) did not start a session: {fired.skipped}.")
    return RunStarted(schedule_id=s.id, session_id=fired.session_id)


@router.post("/schedules/{schedule}/enable", response_model=ScheduleView)
def enable_schedule(schedule: str, request: Request, caller: Caller = WRITER):
    """Enable a schedule: it next fires at its cron's next time (missed runs are not caught up)."""
    return _set_enabled(schedule, request, caller, True)


@router.post("/schedules/{schedule}/disable", response_model=ScheduleView)
def disable_schedule(schedule: str, request: Request, caller: Caller = WRITER):
    """Disable a schedule: the beat stops firing it (a run by hand still can)."""
    return _set_enabled(schedule, request, caller, False)


def _check_bypass(request: Request, caller: Caller, s: Schedule) -> None:
    """A 403 when ``caller``'s token may not start the bypassPermissions sessions ``s`` would start, nor
    send to the bypassPermissions session it continues; also when that cannot be told (its workspace's
    settings are broken now: they may be fixed after, with the schedule on)."""
    if caller.token.allow_bypass:
        return
    eng = engine(request)
    target = continued_session(eng, s)
    if target is not None:
        require_token_may_continue(eng.store.get_session(target), caller.token)
    try:
        scheduling.check_options(get_settings(), s, caller.token)
    except ConfigurationError as exc:
        raise BypassDisabled(
            f"Token {caller.token.name!r} was made without --allow-bypass, and whether schedule {s.id[:8]}'s "
            f"sessions would run in bypassPermissions cannot be told while its settings are broken: {exc} "
            "Fix them first, or have the server's admin run it.") from None


def _set_enabled(schedule: str, request: Request, caller: Caller, enabled: bool) -> ScheduleView:
    s, store = _visible(request, caller, schedule)
    if enabled:
        _check_bypass(request, caller, s)
    return _view(scheduling.set_enabled(engine(request), get_settings(), s.id, enabled), store)


__all__ = ["router"]
