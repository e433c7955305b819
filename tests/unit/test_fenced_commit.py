"""The step protocol's scripts (workflows/store/fenced.py) and the engine's optimistic commit, on fakeredis.

Each event is one script call: a commit made on an older revision is refused and applied again on
what Redis holds, a re-sent commit is recognised as landed, a claim and a heartbeat check the fence
in Redis itself. The races are staged by hand: two events read the same revision, then commit.
"""

from __future__ import annotations

import typing

from demo.scripted import Script, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, scripted_model
from workflows.models import ResultEntry, StepKind, StepRecord, StepStatus, UserEntry
from workflows.models.options import SessionOptions
from workflows.steps.run import owner_token, run_one
from workflows.store import keys
from workflows.store.fenced import Recorder
from workflows.tools.base import ToolOutput


def _session(engine, ws, turns):
    return engine.create_session(str(ws), SessionOptions(model=scripted_model(Script(turns=turns)), permission_mode="bypassPermissions", no_memory=True))


def test_step_records_hold_only_scalars_so_the_scripts_can_round_trip_them_with_cjson():
    # cjson turns an empty list or dict into {}: a list field would come back as an object.
    for name, field in StepRecord.model_fields.items():
        origin = typing.get_origin(field.annotation)
        args = typing.get_args(field.annotation)
        assert origin not in (list, dict, tuple, set) and not any(typing.get_origin(a) in (list, dict) for a in args), name


