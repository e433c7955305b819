"""The runners of the step kinds: one function per row of :data:`workflows.commit.kinds.STEP_KINDS`, each
running one claimed step with its feature's code and returning the steps that follow (already committed).

The table names these functions instead of importing them, so the engine reads the table without importing
the features; this module sits above them all and imports each.
"""

from __future__ import annotations

from workflows.compaction.run import run_compaction
from workflows.forks.run import run_memory_fork
from workflows.hooks.session_hooks import run_hook_step
from workflows.mcp.calls import run_discovery_step
from workflows.steps.run import model_step
from workflows.models import StepRecord
from workflows.commit.kinds import StepRun
from workflows.titles import run_title_step
from workflows.steps.tool import tool_step


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
