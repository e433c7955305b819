"""The installed CLI, real workers and the real SDK: what model id reaches the API, and what things cost."""

from __future__ import annotations

import json

from demo.scripted import Script, ScriptError, Turn
from tests.fakeapi import FakeMessagesServer


def test_an_alias_sends_the_current_id_and_the_session_keeps_the_alias(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="hi there")])) as server:
        cluster.env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-test")
        cluster.start_worker()
        out = cluster.mainsail("run", "-p", "--model", "opus", "--output-format", "json", "hello", cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert [r["model"] for r in server.requests] == ["claude-opus-5-5"]
        result = json.loads(out.stdout)
        assert list(result["modelUsage"]) == ["claude-opus-5-5"] and result["total_cost_usd"] > 0
        show = cluster.mainsail("show", result["session_id"][:8], cwd=workspace)
        assert "opus (sends claude-opus-5-5)" in show.stdout


def test_an_unknown_model_is_sent_as_written_warned_about_and_costs_null(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="ok")])) as server:
        cluster.env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-test")
        cluster.start_worker()
        out = cluster.mainsail("run", "-p", "--model", "acme-model-1", "--output-format", "json", "hello",
                               cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert [r["model"] for r in server.requests] == ["acme-model-1"]
        assert "No price is known for model 'acme-model-1'" in out.stderr
        result = json.loads(out.stdout)
        assert result["total_cost_usd"] is None and result["modelUsage"]["acme-model-1"]["costUSD"] is None
        listed = cluster.mainsail("sessions", cwd=workspace)
        assert "acme-model-1" in listed.stdout and " ? " in listed.stdout


def test_fallback_model_takes_an_overloaded_call(cluster, workspace):
    def script(body: dict) -> Turn:
        if body["model"] == "claude-opus-5-5":
            return Turn(text="never", errors=[ScriptError(status=529, retry_after=0.01)] * 50)
        return Turn(text="answered by the fallback")

    with FakeMessagesServer(script) as server:
        cluster.env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-test", MAINSAIL_API_MAX_RETRIES="1")
        cluster.start_worker()
        out = cluster.mainsail("run", "--model", "opus", "--fallback-model", "sonnet", "hello", cwd=workspace)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "answered by the fallback" in out.stdout
        assert "retried once with the fallback model claude-sonnet-5-5" in out.stdout
        assert [r["model"] for r in server.requests][-1] == "claude-sonnet-5-5"
