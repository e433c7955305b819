"""Quick calls (workflows/steps/tool.py): a reply's Reads run in its model step and are recorded with it.

A worker that serves the session's tools queue runs a reply whose every call is a quick one (Read),
allowed as it stands and without hooks, itself, and one commit records the reply, the results and the
next model call (claimed for it). Everything else goes the usual way, to tool steps. The commit's own
permission decision has the last word: a result it would not allow is never recorded.
"""

from __future__ import annotations

import os
import threading

import pytest

from demo.scripted import Script, ToolUse, Turn
from statemachines import State
from tests.inline import scripted_model
from tests.session_kw import create as create_session
from workflows.hooks.settings import parse_hooks
from workflows.models import AssistantEntry, RuleSet, RuleSpec, StepKind, StepStatus, UserEntry
from workflows.models.options import SessionOptions
from workflows.steps.run import owner_token, run_one
from workflows.steps.tool import Ran, quick_calls, run_quick
from workflows.store import keys
from workflows.tools.base import ToolOutput


def _session(engine, ws, turns, mode="bypassPermissions", **kw):
    return create_session(engine, str(ws), model=scripted_model(Script(turns=turns)), permission_mode=mode,
                                 auto_memory=False, **kw)


def _reads(ws, *names):
    return [ToolUse(name="Read", input={"file_path": str(ws / n)}) for n in names]


def _run_chain(engine, sid, step_id, keep, sent, worker="w1"):
    """Run a step and every step its commits claim for this worker; how many ran."""
    ran, claimed = 0, None
    while True:
        _, claimed = run_one(engine, sid, step_id, sent.extend, worker=worker, keep=keep, claimed=claimed)
        ran += 1
        if claimed is None:
            return ran
        sid, step_id = claimed[0].session_id, claimed[0].id


def _tool_results(engine, sid):
    return [b for e in engine.store.entries(sid) if isinstance(e, UserEntry) and e.origin == "tool_result"
            for b in e.message.content]


def test_a_reads_turn_is_one_step_and_its_results_are_recorded_by_the_replys_commit(engine, ws):
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("beta\n")
    rec = _session(engine, ws, [Turn(tool_uses=_reads(ws, "a.txt", "b.txt")), Turn(text="done")])
    [step] = engine.submit(rec.id, "read both")
    sent: list = []
    assert _run_chain(engine, rec.id, step.id, lambda s: True, sent) == 2  # two model steps, no tool step ran
    assert sent == []
    results = _tool_results(engine, rec.id)
    assert ["alpha" in results[0].content, "beta" in results[1].content] == [True, True]
    steps = engine.store.steps(rec.id)
    tools = [s for s in steps if s.kind is StepKind.TOOL]
    assert len(tools) == 2 and all(s.status is StepStatus.DONE and s.attempt == 0 for s in tools)
    assert {s.id for s in tools} == {e.step_id for e in engine.store.entries(rec.id)
                                     if isinstance(e, UserEntry) and e.origin == "tool_result"}
    assert not engine.store.r.zrange(keys.leases(), 0, -1)  # no lease or pickup deadline left behind
    final = engine.store.get_session(rec.id)
    assert final.state is State.IDLE and final.tool_calls == [] and final.turns == 2
    assert engine.store.workers.held("w1") == {}


def test_the_transcript_is_the_same_as_when_tool_steps_run_the_reads(engine, ws):
    (ws / "a.txt").write_text("alpha\n")

    model = scripted_model(Script(turns=[Turn(tool_uses=_reads(ws, "a.txt")), Turn(text="done")]))

    def shape(quick: bool):
        engine.settings.quick_tools = quick
        rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True))
        [step] = engine.submit(rec.id, "read")
        _run_chain(engine, rec.id, step.id, lambda s: True, [])
        out = []
        for e in engine.store.entries(rec.id):
            d = e.model_dump(exclude={"uuid", "parent_uuid", "timestamp", "session_id", "step_id", "duration_ms",
                                      "cost_usd"})
            d.pop("duration_api_ms", None)
            if "message" in d:
                d["message"].pop("id", None), d["message"].pop("model", None)  # (the scripted API's: per request)
            out.append(d)
        return out

    try:
        assert shape(True) == shape(False)
    finally:
        engine.settings.quick_tools = True


