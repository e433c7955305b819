"""Removing sessions: what a session owns, what removing it frees, and the retention gc.

A session owns its record and every ``session:{sid}:*`` key (transcript, live
stream, steps, inbox, lock, files-read hash, memory document, fork checkpoints),
its members in the shared sorted sets (``sessions``, ``awaiting``, and its
``sid/...`` members of ``steps:leases`` and ``approvals``), and the saved tool
results its own tool calls wrote in its workspace
(``.mainsail/tool-results/<tool_use_id>.txt``). A removal takes exactly those:
keys are found by the session's own prefix, files by the tool_use ids in the
session's own transcript, never by a wider pattern. Project memory belongs to the
project, not to a session, and stays.

A saved result another session of the same workspace still refers to (a fork
holds a copy of the call, or the session is itself a fork) stays until the last of
them is removed.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import Callable

from statemachines import State
from workflows.models import AssistantEntry, SessionRecord, StepRecord, StepStatus
from workflows.store import keys
from workflows.store.redis_store import Store

log = logging.getLogger(__name__)

RESULTS_DIR = os.path.join(".mainsail", "tool-results")  # where workflows.tools.saved saves large results
RETENTION_EVERY_SECONDS = 3600
STOP_WAIT_SECONDS = 10.0
#: Finished steps younger than this are kept whatever gc is told: a broker may deliver a step again for
#: up to its visibility timeout (6 hours), and a step's record is what makes that delivery a no-op.
STEP_MIN_AGE_SECONDS = 24 * 3600

#: States gc may remove a session in: idle, or waiting for a person nobody answered (no worker holds it).
GC_STATES = (State.IDLE.value, State.AWAITING_PERMISSION.value)


@dataclass
class SavedFile:
    path: str
    bytes: int


@dataclass
class Removal:
    """Everything of one session that a removal deletes, with sizes (for ``--dry-run`` listings)."""

    record: SessionRecord
    keys: dict[str, int] = field(default_factory=dict)  # key -> bytes
    members: list[tuple[str, str]] = field(default_factory=list)  # (sorted set, member)
    files: list[SavedFile] = field(default_factory=list)
    kept_files: int = 0  # saved results a fork still refers to

    @property
    def sid(self) -> str:
        return self.record.id

    @property
    def redis_bytes(self) -> int:
        return sum(self.keys.values())

    @property
    def file_bytes(self) -> int:
        return sum(f.bytes for f in self.files)


def busy_reason(rec: SessionRecord, steps: list[StepRecord]) -> str | None:
    """Why removing the session now would pull it from under a worker or a person; None if it would not."""
    if rec.state is not State.IDLE:
        return f"it is {rec.state.value}"
    if rec.saving_memory():
        return "it is saving memory (a background fork runs)"
    if any(s.status is StepStatus.RUNNING and not s.background for s in steps):
        return "a step of it still runs on a worker"
    return None


def running_steps(store: Store, sid: str) -> int:
    """Steps of the session's turn still running on a worker (a cancel stops them within about a second)."""
    return sum(s.status is StepStatus.RUNNING and not s.background for s in store.steps(sid))


def plan_removal(store: Store, rec: SessionRecord) -> Removal:
    """What removing session ``rec`` would delete (nothing is deleted)."""
    sid = rec.id
    names = [k for k in store.session_keys(sid) if k != keys.lock(sid)]  # the lock is the remover's own
    removal = Removal(record=rec, keys=store.key_sizes(names), members=store.session_members(sid))
    files = _saved_results(rec.workspace, _tool_use_ids(store, sid))
    if files:
        shared = _ids_elsewhere(store, rec, {tid for tid, _ in files})
        removal.files = [f for tid, f in files if tid not in shared]
        removal.kept_files = len(files) - len(removal.files)
    return removal


def _tool_use_ids(store: Store, sid: str) -> list[str]:
    """The ids of the tool calls in the session's transcript (a fork's copied calls included)."""
    return [tu.id for e in store.entries(sid) if isinstance(e, AssistantEntry) for tu in e.message.tool_uses()]


