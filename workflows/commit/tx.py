"""The transaction: everything one event changes in a session, written at once by the committer.

An engine part fills a :class:`Tx` (entries, steps, leases, memory writes, ...) and hands it to
:meth:`workflows.commit.Committer.commit`, which writes it in one fenced script call or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from statemachines import Snapshot, State, next_state
from workflows.memory.records import MemoryRecord
from workflows.models import SessionRecord, StateEntry, StepRecord, StepStatus


@dataclass
class Tx:
    """What one event changes; written in one fenced script call by :meth:`Committer.commit`."""

    rec: SessionRecord
    entries: list = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)  # updated or new
    dispatch: list[StepRecord] = field(default_factory=list)  # new pending steps to send
    cleared: list[StepRecord] = field(default_factory=list)  # leases to drop
    leases: dict[str, tuple[StepRecord, float]] = field(default_factory=dict)
    inbox_pops: int = 0
    approval_deadlines: dict[str, float] = field(default_factory=dict)
    approvals_cleared: list[str] = field(default_factory=list)
    memory_doc: str | None = None  # the session's new memory document
    records_put: list[MemoryRecord] = field(default_factory=list)  # project memory records
    records_deleted: list[str] = field(default_factory=list)
    checkpoints_cleared: list[str] = field(default_factory=list)  # finished forks' step ids
    inbox_pushes: list[str] = field(default_factory=list)  # messages queued behind the inbox
    #: Run once the commit lands (e.g. stopping a cancelled run's sub-agents); their steps are dispatched too.
    after: list[Callable[[], list[StepRecord]]] = field(default_factory=list)
    extra: list[Callable] = field(default_factory=list)  # more writes: each called with the recorder
    counts: list[Callable] = field(default_factory=list)  # metrics to note once the commit lands (workflows.store.metrics)
    #: A step event's fence: (step id, status, owner) the step must still have for the commit to land.
    fence: tuple[str, str, str] | None = None
    was_awaiting: bool = False  # the record's state when read (the awaiting set changes only on a change)
    ran: dict = field(default_factory=dict)  # tool_use id -> a quick call's result (record_model_reply)
    written: str = ""  # the record's JSON as the commit wrote it
    #: The notification events the commit recorded in the outbox: (event id, due in unix ms)
    #: (workflows/notify/outbox.py).
    staged: list[tuple[str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.was_awaiting = self.rec.state is State.AWAITING_PERMISSION

    def add(self, entry) -> None:
        """Append a transcript entry, chained after the session's last one."""
        rec = self.rec
        entry.parent_uuid = rec.last_uuid
        entry.cwd = rec.workspace
        entry.git_branch = rec.git_branch
        rec.last_uuid = entry.uuid
        self.entries.append(entry)

    def fire(self, trigger: str) -> None:
        """Move the session's state machine by ``trigger`` (a ``state`` entry records it)."""
        rec = self.rec
        snap = Snapshot(auto_memory=rec.auto_memory and rec.project_id is not None,
                        manual_compaction=rec.compact_trigger == "manual",
                        permissions_pending=len(rec.pending_requests()))
        dest = next_state(rec.state, trigger, snap)
        self.add(StateEntry(session_id=rec.id, trigger=trigger, source=rec.state, dest=dest))
        rec.state = dest

    def finish(self, step: StepRecord) -> None:
        """``step`` is done; its lease goes."""
        step.status = StepStatus.DONE
        self.steps.append(step)
        self.cleared.append(step)

    def supersede(self, step: StepRecord) -> None:
        """``step`` no longer counts (a cancel came since, or its outcome is no longer wanted); its lease goes."""
        step.status = StepStatus.SUPERSEDED
        self.steps.append(step)
        self.cleared.append(step)
