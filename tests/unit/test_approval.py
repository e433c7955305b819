"""Durable approval in the engine: ask, wait without a worker, decide from anywhere."""

from __future__ import annotations

import time

import pytest

from demo.scripted import DEMO_FILES, Script, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, scripted_model
from tests.session_kw import create as create_session
from workflows.engine import Engine
from workflows.exceptions import RequestClosed, RequestNotFound
from workflows.models import (
    PermissionDecisionEntry,
    PermissionRequestEntry,
    ResultEntry,
    RuleSet,
    StepKind,
    UserEntry,
)
from workflows.store import keys
from workflows.store.redis_store import Store

EDIT = ToolUse(name="Edit", input={"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
RUN = ToolUse(name="Bash", input={"command": "python3 calc.py"})


def start(engine, ws, turns, mode="default", **kw):
    model = scripted_model(Script(turns=turns))
    rec = create_session(engine, str(ws), model=model, permission_mode=mode, **kw)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    return rec.id, inline


def entries_of(engine, sid, kind):
    return [e for e in engine.store.entries(sid) if isinstance(e, kind)]


def read_then(*tool_uses):
    return [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
            Turn(tool_uses=list(tool_uses)), Turn(text="all done")]


def test_a_call_that_asks_waits_without_a_worker_and_runs_after_approval(engine, ws):
    sid, inline = start(engine, ws, read_then(EDIT))
    rec = engine.store.get_session(sid)
    assert rec.state is State.AWAITING_PERMISSION
    assert not inline.queue, "nothing may run (or hold a worker) while waiting"
    assert engine.store.awaiting_sessions() == [sid]
    (req,) = entries_of(engine, sid, PermissionRequestEntry)
    assert req.tool == "Edit" and req.summary.endswith("calc.py") and "default" in req.reason
    inline.dispatch(engine.decide_request(sid, req.request_id, True))
    assert [s.kind for s in inline.queue] == [StepKind.TOOL]
    inline.drain()
    assert "a + b" in (ws / "calc.py").read_text()
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and engine.store.awaiting_sessions() == []
    (decision,) = entries_of(engine, sid, PermissionDecisionEntry)
    assert decision.decision == "allow" and decision.decided_by == "user" and decision.timestamp
    assert entries_of(engine, sid, ResultEntry)[-1].permission_denials == []


def test_deny_with_a_message_tells_the_model_and_the_session_goes_on(engine, ws):
    sid, inline = start(engine, ws, read_then(EDIT))
    inline.dispatch(engine.decide_request(sid, None, False, message="use a different fix"))
    inline.drain()
    result = [e for e in entries_of(engine, sid, UserEntry) if e.origin == "tool_result"][-1]
    block = result.message.blocks()[0]
    assert block.is_error and "rejected" in block.text and "use a different fix" in block.text
    assert "a - b" in (ws / "calc.py").read_text()
    final = entries_of(engine, sid, ResultEntry)[-1]
    assert final.subtype == "success"
    assert final.permission_denials == [{"tool_name": "Edit", "tool_use_id": EDIT_ID(engine, sid),
                                         "tool_input": EDIT.input}]


def EDIT_ID(engine, sid):
    return entries_of(engine, sid, PermissionRequestEntry)[0].tool_use_id


def test_approving_twice_is_a_clear_error(engine, ws):
    sid, inline = start(engine, ws, read_then(EDIT))
    (req,) = entries_of(engine, sid, PermissionRequestEntry)
    inline.dispatch(engine.decide_request(sid, req.request_id, True))
    with pytest.raises(RequestClosed, match=f"Request {req.request_id} of session {sid[:8]} .* was already "
                                            "approved by user at"):
        engine.decide_request(sid, req.request_id, True)


def test_a_request_superseded_by_a_cancel_cannot_be_approved(engine, ws):
    sid, inline = start(engine, ws, read_then(EDIT))
    (req,) = entries_of(engine, sid, PermissionRequestEntry)
    assert engine.cancel(sid)
    assert engine.store.awaiting_sessions() == []
    with pytest.raises(RequestClosed, match="was superseded by a cancel"):
        engine.decide_request(sid, req.request_id, True)
    # The cancel closed the dangling call, so the transcript stays valid.
    last = [e for e in entries_of(engine, sid, UserEntry) if e.origin == "tool_result"][-1]
    assert last.message.blocks()[0].tool_use_id == req.tool_use_id


def test_the_approval_timeout_denies_and_says_so(engine, ws):
    sid, inline = start(engine, ws, read_then(EDIT), approval_timeout_seconds=5)
    (req,) = entries_of(engine, sid, PermissionRequestEntry)
    assert req.expires_at and engine.store.r.zscore(keys.approvals(), f"{sid}/{req.request_id}")
    assert engine.expire_approvals(time.time()) == []
    inline.dispatch(engine.expire_approvals(time.time() + 6))
    inline.drain()
    (decision,) = entries_of(engine, sid, PermissionDecisionEntry)
    assert decision.decided_by == "timeout" and decision.decision == "deny"
    result = [e for e in entries_of(engine, sid, UserEntry) if e.origin == "tool_result"][-1]
    assert "nobody answered within 5 seconds" in result.message.blocks()[0].text
    assert engine.store.get_session(sid).state is State.IDLE
    assert engine.store.r.zcard(keys.approvals()) == 0


def test_always_adds_a_session_rule_so_the_same_call_does_not_ask_again(engine, ws):
    turns = [Turn(tool_uses=[RUN]), Turn(tool_uses=[RUN]), Turn(text="ran twice")]
    sid, inline = start(engine, ws, turns)
    (req,) = entries_of(engine, sid, PermissionRequestEntry)
    inline.dispatch(engine.decide_request(sid, req.request_id, True, always=True))
    inline.drain()
    assert len(entries_of(engine, sid, PermissionRequestEntry)) == 1, "the second identical call asked again"
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE
    assert [(r.rule, r.source) for r in rec.rules.allow] == [("Bash(python3 calc.py)", "session")]
    decisions = entries_of(engine, sid, PermissionDecisionEntry)
    assert decisions[0].rules_added == ["Bash(python3 calc.py)"] == req.always
    assert decisions[-1].decided_by == "rule"


def test_two_asks_in_one_turn_wait_for_both_decisions(engine, ws):
    sid, inline = start(engine, ws, read_then(EDIT, RUN))
    reqs = entries_of(engine, sid, PermissionRequestEntry)
    assert [r.tool for r in reqs] == ["Edit", "Bash"]
    with pytest.raises(RequestNotFound, match="has 2 pending requests; name one"):
        engine.decide_request(sid, None, True)
    assert engine.decide_request(sid, reqs[1].request_id, False) == []
    assert engine.store.get_session(sid).state is State.AWAITING_PERMISSION
    inline.dispatch(engine.decide_request(sid, reqs[0].request_id[:4], True))
    inline.drain()
    assert "a + b" in (ws / "calc.py").read_text()
    assert engine.store.get_session(sid).state is State.IDLE


def test_an_unknown_request_is_named(engine, ws):
    sid, _ = start(engine, ws, read_then(EDIT))
    with pytest.raises(RequestNotFound, match=r"has no permission request 'zzzz'.*mainsail pending"):
        engine.decide_request(sid, "zzzz", True)


def test_a_deny_rule_refuses_at_once_naming_the_rule(engine, ws):
    rules = RuleSet()
    rules.add("deny", "Bash(python3:*)", "/etc/team/settings.json")
    sid, inline = start(engine, ws, [Turn(tool_uses=[RUN]), Turn(text="ok")], mode="bypassPermissions",
                        rules=rules)
    assert not entries_of(engine, sid, PermissionRequestEntry)
    result = [e for e in entries_of(engine, sid, UserEntry) if e.origin == "tool_result"][-1]
    text = result.message.blocks()[0].text
    assert "Permission to use Bash was denied" in text and "Bash(python3:*)" in text
    (decision,) = entries_of(engine, sid, PermissionDecisionEntry)
    assert decision.decided_by == "rule" and decision.decision == "deny"
    assert entries_of(engine, sid, ResultEntry)[-1].permission_denials[0]["tool_name"] == "Bash"


def test_a_session_that_asks_nobody_denies_at_once_and_lists_the_denial(engine, ws):
    """Print mode (Claude Code's -p): no request, no waiting; the model is told and carries on."""
    sid, inline = start(engine, ws, read_then(EDIT), asks="deny")
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and entries_of(engine, sid, PermissionRequestEntry) == []
    assert "a - b" in (ws / "calc.py").read_text()
    (result,) = entries_of(engine, sid, ResultEntry)
    assert result.subtype == "success"
    assert [(d["tool_name"], d["tool_input"]) for d in result.permission_denials] == [("Edit", EDIT.input)]
    refused = [e for e in entries_of(engine, sid, UserEntry) if e.origin == "tool_result"][-1]
    assert "without anyone to ask (print mode)" in refused.message.text() or \
        "without anyone to ask (print mode)" in str(refused.message.content)


def test_a_call_approved_before_the_session_went_to_print_mode_still_runs(engine, ws):
    sid, inline = start(engine, ws, read_then(EDIT))
    engine.update_limits(sid, asks="deny")  # a `mainsail -p --resume` while the request waited
    inline.dispatch(engine.decide_request(sid, None, True))
    inline.drain()
    assert "a + b" in (ws / "calc.py").read_text()