def test_the_next_model_call_is_claimed_by_the_same_commit(engine, ws):
    (ws / "a.txt").write_text("a\n")
    rec = _session(engine, ws, [Turn(tool_uses=_reads(ws, "a.txt")), Turn(text="done")])
    [step] = engine.submit(rec.id, "read")
    result, claimed = run_one(engine, rec.id, step.id, [].extend, worker="w1", keep=lambda s: True)
    nxt, owner, _ = claimed
    stored = engine.store.get_step(rec.id, nxt.id)
    assert stored.kind is StepKind.MODEL and stored.status is StepStatus.RUNNING and stored.owner == owner
    assert engine.store.workers.held("w1") == {keys.lease_member(rec.id, nxt.id): owner}


def test_calls_go_to_tool_steps_when_the_worker_does_not_serve_the_tools_queue(engine, ws):
    (ws / "a.txt").write_text("a\n")
    rec = _session(engine, ws, [Turn(tool_uses=_reads(ws, "a.txt")), Turn(text="done")])
    [step] = engine.submit(rec.id, "read")
    sent: list = []
    _run_chain(engine, rec.id, step.id, lambda s: s.queue == "model", sent)
    [tool] = sent
    assert tool.kind is StepKind.TOOL and engine.store.get_step(rec.id, tool.id).status is StepStatus.PENDING
    assert _tool_results(engine, rec.id) == []


def test_a_reply_with_any_call_that_is_not_quick_sends_them_all_to_tool_steps(engine, ws):
    (ws / "a.txt").write_text("a\n")
    rec = _session(engine, ws, [Turn(tool_uses=[*_reads(ws, "a.txt"), ToolUse(name="Glob", input={"pattern": "*"})]),
                                Turn(text="done")])
    [step] = engine.submit(rec.id, "look")
    sent: list = []
    _run_chain(engine, rec.id, step.id, lambda s: s.queue == "model", sent)
    assert sorted(s.kind.value for s in sent) == ["tool", "tool"]


def _rules(kind, path):
    return RuleSet(**{kind: [RuleSpec(rule=f"Read(/{path})", source="test")]})  # (//: an absolute path)


def _claimed_reply(engine, ws, turns, rules=None, **kw):
    """A session whose first model step is claimed and its reply in hand (not committed)."""
    from workflows.model.client import AssistantMessage, ModelReply

    rec = _session(engine, ws, turns, **kw)
    if rules is not None:
        engine.update_limits(rec.id, rules=rules)
    [step] = engine.submit(rec.id, "go")
    owner = owner_token()
    step, _, rec = engine.claim(rec.id, step.id, owner)
    turn = turns[0]
    msg = AssistantMessage(id="m1", model="m", stop_reason="tool_use", content=[
        {"type": "tool_use", "id": f"toolu_{i}", "name": tu.name, "input": tu.input}
        for i, tu in enumerate(turn.tool_uses)])
    return rec, step, owner, ModelReply(message=msg, duration_ms=1)


