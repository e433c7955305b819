"""The engine's counts (workflows/store/metrics.py): noted when a commit lands, added to Redis by a flush."""

from __future__ import annotations

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, scripted_model
from workflows.models.options import SessionOptions
from workflows.store.metrics import TALLY, Tally, field, read


@pytest.fixture(autouse=True)
def fresh_tally(monkeypatch):
    """No flusher thread (one another test in this process bound) may take this test's counts to Redis."""
    monkeypatch.setattr(TALLY, "flush", lambda r=None: 0)
    TALLY.drain()
    yield
    TALLY.drain()


def test_a_flush_adds_counts_and_histogram_buckets_to_redis_and_keeps_them_when_redis_is_away(fake_redis):
    t = Tally()
    t.add("mainsail_x_total", 2, kind="model")
    t.observe("mainsail_y_seconds", 0.3, (0.1, 0.5, 1.0), kind="tool")
    t.observe("mainsail_y_seconds", 7.0, (0.1, 0.5, 1.0), kind="tool")
    assert t.flush(fake_redis) == 5
    counts = read(fake_redis)
    assert counts[field("mainsail_x_total", kind="model")] == 2
    assert counts[field("mainsail_y_seconds_bucket", kind="tool", le="0.5")] == 1
    assert counts[field("mainsail_y_seconds_bucket", kind="tool", le="+Inf")] == 1
    assert counts[field("mainsail_y_seconds_count", kind="tool")] == 2
    assert counts[field("mainsail_y_seconds_sum", kind="tool")] == pytest.approx(7.3)

    class Away:
        def pipeline(self, transaction=False):
            raise ConnectionError("down")

    t.add("mainsail_x_total", kind="model")
    assert t.flush(Away()) == 0  # kept for the next flush
    t.flush(fake_redis)
    assert read(fake_redis)[field("mainsail_x_total", kind="model")] == 3


def test_a_session_counts_its_steps_tokens_and_approvals_once_each(engine, ws):
    turns = [Turn(tool_uses=[ToolUse(name="Bash", input={"command": "echo hi > x.txt"})]), Turn(text="done")]
    rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(Script(turns=turns)), no_memory=True))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    inline.dispatch(engine.decide_request(rec.id, None, True))
    inline.drain()
    counts = TALLY.drain()
    model = engine.store.get_session(rec.id).model
    assert counts[field("mainsail_approvals_asked_total")] == 1
    assert counts[field("mainsail_approval_decision_seconds_count", decision="allow", by="user")] == 1
    assert counts[field("mainsail_steps_created_total", kind="model")] == 2
    assert counts[field("mainsail_steps_finished_total", kind="model", outcome="done")] == 2
    assert counts[field("mainsail_steps_finished_total", kind="tool", outcome="done")] == 1
    assert counts[field("mainsail_step_duration_seconds_count", kind="tool")] == 1
    assert counts[field("mainsail_model_calls_total", model=model, kind="main")] == 2
    usage = engine.store.get_session(rec.id).usage
    assert counts[field("mainsail_model_tokens_total", model=model, type="output")] == usage.output_tokens
