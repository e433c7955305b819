"""Background Bash (run_in_background), BashOutput and KillShell: schemas, results, errors and limits
(fakeredis; real processes). Every test that takes ``ctx`` runs as a plain shell and in the sandbox."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from tests.conftest import running
from tests.unit.test_tools_bash import gone, marker
from workflows.models import SandboxSettings
from workflows.permissions.sandbox import sandbox_status
from workflows.shells import SessionShells, ShellStore, shutdown
from workflows.shells.host import Output
from workflows.shells.groups import GUARD
from workflows.store import keys
from workflows.tools import ToolContext, run_tool, tool_schemas

SID = "sess-1"


@pytest.fixture(autouse=True)
def no_shell_left():
    yield
    shutdown()  # stops whatever a test left running, as a worker does when it stops


@pytest.fixture(params=["plain", "sandbox"])
def make_ctx(request, empty_ws, fake_redis):
    if request.param == "sandbox" and not sandbox_status().available:
        pytest.skip(f"no sandbox here: {sandbox_status().detail}")
    box = SandboxSettings() if request.param == "sandbox" else None

    def make(sid: str = SID, **kw) -> ToolContext:
        shells = SessionShells(ShellStore(fake_redis), sid, "worker-a", output_chars=kw.pop("output_chars", 1_000_000))
        return ToolContext(workspace=empty_ws, sandbox=box, shells=shells, **kw)

    return make


@pytest.fixture
def ctx(make_ctx):
    return make_ctx()


def start(ctx, command: str) -> str:
    out = run_tool("Bash", {"command": command, "run_in_background": True, "description": "bg"}, ctx)
    assert not out.is_error, out.content
    m = re.fullmatch(r"Command running in background with ID: ([0-9a-f]{6})", out.content)
    assert m, out.content
    assert out.display == f"running in background ({m.group(1)})"
    return m.group(1)


def output(ctx, shell_id: str, **kw) -> str:
    out = run_tool("BashOutput", {"bash_id": shell_id, **kw}, ctx)
    assert not out.is_error, out.content
    return out.content


def wait_status(ctx, shell_id: str, status: str, timeout: float = 10.0) -> str:
    """BashOutput until the shell has ``status``; everything read on the way, joined."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.append(output(ctx, shell_id))
        if f"<status>{status}</status>" in seen[-1]:
            return "\n".join(seen)
        time.sleep(0.1)
    raise AssertionError(f"shell {shell_id} never became {status}: {seen[-1:]}")


def settle(r, shell_id: str, timeout: float = 10.0) -> str:
    """Wait (without reading its output) until the shell is no longer running; its status."""
    deadline = time.monotonic() + timeout
    while (status := ShellStore(r).status(SID, shell_id)) == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    return status


# ------------------------------------------------------------------ schemas


def test_schemas_are_claude_codes():
    bash, out, kill = (next(s for s in tool_schemas() if s["name"] == n) for n in ("Bash", "BashOutput", "KillShell"))
    flag = bash["input_schema"]["properties"]["run_in_background"]
    assert flag["type"] == "boolean" and flag["default"] is False and "BashOutput" in flag["description"]
    assert "run_in_background" in bash["description"] and "KillShell" in bash["description"]
    assert out["input_schema"]["required"] == ["bash_id"]
    assert set(out["input_schema"]["properties"]) == {"bash_id", "filter"}
    assert "only new output since the last check" in out["description"]
    assert kill["input_schema"]["required"] == ["shell_id"] and set(kill["input_schema"]["properties"]) == {"shell_id"}
    for s in (out, kill):
        assert s["input_schema"]["additionalProperties"] is False


@pytest.mark.parametrize("tool, raw, phrase", [
    ("BashOutput", {}, "bash_id: Field required"),
    ("BashOutput", {"bash_id": "abc", "block": True}, "block: Extra inputs are not permitted"),
    ("BashOutput", {"bash_id": 5}, "bash_id: Input should be a valid string"),
    ("KillShell", {}, "shell_id: Field required"),
    ("KillShell", {"shell_id": "a", "signal": 9}, "signal: Extra inputs"),
    ("Bash", {"command": "x", "run_in_background": "soon"}, "run_in_background: Input should be a valid boolean"),
])
def test_malformed_input_names_the_field(tool, raw, phrase, tool_ctx):
    out = run_tool(tool, raw, tool_ctx)
    assert out.is_error and phrase in out.content, out.content