def test_which_replies_are_quick(engine, ws):
    (ws / "a.txt").write_text("a\n")
    reads = [Turn(tool_uses=_reads(ws, "a.txt"))]
    rec, step, _, reply = _claimed_reply(engine, ws, reads)
    assert [c.name for c, _ in quick_calls(engine, rec, reply, True)] == ["Read"]
    assert quick_calls(engine, rec, reply, False) == []  # the tools queue is another worker's
    engine.settings.quick_tools = False
    try:
        assert quick_calls(engine, rec, reply, True) == []
    finally:
        engine.settings.quick_tools = True
    # a Read that would ask (a rule says so) is not run early
    rec, step, _, reply = _claimed_reply(engine, ws, reads, mode="default", rules=_rules("ask", ws / "a.txt"))
    assert quick_calls(engine, rec, reply, True) == []
    # nor one a PreToolUse hook matches, nor input the tool refuses
    hooks = parse_hooks({"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "true"}]}]}, "t")
    rec, step, _, reply = _claimed_reply(engine, ws, reads, hooks=hooks)
    assert quick_calls(engine, rec, reply, True) == []
    rec, step, _, reply = _claimed_reply(engine, ws, [Turn(tool_uses=[ToolUse(name="Read", input={"path": 1})])])
    assert quick_calls(engine, rec, reply, True) == []


def test_the_commit_decides_again_and_drops_a_result_it_does_not_allow(engine, ws):
    """Between the quick run and the commit a rule may come (another event's commit): the commit's fan-out
    decides with the record it writes, and a call it denies gets the denial, never the result."""
    (ws / "secret.txt").write_text("the secret\n")
    rec, step, owner, reply = _claimed_reply(engine, ws, [Turn(tool_uses=_reads(ws, "secret.txt"))], mode="default")
    [(call, _)] = quick_calls(engine, rec, reply, True)
    engine.update_limits(rec.id, rules=_rules("deny", ws / "secret.txt"))
    engine.record_model_reply(rec.id, step.id, owner, reply,
                              ran={call.tool_use_id: Ran(ToolOutput(content="the secret"), None, 0.0)})
    [result] = _tool_results(engine, rec.id)
    assert result.is_error and "the secret" not in result.content


def test_a_result_past_the_tools_limit_is_left_to_the_tool_step_which_saves_it(engine, ws):
    (ws / "big.txt").write_text("x" * 5000 + "\n")
    engine.settings.tool_result_limits = {**engine.settings.tool_result_limits, "Read": 1000}
    try:
        rec = _session(engine, ws, [Turn(tool_uses=_reads(ws, "big.txt")), Turn(text="done")])
        [step] = engine.submit(rec.id, "read")
        sent: list = []
        _run_chain(engine, rec.id, step.id, lambda s: s.queue == "model", sent)
        [tool] = sent
        assert tool.kind is StepKind.TOOL  # not recorded by the reply's commit
        assert not (ws / ".mainsail" / "tool-results").exists()  # and nothing written early
    finally:
        engine.settings.tool_result_limits.pop("Read")


def test_a_cancelled_step_records_nothing_of_its_quick_calls(engine, ws):
    (ws / "a.txt").write_text("a\n")
    rec, step, owner, reply = _claimed_reply(engine, ws, [Turn(tool_uses=_reads(ws, "a.txt"))])
    cancel = threading.Event()
    cancel.set()
    assert run_quick(engine, rec, quick_calls(engine, rec, reply, True), cancel, "w1") == {}
    assert not any(isinstance(e, AssistantEntry) for e in engine.store.entries(rec.id))


def _blocking_hook(ws):
    marker = ws / "hook_ran"
    return marker, parse_hooks({"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": f"touch {marker}; echo no reading >&2; exit 2"}]}]}, "t")


def test_a_hook_added_while_the_model_answered_is_run_not_skipped(engine, ws):
    """An SDK client's initialize may add hooks during the model call: the commit looks at the hooks it
    writes with, and the call goes to its tool step, where the hook runs (found by a review)."""
    (ws / "secret.txt").write_text("the secret\n")
    rec, step, owner, reply = _claimed_reply(engine, ws, [Turn(tool_uses=_reads(ws, "secret.txt"))], mode="default")
    ran = run_quick(engine, rec, quick_calls(engine, rec, reply, True), threading.Event(), "w1")
    assert ran
    marker, hooks = _blocking_hook(ws)
    engine.add_hooks(rec.id, hooks)
    follow_ups = engine.record_model_reply(rec.id, step.id, owner, reply, ran=ran)
    assert _tool_results(engine, rec.id) == []  # not recorded early
    [tool] = follow_ups
    assert tool.kind is StepKind.TOOL  # its tool step runs the hook
    run_one(engine, rec.id, tool.id, [].extend)
    [result] = _tool_results(engine, rec.id)
    assert result.is_error and "the secret" not in result.content, result
    assert marker.exists()