def test_the_record_json_leads_with_revision_commit_and_epoch(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    raw = engine.store.r.get(keys.session(rec.id)).decode()
    assert raw.startswith('{"revision":0,"commit":"","epoch":0,')


def test_a_commit_on_an_older_revision_is_refused_with_what_redis_holds(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    store = engine.store
    ops = Recorder()
    ops.set("mainsail:test:a", "1")
    assert store.commit(rec.id, 0, "t1", ops).status == "ok"
    assert store.r.get("mainsail:test:a") == b"1"
    # the test's own write did not bump the revision; a real commit does:
    rec2 = store.get_session(rec.id)
    rec2.revision, rec2.commit = 1, "t2"
    ops = Recorder()
    store.save_session(rec2, ops)
    assert store.commit(rec.id, 0, "t2", ops).status == "ok"
    stale = Recorder()
    stale.set("mainsail:test:b", "1")
    reply = store.commit(rec.id, 0, "t3", stale)
    assert reply.status == "conflict"
    assert b'"revision":1' in reply.session
    assert store.r.get("mainsail:test:b") is None


def test_a_commit_sent_twice_is_applied_once(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    store = engine.store
    rec.revision, rec.commit = 1, "token-1"
    ops = Recorder()
    store.save_session(rec, ops)
    ops.rpush("mainsail:test:list", "x")
    assert store.commit(rec.id, 0, "token-1", ops).status == "ok"
    assert store.commit(rec.id, 0, "token-1", ops).status == "landed"  # e.g. re-sent after a lost reply
    assert store.r.lrange("mainsail:test:list", 0, -1) == [b"x"]


def test_claim_is_one_script_with_the_fence_in_redis(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    [step] = engine.submit(rec.id, "go")
    a, b = owner_token(), owner_token()
    first = engine.claim(rec.id, step.id, a, worker="w1")
    assert first.step.status is StepStatus.RUNNING and first.step.attempt == 1 and first.step.owner == a
    assert engine.store.workers.held("w1") == {keys.lease_member(rec.id, step.id): a}
    assert engine.claim(rec.id, step.id, b).step is None  # a's lease is live
    again = engine.claim(rec.id, step.id, a)  # a's first reply was lost: the same claim, not another attempt
    assert again.step.attempt == 1
    assert engine.heartbeat(rec.id, step.id, a) and not engine.heartbeat(rec.id, step.id, b)


def test_a_cancel_makes_the_heartbeat_say_the_step_is_no_longer_ours_and_its_claim_supersede_it(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    [step] = engine.submit(rec.id, "go")
    owner = owner_token()
    engine.claim(rec.id, step.id, owner)
    engine.cancel(rec.id)
    assert not engine.heartbeat(rec.id, step.id, owner)
    [late] = engine.submit(rec.id, "again")
    engine.cancel(rec.id)
    assert engine.claim(rec.id, late.id, owner_token()).step is None  # stale: handed to Python, superseded
    assert engine.store.get_step(rec.id, late.id).status is StepStatus.SUPERSEDED


def test_two_parallel_tools_committing_on_one_revision_are_both_recorded_once(engine, ws):
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    rec = _session(engine, ws, [
        Turn(tool_uses=[ToolUse(name="Read", input={"file_path": str(ws / "a.txt")}),
                        ToolUse(name="Read", input={"file_path": str(ws / "b.txt")})]),
        Turn(text="done"),
    ])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "read both"))
    inline.run(1)  # the model step: two Read steps follow, in one batch
    t1, t2 = list(inline.queue)
    inline.queue.clear()
    o1, o2 = owner_token(), owner_token()
    assert engine.claim(rec.id, t1.id, o1).step and engine.claim(rec.id, t2.id, o2).step  # both read revision N
    assert engine.record_tool_output(rec.id, t1.id, o1, ToolOutput(content="A")) == []
    follow = engine.record_tool_output(rec.id, t2.id, o2, ToolOutput(content="B"))  # refused once, applied again
    assert [s.kind for s in follow] == [StepKind.MODEL]
    contents = [e.message.blocks()[0].content for e in engine.store.entries(rec.id)
                if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert contents == ["A", "B"]
    inline.dispatch(follow)
    inline.drain()
    assert engine.store.get_session(rec.id).state is State.IDLE


def test_a_message_sent_while_the_last_step_commits_is_started_not_lost(engine, ws):
    rec = _session(engine, ws, [Turn(text="first"), Turn(text="second")])
    [step] = engine.submit(rec.id, "one")
    owner = owner_token()
    claim = engine.claim(rec.id, step.id, owner)  # the worker holds the record as of this claim
    assert claim.step
    assert engine.submit(rec.id, "two") == []  # busy: queued, in a commit of its own
    from workflows.model.client import ModelReply
    from workflows.models import AssistantMessage, TextBlock, Usage

    reply = ModelReply(message=AssistantMessage(content=[TextBlock(text="first")], usage=Usage(),
                                                stop_reason="end_turn", model="m"),
                       model=claim.session.sent_model(), duration_ms=1)
    follow = engine.record_model_reply(rec.id, step.id, owner, reply)  # its claim's revision is old now
    assert [s.kind for s in follow] == [StepKind.MODEL]  # the queued message started
    assert engine.store.inbox(rec.id) == []
    inline = Inline(engine)
    inline.dispatch(follow)
    inline.drain()
    assert [r.result for r in engine.store.entries(rec.id) if isinstance(r, ResultEntry)] == ["first", "second"]


def test_a_worker_runs_the_next_step_itself_claimed_by_the_commit_before_it(engine, ws):
    (ws / "a.txt").write_text("a\n")
    # (Glob: not a quick tool, whose call the model step would run itself: workflows/steps/tool.py)
    rec = _session(engine, ws, [Turn(tool_uses=[ToolUse(name="Glob", input={"pattern": "*.txt"})]),
                                Turn(text="done")])
    [step] = engine.submit(rec.id, "find")
    sent: list = []
    keep = lambda s: True  # noqa: E731  (this worker serves every queue)
    result, claimed = run_one(engine, rec.id, step.id, sent.extend, worker="w1", keep=keep)
    assert result == "done" and sent == []  # nothing went through the broker
    tool, owner, _ = claimed
    stored = engine.store.get_step(rec.id, tool.id)
    assert stored.kind is StepKind.TOOL and stored.status is StepStatus.RUNNING and stored.owner == owner
    assert engine.store.workers.held("w1") == {keys.lease_member(rec.id, tool.id): owner}  # the model step left
    result, claimed = run_one(engine, rec.id, tool.id, sent.extend, worker="w1", keep=keep, claimed=claimed)
    result, claimed = run_one(engine, rec.id, claimed[0].id, sent.extend, worker="w1", keep=keep, claimed=claimed)
    assert claimed is None and sent == []
    assert engine.store.get_session(rec.id).state is State.IDLE
    assert engine.store.workers.held("w1") == {}
    assert [r.result for r in engine.store.entries(rec.id) if isinstance(r, ResultEntry)] == ["done"]
