"""What a memory fork's step uses of the engine: :class:`ForkEngine`.

The run side (:mod:`workflows.forks.run`) names this, not :class:`workflows.engine.Engine`, which sits
above it; a worker hands it the engine wrapped in :class:`workflows.store.resilience.ResilientEngine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from workflows.memory.records import MemoryRecord
from workflows.models import SessionRecord, StepRecord, Usage

if TYPE_CHECKING:
    from workflows.settings import Settings
    from workflows.store.memory import ExtractionLock
    from workflows.store.redis_store import Store

__all__ = ["ForkEngine"]


class ForkEngine(Protocol):
    """The engine's verbs and attributes a memory fork uses (:func:`workflows.forks.run.run_memory_fork`)."""

    store: Store
    settings: Settings

    def extraction_lock(self, rec: SessionRecord, step: StepRecord) -> ExtractionLock: ...

    def defer_step(self, sid: str, step_id: str, owner: str, delay: float, why: str) -> list[StepRecord]: ...

    def save_fork_checkpoint(self, sid: str, step_id: str, owner: str, data: str) -> bool: ...

    def record_session_memory(self, sid: str, step_id: str, owner: str, doc: str | None, *, covers: str | None,
                              usage: Usage, duration_ms: int) -> list[StepRecord]: ...

    def record_extraction(self, sid: str, step_id: str, owner: str, *, puts: list[MemoryRecord],
                          deletes: list[str], start_cursor: str | None, until: str | None, usage: Usage,
                          duration_ms: int) -> list[StepRecord]: ...

    def record_fork_failure(self, sid: str, step_id: str, owner: str, error: str) -> list[StepRecord]: ...