# ------------------------------------------------------------------ running, reading, finishing


def test_output_is_read_as_it_comes_then_the_exit_code(ctx):
    shell_id = start(ctx, "echo start; sleep 1; echo done; echo warn >&2")
    first = output(ctx, shell_id)
    assert first.startswith("<status>running</status>") and "<exit_code>" not in first
    seen = first + wait_status(ctx, shell_id, "completed")
    assert seen.count("start") == 1 and seen.count("done") == 1, "each line once: only new output is returned"
    last = wait_status(ctx, shell_id, "completed")
    assert "<exit_code>0</exit_code>" in last and "<stdout>" not in last, "nothing new after the end"
    assert re.search(r"<timestamp>\d{4}-\d\d-\d\dT[\d:.]+Z</timestamp>$", last)


def test_the_result_format_and_a_failing_exit_code(ctx, fake_redis):
    shell_id = start(ctx, "echo out; echo err >&2; exit 3")
    assert settle(fake_redis, shell_id) == "completed"
    out = run_tool("BashOutput", {"bash_id": shell_id}, ctx)
    assert re.fullmatch(r"<status>completed</status>\n\n<exit_code>3</exit_code>\n\n<stdout>\nout\n</stdout>\n\n"
                        r"<stderr>\nerr\n</stderr>\n\n<timestamp>[^<]+</timestamp>", out.content), out.content
    assert not out.is_error and out.display == "completed (exit 3) · 2 new lines"


def test_a_filter_keeps_matching_lines_case_insensitively_and_consumes_the_rest(ctx, fake_redis):
    shell_id = start(ctx, "printf 'ok 1\\nERROR two\\nok 3\\nerror four\\n'")
    assert settle(fake_redis, shell_id) == "completed"
    text = output(ctx, shell_id, filter="^error")
    assert "<stdout>\nERROR two\nerror four\n</stdout>" in text and "ok 1" not in text
    assert "<stdout>" not in output(ctx, shell_id), "the lines the filter left out are gone"


def test_a_bad_filter_or_unknown_shell_is_a_clear_error(ctx):
    out = run_tool("BashOutput", {"bash_id": "abc123", "filter": "(?<=x)y"}, ctx)
    assert out.is_error and out.content.startswith("Invalid filter regex '(?<=x)y': lookaround")
    for tool, field in (("BashOutput", "bash_id"), ("KillShell", "shell_id")):
        for bad in ("abc123", "../x", "a" * 300):
            out = run_tool(tool, {field: bad}, ctx)
            assert out.is_error and out.content == f"No shell found with ID: {bad}"


def test_shells_belong_to_their_session(make_ctx):
    mine, other = make_ctx("sess-1"), make_ctx("sess-2")
    shell_id = start(mine, "echo hi")
    out = run_tool("BashOutput", {"bash_id": shell_id}, other)
    assert out.is_error and out.content == f"No shell found with ID: {shell_id}"


def test_long_new_output_is_cut_as_claude_code_cuts_it(make_ctx):
    ctx = make_ctx(max_output_chars=100)
    shell_id = start(ctx, "for i in $(seq 1 200); do echo line-$i; done")
    text = wait_status(ctx, shell_id, "completed")
    assert "line-1\n" in text and "line-200" not in text
    assert re.search(r"\n\n\.\.\. \[\d+ lines truncated\] \.\.\.\n</stdout>", text)


def test_stored_output_is_capped_and_a_reader_is_told_what_it_missed(make_ctx, fake_redis):
    ctx = make_ctx(output_chars=2000)
    shell_id = start(ctx, "for i in $(seq 1 2000); do echo line-$i; done; sleep 0.5; echo tail")
    text = wait_status(ctx, shell_id, "completed")
    assert "tail" in text and "line-2000" in text and "line-1\n" not in text
    assert re.search(r"<note>[\d,]+ characters of output were dropped before this read: a background shell keeps "
                     r"only its latest output\.", text)
    stored = sum(len(f[b"d"]) for _, f in fake_redis.xrange(keys.shell_output(SID, shell_id)))
    assert stored <= 2000


