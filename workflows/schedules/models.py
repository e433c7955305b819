"""What a schedule is: a cron expression, a workspace, a prompt and the options of the sessions it
starts (those of ``mainsail submit``), and what its firings did."""

from __future__ import annotations

import time
from enum import Enum

from pydantic import ConfigDict, Field, field_validator

from workflows.models import new_id
from workflows.models.options import RemoteOptions
from workflows.models.valid_text import ValidJson
from workflows.schedules import cron


class RunMode(str, Enum):
    """What a firing does: a new session each time, or the next message of the schedule's last one."""

    FRESH = "fresh"
    CONTINUE = "continue"


class Schedule(ValidJson):
    """A cron schedule of unattended sessions in one workspace (``mainsail:schedule:{id}``)."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(default_factory=new_id)
    name: str
    cron: str = Field(description="Five cron fields, UTC (as Celery's crontab reads them).")
    workspace: str = Field(description="Absolute path of the workspace, on the workers' machines.")
    prompt: str = Field(min_length=1)
    mode: RunMode = RunMode.FRESH
    options: RemoteOptions = Field(default_factory=RemoteOptions)
    enabled: bool = True
    created_at: float = Field(default_factory=time.time)
    created_by: str = ""
    #: The content hash of the workspace's gated settings its maker trusted (``--trust-project``, or a token made
    #: with it): a firing applies them while they still have this hash (workflows.trust).
    trusted_hash: str | None = None
    last_due_at: float | None = None
    last_fired_at: float | None = None
    last_session_id: str | None = None
    last_error: str | None = None

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        return cron.parse(value)


class ScheduleRun(ValidJson):
    """One firing: when it was due and when it fired, the session it started (or why it did not)."""

    due_at: float
    fired_at: float
    session_id: str | None = None
    manual: bool = False
    late: bool = False
    missed: int = Field(default=1, description="Firing times this one stands for (more than 1: runs were missed "
                                               "while the beat or the workers were down, fired once).")
    error: str | None = None


__all__ = ["RunMode", "Schedule", "ScheduleRun"]
