"""Honest figures: a run's main loop and its memory forks are counted apart and named everywhere
(the result entry, the closing line, ``show``, the json result), and every breakdown adds up."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cli.figures import breakdown_lines, memory_note, run_figures
from cli.output import result_json
from cli.render import closing_line
from cli.sessions import describe
from demo import PREFIX, PROVIDER
from demo.scripted import Script, ScriptUsage, ToolUse, Turn
from tests.inline import Inline, scripted_model
from workflows.model import providers as model_providers
from workflows.model.pricing import cost_usd
from workflows.models import AssistantEntry, ResultEntry, StepKind, SystemEntry, Usage
from workflows.models.options import SessionOptions

SONNET = (3.0, 15.0, 3.75, 0.30)


@pytest.fixture(autouse=True)
def priced(monkeypatch):
    """Scripted models cost nothing; price them like Sonnet so every cost here is a real number."""
    monkeypatch.setitem(model_providers._providers, PREFIX, replace(PROVIDER, prices=SONNET))


def turns():
    return [Turn(text="Let me read it.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})],
                 usage=ScriptUsage(input_tokens=1200, output_tokens=80)),
            Turn(text="It subtracts.", usage=ScriptUsage(input_tokens=1500, output_tokens=40))]


@pytest.fixture
def ran(engine, ws):
    """One run: a session-memory update finishes during it, the extraction after its result."""
    st = engine.settings
    st.session_memory_init_tokens, st.session_memory_tool_calls, st.session_memory_update_tokens = 100, 1, 1000
    model = scripted_model(Script(turns=turns()))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "why does add fail?"))
    inline.run(1)  # the first reply: it asks for a session-memory update and a Read
    assert [s.kind for s in inline.queue] == [StepKind.MEMORY, StepKind.TOOL]
    inline.run(3)  # the update commits, then the Read, then the answer: the result entry
    (result,) = [e for e in engine.store.entries(rec.id) if isinstance(e, ResultEntry)]
    assert [s.kind for s in inline.queue] == [StepKind.EXTRACT]
    inline.drain()
    return engine.store.get_session(rec.id), result, engine.store.entries(rec.id)


def forks(entries, kind_word):
    return [e for e in entries if isinstance(e, SystemEntry) and e.usage is not None and kind_word in e.content]


def test_the_result_counts_the_main_loop_and_names_the_forks_that_finished_during_the_run(ran):
    rec, result, entries = ran
    main = [e for e in entries if isinstance(e, AssistantEntry)]
    assert result.usage == main[0].message.usage + main[1].message.usage
    assert result.usage.total == 1200 + 80 + 1500 + 40
    assert result.total_cost_usd == pytest.approx(sum(e.cost_usd for e in main))
    assert result.total_cost_usd == pytest.approx((2700 * 3 + 120 * 15) / 1e6)
    (update,) = forks(entries, "Session memory")
    assert result.memory_usage == update.usage and result.memory_cost_usd == pytest.approx(update.cost_usd)
    assert update.cost_usd > 0 and result.memory_saving, "the extraction still ran when the run ended"
    assert result.session_cost_usd == pytest.approx(result.total_cost_usd + result.memory_cost_usd)
    assert result.usage_by_model == {rec.model: result.usage}


def test_the_session_totals_break_down_by_kind_and_model_and_add_up(ran):
    rec, result, entries = ran
    (update,) = forks(entries, "Session memory")
    (extraction,) = forks(entries, "Memory extraction")
    assert set(rec.usage_by_kind) == {"main", "memory", "extract"}
    assert rec.usage_by_kind["main"] == result.usage
    assert rec.usage_by_kind["memory"] == update.usage and rec.usage_by_kind["extract"] == extraction.usage
    assert sum((u for u in rec.usage_by_kind.values()), Usage()) == rec.usage
    assert sum(rec.cost_by_kind.values()) == pytest.approx(rec.cost_usd)
    assert rec.cost_usd == pytest.approx(result.total_cost_usd + update.cost_usd + extraction.cost_usd)
    assert rec.cost_by_model == {rec.model: pytest.approx(rec.cost_usd)}
    # The run's memory went on counting after its result: the update and the extraction.
    assert rec.run_memory_cost_usd == pytest.approx(update.cost_usd + extraction.cost_usd)
    assert rec.run_memory_usage == update.usage + extraction.usage


def test_the_closing_line_names_the_memory_and_the_numbers_match(ran):
    rec, result, _ = ran
    line = closing_line(result).plain
    expected = (f"{result.usage.total:,} tokens · ${result.total_cost_usd:.4f} "
                f"(+ memory ${result.memory_cost_usd:.4f}, {result.memory_usage.total:,} tokens; saving more)")
    assert expected in line, line
    assert line.startswith(f"✓ session {rec.id[:8]} · 2 turns · 2,820 tokens · $0.0099 (+ memory $")


def test_show_prints_each_kind_and_model_and_the_last_run_in_all(ran):
    rec, result, _ = ran
    lines = [" ".join(line.split()) for line in describe(rec, [])]  # columns aside
    u, c = rec.usage_by_kind, rec.cost_by_kind
    assert f"by kind main loop {u['main'].total:,} tokens ${c['main']:.4f}" in lines, lines
    assert f"session memory {u['memory'].total:,} tokens ${c['memory']:.4f}" in lines
    assert f"memory extraction {u['extract'].total:,} tokens ${c['extract']:.4f}" in lines
    assert f"by model {rec.model} {rec.usage.total:,} tokens ${rec.cost_usd:.4f}" in lines
    assert f"cost ${rec.cost_usd:.4f}" in lines
    total = rec.run_cost_usd + rec.run_memory_cost_usd
    assert total == pytest.approx(rec.cost_usd)
    assert (f"last run ${result.total_cost_usd:.4f} · {result.usage.total:,} tokens (+ memory "
            f"${rec.run_memory_cost_usd:.4f}, {rec.run_memory_usage.total:,} tokens; "
            f"${total:.4f} · {rec.usage.total:,} tokens in all)") in lines


def test_the_json_result_keeps_claude_codes_keys_and_adds_a_breakdown(ran):
    _, result, _ = ran
    data = result_json(result)
    assert data["total_cost_usd"] == pytest.approx(result.total_cost_usd)
    assert data["usage"]["input_tokens"] == 2700 and data["usage"]["output_tokens"] == 120
    assert sum(m["costUSD"] for m in data["modelUsage"].values()) == pytest.approx(data["total_cost_usd"])
    (mu,) = data["modelUsage"].values()
    assert (mu["inputTokens"], mu["outputTokens"]) == (2700, 120)
    b = data["cost_breakdown"]
    assert b["main"]["cost_usd"] == data["total_cost_usd"]
    assert b["main"]["usage"] == {k: data["usage"][k] for k in b["main"]["usage"]}  # (its four token counts)
    assert b["memory"]["cost_usd"] == pytest.approx(result.memory_cost_usd) and b["memory"]["saving"] is True
    assert b["session"]["cost_usd"] == pytest.approx(b["main"]["cost_usd"] + b["memory"]["cost_usd"])


def test_compaction_is_its_own_kind_and_inside_the_run(engine, ws):
    model = scripted_model(Script(turns=[Turn(text="hi", usage=ScriptUsage(input_tokens=500, output_tokens=10))]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "hello"))
    inline.drain()
    inline.dispatch(engine.compact(rec.id))
    inline.drain()
    rec = engine.store.get_session(rec.id)
    result = [e for e in engine.store.entries(rec.id) if isinstance(e, ResultEntry)][-1]
    assert "compact" in rec.usage_by_kind and result.usage == rec.usage_by_kind["compact"]
    assert result.total_cost_usd == pytest.approx(cost_usd(rec.model, result.usage))
    assert sum(rec.cost_by_kind.values()) == pytest.approx(rec.cost_usd)


def test_calls_from_before_the_breakdown_show_as_earlier_calls(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="claude-sonnet-4-5", no_memory=True))
    rec.usage = Usage(input_tokens=1000, output_tokens=100)
    rec.cost_usd = 0.0045
    rec.usage_by_kind = {"main": Usage(input_tokens=400, output_tokens=50)}
    rec.cost_by_kind = {"main": 0.002}
    lines = [" ".join(line.split()) for line in breakdown_lines(rec, indent="")]
    assert lines == ["by kind main loop 450 tokens $0.0020", "earlier calls 650 tokens $0.0025"], lines


def test_a_run_without_forks_says_nothing_about_memory():
    e = ResultEntry(session_id="s" * 8, usage=Usage(input_tokens=10), total_cost_usd=0.1)
    assert memory_note(e) == "" and "memory" not in closing_line(e).plain
    e.memory_saving = True
    assert memory_note(e) == " (+ memory: saving)"


def test_run_figures_show_the_main_loop_alone_until_a_fork_finishes(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="claude-sonnet-4-5", no_memory=True))
    rec.run_usage, rec.run_cost_usd = Usage(input_tokens=3591), 0.0126
    assert run_figures(rec) == "$0.0126 · 3,591 tokens"
    rec.run_memory_usage, rec.run_memory_cost_usd = Usage(input_tokens=3356), 0.0128
    assert run_figures(rec) == ("$0.0126 · 3,591 tokens (+ memory $0.0128, 3,356 tokens; "
                                "$0.0254 · 6,947 tokens in all)")
