"""Hooks from .claude/settings.json as a user meets them: the installed CLI, real workers, a private Redis,
the real SDK against the fake Messages API, hook commands in the real sandbox."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models import HookEntry, ResultEntry, SystemEntry, UserEntry

pytestmark = pytest.mark.e2e

BASH = ToolUse(name="Bash", input={"command": "echo ran >> runs.txt"})


def project(tmp_path: Path, event: str, matcher: str, body: str) -> Path:
    """A workspace whose .claude/settings.json runs hooks/hook.sh (which logs its stdin) on ``event``."""
    ws = tmp_path / "ws"
    (ws / "hooks").mkdir(parents=True)
    script = ws / "hooks" / "hook.sh"
    script.write_text(f"#!/bin/sh\ninput=$(cat)\necho \"$input\" >> hooks/hook.log\n{body}\n")
    script.chmod(0o755)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": {event: [
        {"matcher": matcher, "hooks": [{"type": "command", "command": "./hooks/hook.sh", "timeout": 30}]}]}}))
    return ws


def hook_runs(ws: Path) -> list[dict]:
    log = ws / "hooks" / "hook.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(autouse=True)
def private_home(cluster, tmp_path):
    """A HOME of the test's own: --trust-project records the workspace's trust there (workflows.trust)."""
    cluster.env["HOME"] = str(tmp_path / "home")


def run_p(cluster, ws: Path, *extra: str):
    # The hooks are the workspace's own settings: they run only in a workspace the person trusted.
    return cluster.mainsail("run", "-p", "--no-memory", "--trust-project", "--permission-mode", "bypassPermissions",
                            *extra, "go",
                            cwd=ws, timeout=120)


def test_an_exit_two_pre_tool_use_hook_blocks_bash_and_the_model_sees_why(cluster, tmp_path):
    ws = project(tmp_path, "PreToolUse", "Bash", "echo 'runs.txt is frozen; use notes.txt' >&2; exit 2")
    with FakeMessagesServer(Script(turns=[Turn(tool_uses=[BASH]), Turn(text="Understood.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        out = run_p(cluster, ws)
        assert out.returncode == 0, out.stderr
        assert out.stdout == "Understood.\n"
        requests = api.requests
    assert not (ws / "runs.txt").exists(), "the blocked command ran"
    assert "runs.txt is frozen; use notes.txt" in json.dumps(requests[-1]["messages"])
    (run,) = hook_runs(ws)
    assert run["hook_event_name"] == "PreToolUse" and run["tool_input"] == BASH.input
    sid = cluster.session_id()
    (hook,) = [e for e in cluster.store.entries(sid) if isinstance(e, HookEntry)]
    assert hook.outcome.decision == "deny" and hook.outcome.runs[0].exit_code == 2


def test_a_post_tool_use_hooks_output_reaches_the_transcript(cluster, tmp_path):
    ws = project(tmp_path, "PostToolUse", "Bash|Write", "echo \"checked $(wc -l < runs.txt) line(s)\"")
    with FakeMessagesServer(Script(turns=[Turn(tool_uses=[BASH]), Turn(text="Done.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        out = cluster.mainsail("run", "--no-memory", "--trust-project", "--permission-mode", "bypassPermissions", "go",
                               cwd=ws)
        assert out.returncode == 0, out.stderr
    assert "PostToolUse hook (Bash): ok: checked 1 line(s)" in out.stdout + out.stderr
    (run,) = hook_runs(ws)
    assert run["tool_response"]["is_error"] is False and run["tool_name"] == "Bash"
    sid = cluster.session_id()
    log = cluster.store.entries(sid)
    (hook,) = [e for e in log if isinstance(e, HookEntry)]
    assert hook.event == "PostToolUse" and hook.outcome.runs[0].stdout == "checked 1 line(s)\n"
    result = next(e for e in log if isinstance(e, UserEntry) and e.origin == "tool_result")
    assert log.index(hook) < log.index(result)


CRASH_AFTER_VERDICT = """
import os, signal, sys
from workflows.engine import Engine
settle = Engine.settle_pre_tool
def settle_then_die(self, *args, **kwargs):
    go_on, steps = settle(self, *args, **kwargs)
    if go_on:  # the verdict is committed and the tool would run next: the worker dies here
        os.kill(os.getpid(), signal.SIGKILL)
    return go_on, steps
