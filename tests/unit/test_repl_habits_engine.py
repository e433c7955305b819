"""Interactive mode's habits through the engine (fakeredis, steps run inline): bash mode (``!cmd``, sent as
``<bash-input>cmd</bash-input>``) runs one Bash call decided like the model's and adds its output to the
conversation without a model call; ``@path`` in a plain prompt attaches the file (a Read call, through the
path resolver and the Read rules) before the prompt."""

from __future__ import annotations

import json

from demo.scripted import Turn
from statemachines import State
from tests.inline import api_of
from tests.unit.test_commands_engine import entries, home, last_user_texts, open_session, run  # noqa: F401
from workflows.models import PermissionRequestEntry, ResultEntry, RuleSet, RuleSpec, SystemEntry, UserEntry


def test_bash_mode_adds_the_output_to_the_conversation_without_a_model_call(engine, ws, home):  # noqa: F811
    sid, model, _ = open_session(engine, ws, home, turns=[Turn(text="Seen it.")], mode="bypassPermissions")
    run(engine, sid, "<bash-input>echo hello && echo oops >&2</bash-input>")
    assert api_of(model).requests == []
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and rec.command is None and rec.title == "!echo hello && echo oops >&2"
    texts = [e.message.text() for e in entries(engine, sid, UserEntry)]
    assert texts[0] == "<bash-input>echo hello && echo oops >&2</bash-input>"
    assert texts[1].startswith("<bash-stdout>hello") and "oops" in texts[1]
    result = entries(engine, sid, ResultEntry)[-1]
    assert result.subtype == "success" and result.num_turns == 0 and "hello" in result.result
    run(engine, sid, "What did it print?")
    sent = json.dumps(api_of(model).requests[-1]["messages"])
    assert "<bash-input>echo hello" in sent and "<bash-stdout>hello" in sent  # context for the next turn


def test_bash_mode_asks_as_the_models_bash_call_would_and_a_denial_runs_nothing(engine, ws, home):  # noqa: F811
    sid, model, _ = open_session(engine, ws, home)
    inline = run(engine, sid, "<bash-input>touch made.txt</bash-input>")
    (req,) = entries(engine, sid, PermissionRequestEntry)
    assert req.tool == "Bash" and req.input == {"command": "touch made.txt"}
    inline.dispatch(engine.decide_request(sid, None, False, message="no"))
    inline.drain()
    assert not (ws / "made.txt").exists() and api_of(model).requests == []
    result = entries(engine, sid, ResultEntry)[-1]
    assert result.result.startswith('Shell command permission check failed for pattern "!touch made.txt"')
    rules = RuleSet(deny=[RuleSpec(rule="Bash(rm:*)", source="test")])
    sid2, _, _ = open_session(engine, ws, home, mode="bypassPermissions", rules=rules)
    (ws / "keep.txt").write_text("x")
    run(engine, sid2, "<bash-input>rm keep.txt</bash-input>")
    assert (ws / "keep.txt").exists(), "a deny rule holds in bash mode too"
    assert "permission check failed" in entries(engine, sid2, ResultEntry)[-1].result


def test_a_failing_command_still_adds_its_output(engine, ws, home):  # noqa: F811
    sid, _, _ = open_session(engine, ws, home, mode="bypassPermissions")
    run(engine, sid, "<bash-input>echo partial; exit 3</bash-input>")
    out = [e.message.text() for e in entries(engine, sid, UserEntry)][-1]
    assert out.startswith("<bash-stdout></bash-stdout><bash-stderr>") and "partial" in out


def test_mentions_attach_files_through_the_resolver_and_read_rules(engine, ws, home, tmp_path):  # noqa: F811
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / ".env").write_text("TOKEN=s3cret\n")
    (tmp_path / "outside.txt").write_text("far away")
    rules = RuleSet(deny=[RuleSpec(rule="Read(./.env)", source="test")])
    sid, model, _ = open_session(engine, ws, home, rules=rules)
    run(engine, sid, "Explain @calc.py and @.env and @../outside.txt, ping @nobody")
    texts = last_user_texts(model)
    assert texts[-1] == "Explain @calc.py and @.env and @../outside.txt, ping @nobody"
    reminders = [t for t in texts if "Read tool" in t]
    assert len(reminders) == 2 and json.dumps({"file_path": str(ws / "calc.py")}, separators=(",", ":")) in reminders[0]
    assert "return a + b" in reminders[1]
    sent = json.dumps(api_of(model).requests[-1])
    assert "s3cret" not in sent and "far away" not in sent
    warnings = [e.content for e in entries(engine, sid, SystemEntry) if e.subtype == "warning"]
    assert any(w.startswith("@.env was not attached") for w in warnings)
    assert any(w.startswith("@../outside.txt was not attached") and "outside the workspace" in w for w in warnings)
    assert any(w.startswith("@nobody was not attached: no such file") for w in warnings)
    (prompt,) = [e for e in entries(engine, sid, UserEntry) if e.origin == "prompt"]
    assert prompt.message.text() == texts[-1] and prompt.command is None  # the prompt as typed: a run's start
    assert engine.store.get_session(sid).state is State.IDLE


def test_a_prompt_without_mentions_is_sent_as_before(engine, ws, home):  # noqa: F811
    sid, model, _ = open_session(engine, ws, home)
    inline = run(engine, sid, "mail me at a@b.example")
    assert [s.kind.value for s in inline.ran] == ["model"]
    assert last_user_texts(model)[-1] == "mail me at a@b.example"
