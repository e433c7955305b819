"""The installed CLI, a real worker and the real SDK: the default model is Claude Code's, and a deprecated
model is said once on stderr and once in the session's transcript (which run, watch and show render)."""

from __future__ import annotations

import json

from demo.scripted import Script, Turn
from tests.fakeapi import FakeMessagesServer


def test_no_model_flag_sends_claude_codes_default(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="hi there")])) as server:
        cluster.env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-test")
        cluster.start_worker()
        out = cluster.mainsail("-p", "hello", cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert [r["model"] for r in server.requests] == ["claude-opus-5-5"]
        assert "end of life" not in out.stderr


def test_a_deprecated_model_is_said_once_on_stderr_and_in_the_stream(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="ok")])) as server:
        cluster.env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-test")
        cluster.start_worker()
        out = cluster.mainsail("-p", "--model", "claude-sonnet-4-5", "--output-format", "stream-json", "--verbose",
                               "hello", cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert out.stderr.count("Model claude-sonnet-4-5 ") == 1 and "2026-11-30" in out.stderr
        (sid,) = {m["session_id"] for m in map(json.loads, out.stdout.splitlines()) if "session_id" in m}
        show = cluster.mainsail("show", sid[:8], cwd=workspace)  # the transcript, as run and watch show it
        assert show.stdout.count("warning: Model claude-sonnet-4-5 ") == 1, show.stdout


def test_run_shows_it_once_in_its_transcript_not_twice(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="ok")])) as server:
        cluster.env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-test")
        cluster.start_worker()
        out = cluster.mainsail("run", "--model", "claude-sonnet-4-5", "hello", cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert (out.stdout + out.stderr).count("Model claude-sonnet-4-5 ") == 1, out.stdout + out.stderr
        assert "warning: Model claude-sonnet-4-5 " in out.stdout