def test_an_ask_rule_and_a_hook_added_meanwhile_leave_the_call_to_its_hooks_and_question(engine, ws):
    (ws / "secret.txt").write_text("the secret\n")
    rec, step, owner, reply = _claimed_reply(engine, ws, [Turn(tool_uses=_reads(ws, "secret.txt"))], mode="default")
    ran = run_quick(engine, rec, quick_calls(engine, rec, reply, True), threading.Event(), "w1")
    engine.update_limits(rec.id, rules=_rules("ask", ws / "secret.txt"))
    engine.add_hooks(rec.id, _blocking_hook(ws)[1])
    engine.record_model_reply(rec.id, step.id, owner, reply, ran=ran)
    assert _tool_results(engine, rec.id) == []


def test_an_ask_rule_added_meanwhile_asks(engine, ws):
    (ws / "secret.txt").write_text("the secret\n")
    rec, step, owner, reply = _claimed_reply(engine, ws, [Turn(tool_uses=_reads(ws, "secret.txt"))], mode="default")
    ran = run_quick(engine, rec, quick_calls(engine, rec, reply, True), threading.Event(), "w1")
    engine.update_limits(rec.id, rules=_rules("ask", ws / "secret.txt"))
    engine.record_model_reply(rec.id, step.id, owner, reply, ran=ran)
    assert engine.store.get_session(rec.id).state is State.AWAITING_PERMISSION
    assert _tool_results(engine, rec.id) == []