def test_output_buffer_keeps_the_latest_within_its_cap():
    out = Output(cap=10)
    out.add("o", "abcdef")
    out.add("e", "ghijkl")
    out.add("o", "")
    chunks, end = out.take()
    assert end == 12 and chunks == [("o", 2, "cdef"), ("e", 6, "ghijkl")]
    out.add("o", "m")
    out.add("o", "n")
    assert out.take() == ([("o", 12, "mn")], 14)
    assert out.take() == ([], 14)


# ------------------------------------------------------------------ stopping


def test_kill_shell_stops_the_whole_group(ctx):
    mark = marker()
    shell_id = start(ctx, f"sleep {mark} & sleep {mark}")
    deadline = time.monotonic() + 5
    while not running(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(mark)
    out = run_tool("KillShell", {"shell_id": shell_id}, ctx)
    assert not out.is_error, out.content
    assert out.content == ('{"message":"Successfully killed shell: %s (sleep %s & sleep %s)","shell_id":"%s"}'
                           % (shell_id, mark, mark, shell_id))
    assert out.display == f"Shell {shell_id} killed"
    assert gone(mark, 6)
    text = output(ctx, shell_id)
    assert text.startswith("<status>killed</status>\n\n<exit_code>143</exit_code>") and "<note>" not in text, text
    again = run_tool("KillShell", {"shell_id": shell_id}, ctx)
    assert again.is_error and again.content == f"Shell {shell_id} is not running, so cannot be killed (status: killed)"


def test_a_finished_shell_cannot_be_killed(ctx):
    shell_id = start(ctx, "true")
    wait_status(ctx, shell_id, "completed")
    out = run_tool("KillShell", {"shell_id": shell_id}, ctx)
    assert out.is_error and out.content.endswith("(status: completed)")


def test_a_cancel_stops_the_sessions_shells_and_says_why(ctx, fake_redis):
    from workflows.commit.support import stop_shells
    from workflows.store.redis_store import Store

    mark = marker()
    shell_id = start(ctx, f"sleep {mark}")
    stop_shells(Store(fake_redis), SID, "the session was cancelled")
    text = wait_status(ctx, shell_id, "killed")
    assert "<note>It was stopped because the session was cancelled.</note>" in text
    assert gone(mark, 6)


def test_a_shell_whose_session_was_removed_is_stopped_and_never_written_again(ctx, fake_redis):
    mark = marker()
    shell_id = start(ctx, f"sleep {mark}")
    for key in fake_redis.scan_iter(match=keys.session_subkeys(SID)):
        fake_redis.delete(key)
    assert gone(mark, 6)
    time.sleep(0.5)
    assert not fake_redis.exists(keys.shell(SID, shell_id))


def test_a_shell_whose_host_lapsed_is_lost_with_its_output_so_far(ctx, fake_redis):
    mark = marker()
    shell_id = start(ctx, f"echo before; sleep {mark}")
    time.sleep(0.5)
    host = ShellStore(fake_redis).info(SID, shell_id)["host"]
    fake_redis.delete(keys.shell_host(host))  # what a dead worker's set does when it expires
    text = output(ctx, shell_id)
    assert text.startswith("<status>lost</status>") and "before" in text
    assert "<note>The worker running this shell (worker-a) stopped, so the shell is lost" in text
    assert gone(mark, 6), "its host stops a shell that was declared lost"
    assert output(ctx, shell_id).startswith("<status>lost</status>"), "lost stays lost"
    out = run_tool("KillShell", {"shell_id": shell_id}, ctx)
    assert out.is_error and out.content.endswith("(status: lost)")


def test_a_stopping_worker_stops_its_shells_and_records_them_lost(ctx):
    mark = marker()
    shell_id = start(ctx, f"sleep {mark}")
    shutdown()
    assert gone(mark, 6)
    assert output(ctx, shell_id).startswith("<status>lost</status>")


def test_the_guard_stops_the_command_when_its_worker_dies(tmp_path):
    mark = marker()
    worker = subprocess.Popen([sys.executable, "-c", (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-I', '-S', {str(GUARD)!r}, str(os.getpid()), '', '--', 'sleep', "
        f"{mark!r}], start_new_session=True)\n"
        "time.sleep(60)\n")])
    deadline = time.monotonic() + 5
    while not running(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(mark)
    worker.kill()
    worker.wait(5)
    assert gone(mark, timeout=5)


# ------------------------------------------------------------------ where background shells are not offered


def test_without_a_session_there_are_no_background_shells(tool_ctx):
    out = run_tool("Bash", {"command": "echo hi", "run_in_background": True}, tool_ctx)
    assert out.is_error and out.content.startswith("run_in_background is not available here")
    for tool, raw in (("BashOutput", {"bash_id": "abc"}), ("KillShell", {"shell_id": "abc"})):
        out = run_tool(tool, raw, tool_ctx)
        assert out.is_error and out.content.startswith("Background shells are not available here")


def test_a_cancelled_call_starts_nothing(make_ctx):
    ctx = make_ctx()
    ctx.cancel.set()
    out = run_tool("Bash", {"command": "echo hi", "run_in_background": True}, ctx)
    assert out.is_error and "before it started" in out.content


def test_host_lives_in_this_process_and_reports_its_worker(ctx, fake_redis):
    shell_id = start(ctx, "sleep 0.2")
    info = ShellStore(fake_redis).info(SID, shell_id)
    assert info["worker"] == "worker-a" and info["host"].startswith("worker-a~")
    assert info["command"] == "sleep 0.2" and info["description"] == "bg" and info["cwd"] == os.path.realpath(
        ctx.workspace)


def test_a_retried_call_gets_what_the_first_attempt_got(make_ctx, fake_redis):
    """A worker that died after a BashOutput or KillShell ran but before its result was recorded: the step runs
    again with the same tool call, which must not lose the output it consumed, nor fail on the kill it made."""
    first = make_ctx(tool_use_id="toolu_1")
    shell_id = start(first, "echo one; echo two")
    assert settle(fake_redis, shell_id) == "completed"
    text = output(first, shell_id)
    assert "one\ntwo" in text
    assert "one\ntwo" in output(first, shell_id), "the same call again reads the same output"
    assert "<stdout>" not in output(make_ctx(tool_use_id="toolu_2"), shell_id), "another call reads what is new"

    mark = marker()
    kill_call = make_ctx(tool_use_id="toolu_3")
    shell_id = start(kill_call, f"sleep {mark}")
    assert not run_tool("KillShell", {"shell_id": shell_id}, kill_call).is_error
    again = run_tool("KillShell", {"shell_id": shell_id}, kill_call)
    assert not again.is_error and again.content.startswith('{"message":"Successfully killed shell')
    other = run_tool("KillShell", {"shell_id": shell_id}, make_ctx(tool_use_id="toolu_4"))
    assert other.is_error and other.content.endswith("(status: killed)")


class _Stopping:
    """A session's shells whose kill ends in ``status`` (what the shell's host recorded by the time it looked)."""

    def __init__(self, status: str) -> None:
        self.status = status

    def kill(self, shell_id, cancel, call=""):
        return self.status, "sleep 9"


@pytest.mark.parametrize("tool, key", [("KillShell", "shell_id"), ("TaskStop", "task_id")])
@pytest.mark.parametrize("status, says", [
    ("running", "was asked to stop but has not stopped yet: its worker may be busy. Check it with BashOutput, or "
                "call {tool} again."),
    ("lost", "is lost: the worker running it stopped before it confirmed the kill"),
    ("completed", "ended on its own (completed) before it was stopped"),
])
def test_killshell_and_taskstop_stop_a_shell_alike(tmp_path, tool, key, status, says):
    ctx = ToolContext(workspace=tmp_path, shells=_Stopping(status))
    out = run_tool(tool, {key: "b1"}, ctx)
    assert out.is_error and f"Shell b1 {says.format(tool=tool)}" in out.content
    done = run_tool(tool, {key: "b1"}, ToolContext(workspace=tmp_path, shells=_Stopping("killed")))
    assert not done.is_error and "(sleep 9)" in done.content
