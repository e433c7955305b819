"""The runners of the step kinds: one function per row of :data:`workflows.commit.kinds.STEP_KINDS`, each
running one claimed step (a :class:`StepRun`) with its feature's code and returning the steps that follow
(already committed).

The table names these functions instead of importing them, so the engine reads the table without importing
the features; this module sits above them all, imports each, and finds a row's runner by its name
(:func:`runner_for`).
"""

from __future__ import annotations

import functools

from workflows.commit.kinds import StepKindSpec
from workflows.compaction.run import run_compaction
from workflows.forks.run import run_memory_fork
from workflows.hooks.session_hooks import run_hook_step
from workflows.mcp.calls import run_discovery_step
from workflows.models import StepRecord
from workflows.steps.model_call import model_step
from workflows.steps.step_run import Runner, StepRun
from workflows.steps.tool import tool_step
from workflows.titles import run_title_step


def model(run: StepRun) -> list[StepRecord]:
    return model_step(run)


def tool(run: StepRun) -> list[StepRecord]:
    return tool_step(run.engine, run.rec, run.step, run.owner, run.cancel, run.worker)


def hook(run: StepRun) -> list[StepRecord]:
    return run_hook_step(run.engine, run.rec, run.step, run.owner, run.cancel)


def report(run: StepRun) -> list[StepRecord]:
    return run.engine.deliver_report(run.rec, run.step, run.owner)


def mcp(run: StepRun) -> list[StepRecord]:
    return run_discovery_step(run.engine, run.rec, run.step, run.owner)


def title(run: StepRun) -> list[StepRecord]:
    return run_title_step(run.engine, run.rec, run.step, run.owner, run.cancel)


def compact(run: StepRun) -> list[StepRecord]:
    return run_compaction(run.engine, run.rec, run.step, run.owner, run.cancel)


def memory_fork(run: StepRun) -> list[StepRecord]:
    return run_memory_fork(run.engine, run.rec, run.step, run.owner, run.cancel)


@functools.cache
def runner_for(spec: StepKindSpec) -> Runner:
    """The function that runs one step of ``spec``'s kind (the runner its row names)."""
    if spec.runner is None:
        raise ValueError(f"steps of kind {spec.kind.value} are never run by a worker")
    return globals()[spec.runner]