Engine.settle_pre_tool = settle_then_die
from cli.main import main
sys.argv = ["mainsail", "worker", "-Q", "tools"]
main()
"""


def test_a_worker_killed_between_the_recorded_verdict_and_the_tool_never_runs_it_without_the_hook(
        cluster, tmp_path):
    ws = project(tmp_path, "PreToolUse", "Write", """echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse",
 "permissionDecision": "allow", "updatedInput": {"file_path": "out.txt", "content": "from the hook"}}}'""")
    write = ToolUse(name="Write", input={"file_path": "out.txt", "content": "from the model"})
    with FakeMessagesServer(Script(turns=[Turn(tool_uses=[write]), Turn(text="Written.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker("-Q", "model,memory")
        doomed = cluster.start_worker(cmd=[sys.executable, "-c", CRASH_AFTER_VERDICT])
        proc = cluster.mainsail("run", "-p", "--no-memory", "--trust-project", "--permission-mode",
                                "bypassPermissions", "go", cwd=ws, background=True)
        wait_for(lambda: doomed.poll() is not None, 60, what="the worker to die after the verdict")
        assert not (ws / "out.txt").exists()
        cluster.start_worker("-Q", "tools")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out == "Written.\n"
    assert (ws / "out.txt").read_text() == "from the hook", "the retried step ran the call without the verdict"
    assert len(hook_runs(ws)) == 1, "the hook ran again though its verdict was recorded"
    log = cluster.store.entries(cluster.session_id())
    assert len([e for e in log if isinstance(e, HookEntry)]) == 1
    warnings = [e.content for e in log if isinstance(e, SystemEntry)]
    # Taken back from the dead worker, or (the lease is 2 s here) after its lease ran out: run again either way.
    assert any("Tool step " in w and "running it again on another worker" in w for w in warnings), warnings
    assert [e.subtype for e in log if isinstance(e, ResultEntry)] == ["success"]


def session_project(tmp_path: Path, scripts: dict[str, str]) -> Path:
    """A workspace whose .claude/settings.json runs hooks/<event>.sh (logging its stdin) for each event."""
    ws = tmp_path / "ws"
    (ws / "hooks").mkdir(parents=True)
    (ws / ".claude").mkdir()
    settings = {}
    for event, body in scripts.items():
        script = ws / "hooks" / f"{event}.sh"
        script.write_text(f"#!/bin/sh\ninput=$(cat)\necho \"$input\" >> hooks/{event}.log\n{body}\n")
        script.chmod(0o755)
        settings[event] = [{"hooks": [{"type": "command", "command": f"./hooks/{event}.sh", "timeout": 30}]}]
    (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": settings}))
    return ws


def test_prompt_context_reaches_the_model_and_a_stop_block_makes_it_answer_again(cluster, tmp_path):
    ws = session_project(tmp_path, {
        "UserPromptSubmit": "echo 'the staging database is read-only today'",
        "Stop": """case "$input" in *'"stop_hook_active": false'*) echo 'list the tests you ran' >&2; exit 2;; esac""",
    })
    with FakeMessagesServer(Script(turns=[Turn(text="Done."), Turn(text="Ran test_a and test_b.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        out = run_p(cluster, ws)
        assert out.returncode == 0, out.stderr
        requests = api.requests
    assert out.stdout == "Ran test_a and test_b.\n"
    assert "Warning" not in out.stderr
    assert len(requests) == 2
    assert "UserPromptSubmit hook additional context: the staging database is read-only today" in json.dumps(
        requests[0]["messages"])
    assert "Stop hook feedback:\\nlist the tests you ran" in json.dumps(requests[1]["messages"])
    stops = [json.loads(line) for line in (ws / "hooks" / "Stop.log").read_text().splitlines()]
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    sid = cluster.session_id()
    events = [e.event for e in cluster.store.entries(sid) if isinstance(e, HookEntry)]
    assert events == ["UserPromptSubmit", "Stop", "Stop"]


def test_an_exit_two_prompt_hook_blocks_the_prompt_before_any_model_call(cluster, tmp_path):
    ws = session_project(tmp_path, {"UserPromptSubmit": "echo 'prompts about prod are not allowed' >&2; exit 2"})
    with FakeMessagesServer(Script(turns=[Turn(text="never")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        out = run_p(cluster, ws)
        requests = api.requests
    assert requests == []
    assert "prompts about prod are not allowed" in out.stdout + out.stderr
    sid = cluster.session_id()
    assert not [e for e in cluster.store.entries(sid) if isinstance(e, UserEntry)]


def test_a_pre_compact_hook_blocks_mainsail_compact_then_lets_it_run_and_its_stdout_is_shown(cluster, tmp_path):
    ws = session_project(tmp_path, {"PreCompact": (
        "if [ -e hooks/allow ]; then echo 'checkpoint saved'; else echo 'not now: tests are running' >&2; exit 2; fi")})
    turns = [Turn(text="hello"), Turn(text="<summary>THE SUMMARY</summary>")]
    with FakeMessagesServer(Script(turns=turns)) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        assert run_p(cluster, ws).stdout == "hello\n"
        sid = cluster.session_id()
        blocked = cluster.mainsail("compact", sid[:8], "keep the file names", cwd=ws, timeout=120)
        assert blocked.returncode == 1, blocked.stderr
        assert "Error: Compaction blocked by a PreCompact hook: not now: tests are running" in blocked.stdout
        assert len(api.requests) == 1, "the blocked compaction called the model"
        (ws / "hooks" / "allow").touch()
        done = cluster.mainsail("compact", sid[:8], cwd=ws, timeout=120)
        assert done.returncode == 0, done.stderr
        assert len(api.requests) == 2
    assert "Compacted" in done.stdout and "checkpoint saved" in done.stdout + done.stderr
    runs = [json.loads(line) for line in (ws / "hooks" / "PreCompact.log").read_text().splitlines()]
    assert [(r["trigger"], r["custom_instructions"]) for r in runs] == [("manual", "keep the file names"),
                                                                       ("manual", "")]
    events = [(e.event, e.outcome.decision) for e in cluster.store.entries(sid) if isinstance(e, HookEntry)]
    assert events == [("PreCompact", "block"), ("PreCompact", None)]
