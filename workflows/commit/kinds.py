"""The table of step kinds: for each kind, the queue its steps go to, the Celery task that runs them, and
the name of the function that runs one (its runner).

It is the one place a kind is described. The committer reads a new step's queue here, tasks/dispatch.py
its task name, tasks/steps.py registers one Celery task per row, and the run side
(workflows/steps/runners.py) looks up the row's runner by its name. The task and queue names are part of
the deployed protocol (workers and queued messages carry them): they never change.

This module imports nothing but the models: the engine and the committer read the table without importing
the features that run steps, which sit above them.
"""

from __future__ import annotations

from dataclasses import dataclass

from workflows.models import StepKind


@dataclass(frozen=True)
class StepKindSpec:
    """How steps of one kind are queued, sent and run."""

    kind: StepKind
    queue: str | None  # the queue its steps go to; None: the session's tools queue (where its workspace is)
    task: str | None  # the Celery task that runs it; None: never sent (a Task call's wait for its child)
    #: Its runner: the name of a function of the run side's runners (workflows/steps/runners.py): a name,
    #: not the function, so that this table imports none of the features that run steps; None: never run.
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
    StepKindSpec(StepKind.BG_AGENT, None, None, None,
                 "A background agent's notification fence: running, no lease, owned by the child (never sent)."),
)

_BY_KIND = {spec.kind: spec for spec in STEP_KINDS}

#: The fixed queue of each kind that has one (the others go to the session's tools queue).
QUEUE_FOR_KIND = {spec.kind: spec.queue for spec in STEP_KINDS if spec.queue is not None}

#: The names of the Celery tasks that run steps.
STEP_TASKS = frozenset(spec.task for spec in STEP_KINDS if spec.task is not None)


def spec_for(kind: StepKind) -> StepKindSpec:
    """The row of ``kind``."""
    return _BY_KIND[kind]


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


__all__ = ["STEP_KINDS", "STEP_TASKS", "QUEUE_FOR_KIND", "StepKindSpec", "spec_for", "queue_for", "task_for"]
