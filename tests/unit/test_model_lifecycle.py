"""The default model is Claude Code's, and a model near or past its end of life (the anthropic SDK's own
deprecation list) is said once: in the transcript at its first call, and in a failed call's error."""

from __future__ import annotations

import datetime as dt

import pytest
from anthropic._data import DEPRECATED_MODELS

from demo.scripted import Script, ScriptError, Turn
from tests.inline import Inline, scripted_model
from workflows.model.lifecycle import end_of_life, lifecycle_note, retired
from workflows.models import SystemEntry
from workflows.models.model_names import resolve_model
from workflows.models.options import SessionOptions
from workflows.settings import Settings


def test_the_default_model_is_claude_codes_and_not_deprecated(monkeypatch):
    for name in ("MAINSAIL_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    default = Settings().model
    # What Claude Code 2.1.332 sends with an API key and no --model (its system/init `model` and the request).
    assert resolve_model(default) == "claude-opus-5-5"
    assert resolve_model(default, overrides={"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-x-1"}) == "claude-x-1"
    assert end_of_life(resolve_model(default)) is None


def test_the_sdk_lists_the_old_default_with_its_end_of_life():
    assert end_of_life("claude-sonnet-4-5") == dt.date(2026, 11, 30)
    assert end_of_life("claude-sonnet-4-5-20250929") == dt.date(2026, 11, 30)
    assert end_of_life("claude-opus-5-5") is None and end_of_life("acme") is None


def test_the_note_says_deprecated_before_and_end_of_life_after_the_day():
    before = lifecycle_note("claude-sonnet-4-5", today=dt.date(2026, 11, 27))
    assert before.startswith("Model claude-sonnet-4-5 is deprecated and reaches its end of life on 2026-11-30")
    after = lifecycle_note("claude-sonnet-4-5", today=dt.date(2026, 12, 1))
    assert after.startswith("Model claude-sonnet-4-5 reached its end of life on 2026-11-30")
    assert "--model or MAINSAIL_MODEL" in after
    assert retired("claude-sonnet-4-5", today=dt.date(2026, 11, 30))
    assert not retired("claude-sonnet-4-5", today=dt.date(2026, 11, 29))
    assert lifecycle_note("claude-opus-5-5") is None


def test_a_date_in_another_form_gives_no_note(monkeypatch):
    monkeypatch.setitem(DEPRECATED_MODELS, "claude-odd", "sometime soon")
    assert end_of_life("claude-odd") is None and lifecycle_note("claude-odd") is None


def test_the_transcript_says_it_once_at_the_first_call(engine, ws, monkeypatch):
    model = scripted_model(Script(turns=[Turn(text="one"), Turn(text="two")]))
    monkeypatch.setitem(DEPRECATED_MODELS, model, "November 30th, 2026")
    rec = engine.create_session(str(ws), SessionOptions(model=model))
    inline = Inline(engine)
    for prompt in ("go", "again"):
        inline.dispatch(engine.submit(rec.id, prompt))
        inline.drain()
    warnings = [e.content for e in engine.store.entries(rec.id) if isinstance(e, SystemEntry)
                and e.subtype == "warning" and "end of life" in e.content]
    assert len(warnings) == 1 and model in warnings[0] and "2026-11-30" in warnings[0]


@pytest.mark.parametrize("day, said", [("January 1st, 2020", True), ("December 31st, 2099", False)])
def test_a_failed_call_of_a_retired_model_says_why(engine, ws, monkeypatch, day, said):
    model = scripted_model(Script(turns=[Turn(text="never", errors=[ScriptError(status=404)])]))
    monkeypatch.setitem(DEPRECATED_MODELS, model, day)
    rec = engine.create_session(str(ws), SessionOptions(model=model))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    errors = [e.content for e in engine.store.entries(rec.id) if isinstance(e, SystemEntry)]
    assert any("404" in e for e in errors), errors
    assert any("reached its end of life on 2020-01-01" in e for e in errors) is said
