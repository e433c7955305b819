"""One claimed step as its runner receives it (:class:`StepRun`), and the shape of a runner."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from workflows.models import SessionRecord, StepRecord

if TYPE_CHECKING:
    from workflows.store.resilience import ResilientEngine


@dataclass(frozen=True)
class StepRun:
    """One claimed step, and what its runner needs to run and commit it."""

    engine: ResilientEngine
    rec: SessionRecord  # the step's session, as the claim read it
    step: StepRecord
    owner: str  # the claim's owner token: every commit of the step is fenced by it
    cancel: threading.Event  # set when the step is no longer ours (superseded, taken back)
    worker: str | None = None  # the registered name of the worker running it
    serves_tools: bool = False  # this worker would run the session's next tool step itself


Runner = Callable[[StepRun], list[StepRecord]]