def test_a_large_file_or_a_notebook_is_read_on_a_tool_step(engine, ws):
    from workflows.steps import tool as tool_step

    (ws / "big.txt").write_text("x" * 100 + "\n" + "y" * tool_step.QUICK_BYTES)
    (ws / "n.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    for name in ("big.txt", "n.ipynb"):
        rec, step, _, reply = _claimed_reply(engine, ws, [Turn(tool_uses=_reads(ws, name))])
        calls = quick_calls(engine, rec, reply, True)
        assert calls and run_quick(engine, rec, calls, threading.Event(), "w1") == {}, name


def test_quick_results_past_their_total_go_to_tool_steps(engine, ws, monkeypatch):
    from workflows.steps import tool as tool_step

    (ws / "a.txt").write_text("a" * 300 + "\n")
    (ws / "b.txt").write_text("b" * 300 + "\n")
    rec, step, _, reply = _claimed_reply(engine, ws, [Turn(tool_uses=_reads(ws, "a.txt", "b.txt"))])
    calls = quick_calls(engine, rec, reply, True)
    assert len(run_quick(engine, rec, calls, threading.Event(), "w1")) == 2
    monkeypatch.setattr(tool_step, "QUICK_CHARS_MAX", 500)
    assert run_quick(engine, rec, calls, threading.Event(), "w1") == {}


def test_a_commit_whose_reply_was_lost_still_hands_over_the_step_it_claimed(engine, ws, monkeypatch):
    """The commit of a Read turn lands and claims the next model call for this worker, but its reply is
    lost: the retry finds the step done, and the claimed step is read back from Redis, not left held and
    unrun until its lease runs out (found by a review; older than quick calls)."""
    import redis

    from workflows.store.redis_store import Store

    (ws / "a.txt").write_text("a\n")
    rec = _session(engine, ws, [Turn(tool_uses=_reads(ws, "a.txt")), Turn(text="done")])
    [step] = engine.submit(rec.id, "read")
    real, lost = Store.commit, []

    def commit_then_lose_the_reply(self, *a, **kw):
        reply = real(self, *a, **kw)
        if not lost:
            lost.append(reply)
            raise redis.ConnectionError("reply lost")
        return reply

    monkeypatch.setattr(Store, "commit", commit_then_lose_the_reply)
    _, claimed = run_one(engine, rec.id, step.id, [].extend, worker="w1", keep=lambda s: True)
    assert lost and claimed is not None
    nxt, owner, _ = claimed
    stored = engine.store.get_step(rec.id, nxt.id)
    assert stored.kind is StepKind.MODEL and stored.status is StepStatus.RUNNING and stored.owner == owner
    monkeypatch.setattr(Store, "commit", real)
    run_one(engine, rec.id, nxt.id, [].extend, worker="w1", keep=lambda s: True, claimed=claimed)
    assert engine.store.get_session(rec.id).state is State.IDLE


def test_a_failing_quick_run_still_records_the_paid_reply_and_sends_its_calls_to_tool_steps(engine, ws, monkeypatch):
    from workflows.steps import model_call as steps

    (ws / "a.txt").write_text("a\n")
    rec = _session(engine, ws, [Turn(tool_uses=_reads(ws, "a.txt")), Turn(text="done")])
    [step] = engine.submit(rec.id, "read")

    def broken(*a, **kw):
        raise RuntimeError("a bug")

    monkeypatch.setattr(steps, "quick_calls", broken)
    sent: list = []
    _run_chain(engine, rec.id, step.id, lambda s: s.queue == "model", sent)
    assert [s.kind for s in sent] == [StepKind.TOOL]
    assert sum(isinstance(e, AssistantEntry) for e in engine.store.entries(rec.id)) == 1


HOSTILE_READS = [
    "link-out",  # a symlink out of the workspace
    "pipe",  # a FIFO: refused unopened, never waited on
    "a\x00b",  # a NUL byte
    "a.txt\n../../outside.txt",  # a newline
    "~root/.ssh/id_rsa",  # another user's home
    "/proc/self/environ",  # a file that says it is empty
    "{outside}",  # the outside file by its absolute path
    "sub/../../outside.txt",  # dot-dot out
    "./a.txt",  # (a fair one, for contrast)
]


@pytest.mark.parametrize("path", HOSTILE_READS)
def test_a_hostile_read_gets_the_same_answer_run_early_as_on_a_tool_step(engine, ws, tmp_path, path):
    """The most permissive mode (every call allowed, so the model step runs each itself): whatever a
    hostile model names, the quick run answers as the tool step does, and nothing outside leaks."""
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE SECRET\n")
    (ws / "a.txt").write_text("inside\n")
    (ws / "sub").mkdir(exist_ok=True)
    if not (ws / "link-out").exists():
        (ws / "link-out").symlink_to(outside)
        os.mkfifo(ws / "pipe")
    path = path.format(outside=outside)
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Read", input={"file_path": path})]),
                                         Turn(text="done")]))

    def result(quick: bool):
        engine.settings.quick_tools = quick
        rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True))
        [step] = engine.submit(rec.id, "read")
        sent: list = []
        _run_chain(engine, rec.id, step.id, lambda s: True, sent)
        assert sent == []
        [block] = _tool_results(engine, rec.id)
        tools = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.TOOL]
        return (block.content, block.is_error), [s.attempt for s in tools]  # attempt 0: run early

    try:
        early, early_steps = result(True)
        late, late_steps = result(False)
    finally:
        engine.settings.quick_tools = True
    assert early == late and "OUTSIDE SECRET" not in early[0]
    # (a path the fan-out refuses, the NUL byte, gets no step either way; any other ran early)
    assert (early_steps, late_steps) == ([], []) or (early_steps, late_steps) == ([0], [1])
