"""The table of step kinds: for each kind, the queue its steps go to, the Celery task that runs them, and
the function that runs one (the runner).

It is the one place a kind is described. The engine reads a new step's queue here, tasks/dispatch.py its
task name, tasks/steps.py registers one Celery task per row, and :func:`workflows.steps.run.run_one` calls the
row's runner. The task and queue names are part of the deployed protocol (workers and queued messages
carry them): they never change.

A runner takes a :class:`StepRun` and returns the steps that follow (already committed). A row names its
runner, a function of :mod:`workflows.steps.runners`, which :func:`runner_for` looks up when a step first
runs: this module imports nothing but the models, so that the engine can read the table without importing
the features that run steps.
"""

from __future__ import annotations

import functools
import importlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from workflows.models import SessionRecord, StepKind, StepRecord

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


@dataclass(frozen=True)
class StepKindSpec:
    """How steps of one kind are queued, sent and run."""

    kind: StepKind
    queue: str | None  # the queue its steps go to; None: the session's tools queue (where its workspace is)
    task: str | None  # the Celery task that runs it; None: never sent (a Task call's wait for its child)
    #: Its runner: the name of a function in :mod:`workflows.steps.runners` (a name, not the function, so that
    #: this table imports none of the features that run steps); None: never run by a worker.
    runner: str | None
    doc: str  # what one step of the kind is (the Celery task's docstring)
    #: It writes nothing until its fenced commit, so after a Redis error it is simply run again.
    rerun_on_redis_error: bool = False
    #: It runs even when the step's session is a sub-agent whose parent stopped waiting for it.
    for_abandoned_child: bool = False


#: Every step kind, once.
STEP_KINDS: tuple[StepKindSpec, ...] = (
    StepKindSpec(StepKind.MODEL, "model", "mainsail.model.call", "model", "One model call of a session."),
    StepKindSpec(StepKind.TOOL, None, "mainsail.tools.run", "tool",
                 "One tool call of a session, in the session's workspace."),
    StepKindSpec(StepKind.HOOK, None, "mainsail.tools.hook", "hook",
                 "One session-level hook event of a session (UserPromptSubmit, Stop, SessionStart), in its "
                 "workspace."),
    StepKindSpec(StepKind.REPORT, "model", "mainsail.model.report", "report",
                 "A sub-agent's final answer, committed as its parent's Task result (workflows.engine.subagents).",
                 for_abandoned_child=True),
    StepKindSpec(StepKind.MCP, None, "mainsail.tools.mcp", "mcp",
                 "Connect a session's MCP servers and list their tools (on its tools queue: stdio servers run "
                 "there)."),
    StepKindSpec(StepKind.TITLE, "model", "mainsail.model.title", "title",
                 "One session title: the small model names the session after its first turn (workflows.titles)."),
    StepKindSpec(StepKind.COMPACT, "model", "mainsail.model.compact", "compact",
                 "One compaction of a session (a summary call, or its memory document).", rerun_on_redis_error=True),
    StepKindSpec(StepKind.MEMORY, "memory", "mainsail.memory.session", "memory_fork",
                 "One session-memory update: a fork that edits the session's notes (in the background).",
                 rerun_on_redis_error=True),
    StepKindSpec(StepKind.EXTRACT, "memory", "mainsail.memory.extract", "memory_fork",
                 "One auto-memory extraction: a fork that saves durable records for the session's project.",
                 rerun_on_redis_error=True),
    StepKindSpec(StepKind.AGENT, None, None, None,
                 "A Task call's wait for its child session: running, no lease, owned by the child (never sent)."),
)

_BY_KIND = {spec.kind: spec for spec in STEP_KINDS}

#: The fixed queue of each kind that has one (the others go to the session's tools queue).
QUEUE_FOR_KIND = {spec.kind: spec.queue for spec in STEP_KINDS if spec.queue is not None}

#: The names of the Celery tasks that run steps.
STEP_TASKS = frozenset(spec.task for spec in STEP_KINDS if spec.task is not None)


def spec_for(kind: StepKind) -> StepKindSpec:
    """The row of ``kind``."""
    return _BY_KIND[kind]


@functools.cache
def runner_for(spec: StepKindSpec) -> Runner:
    """The function that runs one step of ``spec``'s kind."""
    if spec.runner is None:
        raise ValueError(f"steps of kind {spec.kind.value} are never run by a worker")
    return getattr(importlib.import_module("workflows.steps.runners"), spec.runner)


def queue_for(kind: StepKind, tools_queue: str) -> str:
    """The queue a new step of ``kind`` goes to, in a session whose tools queue is ``tools_queue``."""
    queue = _BY_KIND[kind].queue
    return tools_queue if queue is None else queue


def task_for(kind: StepKind) -> str:
    """The name of the Celery task that runs steps of ``kind``."""
    task = _BY_KIND[kind].task
    if task is None:
        raise ValueError(f"steps of kind {kind.value} are never sent to a queue")
    return task


__all__ = ["STEP_KINDS", "STEP_TASKS", "QUEUE_FOR_KIND", "StepKindSpec", "StepRun", "Runner", "spec_for",
           "queue_for", "runner_for", "task_for"]