def apply_removal(store: Store, removal: Removal) -> None:
    """Delete a planned removal: keys (and the session's lock) and members in one MULTI/EXEC, then the
    files. Call it under the session's lock; releasing that lock then finds it gone, which is fine."""
    store.delete_keys([*removal.keys, keys.lock(removal.sid)], removal.members)
    for f in removal.files:
        try:
            os.unlink(f.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove %s of session %s: %s", f.path, removal.sid, exc)


def _saved_results(workspace: str, tool_use_ids: list[str]) -> list[tuple[str, SavedFile]]:
    """The saved-result files these tool calls wrote, if they exist as plain files in the workspace's own
    results folder (a symlinked folder or file is someone else's: never touched)."""
    real_ws = os.path.realpath(workspace)
    folder = os.path.join(real_ws, RESULTS_DIR)
    if not os.path.isdir(folder) or os.path.realpath(folder) != folder:
        return []
    out = []
    for tid in dict.fromkeys(tool_use_ids):
        path = os.path.join(folder, re.sub(r"[^A-Za-z0-9_-]", "_", tid) + ".txt")
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((tid, SavedFile(path, st.st_size)))
    return out


def _ids_elsewhere(store: Store, rec: SessionRecord, ids: set[str]) -> set[str]:
    """Which of ``ids`` another session of the same workspace holds too (a fork, its original, an
    import): their saved results stay while anyone refers to them."""
    others = store.get_sessions([s for s in store.session_ids(limit=1_000_000) if s != rec.id])
    found: set[str] = set()
    for other in others:
        if other.workspace == rec.workspace:
            found.update(i for i in _tool_use_ids(store, other.id) if i in ids)
    return found


# ---------------------------------------------------------------------- gc


@dataclass
class Pruned:
    """Finished steps of a kept session that gc forgets (their transcript entries stay)."""

    sid: str
    step_ids: list[str]
    bytes: int


@dataclass
class GcReport:
    removed: list[Removal] = field(default_factory=list)
    skipped: list[tuple[SessionRecord, str]] = field(default_factory=list)  # (session, why it stays)
    pruned: list[Pruned] = field(default_factory=list)


def gc(store: Store, older_than: float, *, states: tuple[str, ...] = ("idle",), dry_run: bool = False,
       remove: Callable[[str, Callable[[SessionRecord], bool]], Removal | None] | None = None,
       now: float | None = None) -> GcReport:
    """Remove sessions inactive for ``older_than`` seconds in one of ``states``; never a busy one.

    Also forgets the finished steps, older than that, of the sessions it keeps (a
    step's record only matters while a broker might deliver it again, six hours at most).

    Args:
        remove: removes one session under its lock after re-checking it (``Engine.delete_session``);
            with ``dry_run`` it is not called.
    """
    now = time.time() if now is None else now
    cutoff = now - older_than
    report = GcReport()

    def eligible(rec: SessionRecord, steps: list[StepRecord] | None = None) -> str | None:
        if rec.updated_at >= cutoff:
            return "active since"
        if rec.state.value not in states:
            return f"it is {rec.state.value}"
        if rec.state is State.AWAITING_PERMISSION:
            rec = rec.model_copy(update={"state": State.IDLE})  # waiting for a person holds no worker
        return busy_reason(rec, store.steps(rec.id) if steps is None else steps)

    for rec in store.get_sessions(store.sessions_updated_before(cutoff)):
        steps = store.steps(rec.id)
        why = eligible(rec, steps)
        if why:
            report.skipped.append((rec, why))
            continue
        if dry_run:
            report.removed.append(plan_removal(store, rec))
            continue
        done = remove(rec.id, lambda r: eligible(r) is None) if remove else None
        if done is not None:
            report.removed.append(done)
    gone = {r.sid for r in report.removed}
    step_cutoff = min(cutoff, now - STEP_MIN_AGE_SECONDS)
    for sid in store.session_ids(limit=1_000_000):
        if sid in gone:
            continue
        old = [s.id for s in store.steps(sid) if s.finished and s.updated_at < step_cutoff]
        if old:
            report.pruned.append(Pruned(sid, old, store.step_sizes(sid, old)))
            if not dry_run:
                store.delete_steps(sid, old)
    return report


def retention_due(store: Store, owner: str) -> bool:
    """True for at most one caller an hour, across every worker (a Redis key that expires in an hour)."""
    return store.claim_retention(owner, RETENTION_EVERY_SECONDS)




def remove_old(engine, older_than: float, *, states: tuple[str, ...] = ("idle",), dry_run: bool = False) -> GcReport:
    """:func:`gc` with ``engine.delete_session`` as the remover: each session is re-checked (age, state,
    not busy) under its lock, so a session that became active since it was listed stays."""
    return gc(engine.store, older_than, states=states, dry_run=dry_run,
              remove=lambda sid, check: engine.delete_session(sid, force=True, check=check))


def retention_gc(engine) -> GcReport | None:
    """The retention setting's gc (``MAINSAIL_RETENTION_DAYS``): idle sessions inactive that long.

    The caller runs it when :func:`retention_due` says so (at most hourly across every worker).
    Returns None when no retention is set.
    """
    days = engine.settings.retention_days
    if not days:
        return None
    report = remove_old(engine, days * 86400)
    if report.removed or report.pruned:
        log.warning("retention: removed %d session(s) inactive for over %g days, forgot %d old step(s)",
                    len(report.removed), days, sum(len(p.step_ids) for p in report.pruned))
    return report

__all__ = ["Removal", "SavedFile", "GcReport", "Pruned", "busy_reason", "running_steps", "plan_removal",
           "apply_removal", "gc", "remove_old", "retention_due", "retention_gc", "GC_STATES", "STOP_WAIT_SECONDS"]
