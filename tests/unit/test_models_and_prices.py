"""Model aliases, what each call sends, unknown prices and --fallback-model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from demo import PREFIX, PROVIDER
from demo.scripted import Script, ScriptError, Turn
from tests.inline import Inline, api_of, scripted_model
from workflows.model import providers as model_providers
from workflows.model.pricing import PRICES, add_cost, cost_usd, known_price, price_for
from workflows.models import AssistantEntry, PermissionMode, ResultEntry, SystemEntry, Usage
from workflows.models.model_names import describe_model, model_overrides, resolve_model, session_model
from workflows.models.options import SessionOptions


@pytest.mark.parametrize("name, plan, sent", [
    ("opus", False, "claude-opus-5-5"),
    ("sonnet", False, "claude-sonnet-5-5"),
    ("haiku", False, "claude-haiku-5-5"),
    ("default", False, "claude-opus-5-5"),
    ("OPUS", False, "claude-opus-5-5"),
    ("opusplan", False, "claude-sonnet-5-5"),
    ("opusplan", True, "claude-opus-5-5"),
    ("claude-sonnet-4-5-20250929", False, "claude-sonnet-4-5-20250929"),
    ("my-model", True, "my-model"),
])
def test_aliases_resolve_as_claude_code_sends_them(name, plan, sent):
    assert resolve_model(name, plan=plan) == sent


def test_alias_overrides_follow_claude_codes_variables():
    over = model_overrides({"ANTHROPIC_DEFAULT_OPUS_MODEL": "a", "ANTHROPIC_DEFAULT_SONNET_MODEL": "b", "PATH": "x"},
                           {"ANTHROPIC_DEFAULT_OPUS_MODEL": "c"})
    assert over == {"ANTHROPIC_DEFAULT_OPUS_MODEL": "c", "ANTHROPIC_DEFAULT_SONNET_MODEL": "b"}
    assert resolve_model("opusplan", plan=True, overrides=over) == "c"
    assert resolve_model("opusplan", plan=False, overrides=over) == "b"
    assert resolve_model("claude-opus-4-5", overrides=over) == "claude-opus-4-5"


def test_the_session_model_precedence():
    assert session_model("haiku", {"ANTHROPIC_MODEL": "opus"}, "sonnet", {}, "d") == "haiku"  # flag / MAINSAIL_MODEL
    assert session_model(None, {"ANTHROPIC_MODEL": "opus"}, "sonnet", {}, "d") == "opus"
    assert session_model(None, {"ANTHROPIC_MODEL": "opus"}, "sonnet", {"ANTHROPIC_MODEL": "haiku"}, "d") == "haiku"
    assert session_model(None, {}, "sonnet", {}, "d") == "sonnet"
    assert session_model(None, {}, None, {}, "d") == "d"


def test_a_session_keeps_what_was_asked_and_sends_the_id(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="opusplan", permission_mode="default"))
    assert rec.model == "opusplan" and rec.sent_model() == "claude-sonnet-5-5"
    rec.permission_mode = PermissionMode.PLAN
    assert rec.sent_model() == "claude-opus-5-5"
    assert describe_model(rec.model, rec.sent_model()) == "opusplan (sends claude-opus-5-5)"


@pytest.mark.parametrize("model, known", [
    ("claude-opus-4-5", True), ("claude-opus-4-5-20251101", True), ("claude-opus-4-1-20250805", True),
    ("claude-sonnet-4-5", True), ("claude-haiku-4-5-20251001", True), ("claude-opus-5-5", True),
    ("claude-3-7-sonnet-latest", True), ("claude-opus-4-20250514", True), ("scripted:demo", True),
    ("claude-opus-4-9", False), ("claude-sonnet-4-5-turbo", False), ("gpt-4o", False), ("opus", False),
])
def test_a_price_is_known_only_for_listed_ids_never_guessed_by_prefix(model, known):
    assert known_price(model) is known


def test_prices_match_the_published_figures():
    u = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd("claude-opus-4-5", u) == 30.0 and cost_usd("claude-opus-4-1", u) == 90.0
    assert cost_usd("claude-sonnet-4-5", u) == 18.0 and cost_usd("claude-haiku-4-5", u) == 6.0
    assert cost_usd("unknown-model", u) is None
    assert add_cost(1.0, None) is None and add_cost(None, 1.0) is None and add_cost(1.0, 2.0) == 3.0
    assert price_for("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet-4-5"]


def unpriced_scripted_models(monkeypatch) -> None:
    """For this test, the scripted models have no price (as a model missing from the price list)."""
    monkeypatch.setitem(model_providers._providers, PREFIX, replace(PROVIDER, prices=None))


def _priced_run(engine, ws, model, monkeypatch, price=None):
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    return engine.store.get_session(rec.id), engine.store.entries(rec.id)


def test_an_unknown_model_warns_once_and_its_cost_is_unknown_everywhere(engine, ws, monkeypatch):
    model = scripted_model(Script(turns=[Turn(text="one")] * 4))
    unpriced_scripted_models(monkeypatch)
    rec, entries = _priced_run(engine, ws, model, monkeypatch)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "again"))
    inline.drain()
    rec = engine.store.get_session(rec.id)
    entries = engine.store.entries(rec.id)
    warnings = [e for e in entries if isinstance(e, SystemEntry) and e.subtype == "warning"]
    assert len(warnings) == 1 and "No price is known" in warnings[0].content and model in warnings[0].content
    assert rec.cost_usd is None and rec.run_cost_usd is None and rec.cost_by_model[model] is None
    assert rec.unpriced_models == [model]
    result = [e for e in entries if isinstance(e, ResultEntry)][-1]
    assert result.total_cost_usd is None and result.cost_by_model == {model: None}
    assert all(e.cost_usd is None for e in entries if isinstance(e, AssistantEntry))
    assert "total_cost_usd" in result.dump() and result.dump()["total_cost_usd"] is None  # kept, as null


def test_a_budget_cannot_hold_an_unknown_cost_so_the_run_stops(engine, ws, monkeypatch):
    from demo.scripted import ToolUse
    from tests.inline import Inline

    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Glob", input={"pattern": "*"})])] * 3))
    unpriced_scripted_models(monkeypatch)
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", max_budget_usd=1.0))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    result = [e for e in engine.store.entries(rec.id) if isinstance(e, ResultEntry)][-1]
    assert result.subtype == "error_max_budget_usd" and "without a price" in result.result


def test_fallback_model_answers_once_the_main_one_is_overloaded(engine, ws, settings):
    settings.api_max_retries = 0
    busy = scripted_model(Script(turns=[Turn(text="never", errors=[ScriptError(status=529, retry_after=0.01)] * 9)]))
    calm = scripted_model(Script(turns=[Turn(text="from the fallback")]))
    rec = engine.create_session(str(ws), SessionOptions(model=busy, fallback_model=calm, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    entries = engine.store.entries(rec.id)
    (result,) = [e for e in entries if isinstance(e, ResultEntry)]
    assert result.subtype == "success" and result.result == "from the fallback"
    note = [e for e in entries if isinstance(e, SystemEntry) and e.subtype == "warning"]
    assert note and busy in note[0].content and calm in note[0].content and "529" in note[0].content
    assert api_of(calm).attempts(0) == 1
    assert list(result.usage_by_model) == [calm]  # charged as the model that answered


def test_no_fallback_for_other_errors(engine, ws, settings):
    settings.api_max_retries = 0
    broken = scripted_model(Script(turns=[Turn(text="never", errors=[ScriptError(status=500)] * 9)]))
    calm = scripted_model(Script(turns=[Turn(text="from the fallback")]))
    rec = engine.create_session(str(ws), SessionOptions(model=broken, fallback_model=calm, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (result,) = [e for e in engine.store.entries(rec.id) if isinstance(e, ResultEntry)]
    assert result.is_error and api_of(calm).attempts(0) == 0
