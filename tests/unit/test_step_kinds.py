"""The table of step kinds (workflows/commit/kinds.py): one row per kind with the names deployed workers
and queued messages carry, one Celery task per row, and a runner found through the table."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.inline import Inline
from workflows.commit.kinds import QUEUE_FOR_KIND, STEP_KINDS, STEP_TASKS, queue_for, spec_for, task_for
from workflows.models import StepKind, StepStatus
from workflows.models.options import SessionOptions
from workflows.steps.runners import runner_for

#: What deployed workers and queued messages carry: these names never change.
DEPLOYED = {
    StepKind.MODEL: ("model", "mainsail.model.call"),
    StepKind.TOOL: (None, "mainsail.tools.run"),
    StepKind.COMPACT: ("model", "mainsail.model.compact"),
    StepKind.MEMORY: ("memory", "mainsail.memory.session"),
    StepKind.EXTRACT: ("memory", "mainsail.memory.extract"),
    StepKind.HOOK: (None, "mainsail.tools.hook"),
    StepKind.AGENT: (None, None),
    StepKind.BG_AGENT: (None, None),
    StepKind.REPORT: ("model", "mainsail.model.report"),
    StepKind.MCP: (None, "mainsail.tools.mcp"),
    StepKind.TITLE: ("model", "mainsail.model.title"),
}


def test_every_kind_has_one_row_with_its_deployed_queue_and_task_names():
    assert sorted(s.kind.value for s in STEP_KINDS) == sorted(k.value for k in StepKind)
    assert {s.kind: (s.queue, s.task) for s in STEP_KINDS} == DEPLOYED
    assert QUEUE_FOR_KIND == {k: q for k, (q, _) in DEPLOYED.items() if q is not None}
    assert queue_for(StepKind.TOOL, "tools.box-1") == "tools.box-1" and queue_for(StepKind.TITLE, "tools") == "model"
    assert task_for(StepKind.MEMORY) == "mainsail.memory.session"
    with pytest.raises(ValueError):
        task_for(StepKind.AGENT)
    assert all(s.runner is not None and runner_for(s) for s in STEP_KINDS if s.task is not None)


def test_the_celery_app_has_one_task_per_row_named_and_documented_by_it():
    from tasks.app import app
    from tasks.steps import TASKS

    app.loader.import_default_modules()
    assert STEP_TASKS == {s.task for s in STEP_KINDS if s.task} and len(TASKS) == len(STEP_TASKS)
    for spec in STEP_KINDS:
        if spec.task is not None:
            task = app.tasks[spec.task]
            assert task.name == spec.task and task.__doc__ == spec.doc and TASKS[spec.kind].name == spec.task


def test_a_step_runs_through_its_rows_runner(engine, ws, monkeypatch):
    from workflows.commit import kinds as step_kinds
    from workflows.steps import runners as step_runners

    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions",
                                                        no_memory=True))
    [step] = engine.submit(rec.id, "hi")
    monkeypatch.setitem(step_kinds._BY_KIND, StepKind.MODEL, replace(spec_for(StepKind.MODEL), runner=None))
    inline = Inline(engine)
    inline.dispatch([step])
    inline.run(1)
    stored = engine.store.get_step(rec.id, step.id)
    assert stored.status is StepStatus.FAILED and stored.error == "Step kind model is not supported yet."
    ran = []
    monkeypatch.setattr(step_runners, "probe", lambda run: ran.append(run.step.id) or [], raising=False)
    monkeypatch.setitem(step_kinds._BY_KIND, StepKind.MODEL, replace(spec_for(StepKind.MODEL), runner="probe"))
    [step] = engine.submit(rec.id, "again")
    inline.dispatch([step])
    inline.run(1)
    assert ran == [step.id]
