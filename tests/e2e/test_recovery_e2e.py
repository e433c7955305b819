"""Recovery as a user meets it: the installed CLI, real worker processes, a private Redis, the real SDK
against the fake Messages API. A CLI is never stranded: not by a killed worker, not by another CLI that
leaves; it says what it waits for; it needs no API key when the workers have one; it leaves at once."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models import ResultEntry, SystemEntry, UserEntry

pytestmark = pytest.mark.e2e


def bash_then_answer(body: dict) -> Turn:
    """One Bash call (its duration in the prompt: "sleep N"), then the answer."""
    if any(m["role"] == "assistant" for m in body["messages"]):
        return Turn(text="Done: it ran.")
    prompt = body["messages"][0]["content"]
    prompt = prompt if isinstance(prompt, str) else " ".join(b.get("text", "") for b in prompt)
    pause = prompt.split("sleep ")[-1].split()[0] if "sleep " in prompt else "0"
    wait = f"sleep {pause}" if "until go" not in prompt else "while [ ! -e go ]; do sleep 0.05; done"
    return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={
        "command": f"echo ran >> runs.txt; {wait}"})])


def run_p(cluster, cwd: Path, prompt: str, env: dict, **popen) -> subprocess.Popen:
    cwd.mkdir(exist_ok=True)
    return subprocess.Popen([MAINSAIL, "run", "-p", "--no-memory", "--permission-mode", "bypassPermissions", prompt],
                            cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=popen.pop("stderr", subprocess.PIPE),
                            stdin=subprocess.DEVNULL, **popen)


def embedded(cluster, **extra) -> dict:
    return dict(cluster.env, MAINSAIL_EMBEDDED_WORKER="true", **extra)


def test_a_run_right_after_its_worker_was_killed_answers_through_a_worker_of_its_own(cluster, tmp_path):
    with FakeMessagesServer(bash_then_answer) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.kill(cluster.start_worker())  # its registration still looks alive for a couple of seconds
        t0 = time.monotonic()
        proc = run_p(cluster, tmp_path / "ws", "run it", embedded(cluster))
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out == "Done: it ran.\n"
        assert time.monotonic() - t0 < 30
        assert (tmp_path / "ws" / "runs.txt").read_text() == "ran\n"


def test_eight_runs_at_once_with_no_worker_all_finish(cluster, tmp_path):
    """Each CLI leans on another's in-process worker until that CLI leaves; none is stranded."""
    with FakeMessagesServer(bash_then_answer) as api:
        env = embedded(cluster, ANTHROPIC_BASE_URL=api.url)
        procs = []
        for i in range(8):
            procs.append(run_p(cluster, tmp_path / f"ws{i}", "run it with sleep 1", env))
            time.sleep(1.2)
        for i, proc in enumerate(procs):
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"run {i}: {err}"
            assert out == "Done: it ran.\n"
            assert (tmp_path / f"ws{i}" / "runs.txt").read_text() == "ran\n", f"run {i}'s command ran twice"


def test_a_cli_that_leaves_hands_over_the_step_it_runs_for_another(cluster, tmp_path):
    with FakeMessagesServer(bash_then_answer) as api:
        env = embedded(cluster, ANTHROPIC_BASE_URL=api.url)
        a, b = tmp_path / "a", tmp_path / "b"
        # Each command runs until the test creates `go` in its workspace: events, not durations, set the order.
        first = run_p(cluster, a, "run it until go", env)
        err_lines: list[str] = []
        reader = threading.Thread(target=lambda: err_lines.extend(iter(first.stderr.readline, "")), daemon=True)
        reader.start()
        wait_for(lambda: cluster.store.live_queues(), 30, what="the first CLI's worker")
        second = run_p(cluster, b, "run it until go", env)  # leans on the first one's worker
        wait_for(lambda: (b / "runs.txt").exists(), 60, what="the second CLI's command to run")
        (a / "go").touch()  # the first one's turn ends; its CLI leaves, with the second's command on its worker
        wait_for(lambda: any("Finishing 1 step on this command's worker before leaving" in line
                             for line in err_lines), 60, what="the first CLI to say it finishes the second's step")
        assert second.poll() is None and first.poll() is None, "a CLI left before the second one's command ended"
        (b / "go").touch()
        first.wait(timeout=60)
        reader.join(timeout=10)
        assert first.returncode == 0, "".join(err_lines)
        out_b, err_b = second.communicate(timeout=60)
        assert second.returncode == 0, err_b
        assert out_b == "Done: it ran.\n" and (tmp_path / "b" / "runs.txt").read_text() == "ran\n"


def test_a_waiting_cli_says_what_for_then_goes_on_when_a_worker_comes(cluster, tmp_path):
    with FakeMessagesServer(bash_then_answer) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        err_file = tmp_path / "stderr"
        with open(err_file, "w") as err:
            proc = run_p(cluster, tmp_path / "ws", "run it", cluster.env, stderr=err)
            wait_for(lambda: "waiting for a worker on queue model" in err_file.read_text(), 30,
                     what="the waiting note")
            assert "mainsail worker -Q model" in err_file.read_text()
            cluster.start_worker()
            out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, err_file.read_text()
        assert out == "Done: it ran.\n"


def test_a_cli_without_the_api_key_runs_on_workers_that_have_it(cluster, tmp_path):
    with FakeMessagesServer(bash_then_answer) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()  # ANTHROPIC_API_KEY=test-key in its environment
        cli_env = {k: v for k, v in cluster.env.items() if not k.startswith("ANTHROPIC_")}
        proc = run_p(cluster, tmp_path / "ws", "run it", cli_env)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out == "Done: it ran.\n"
        assert api.request_headers[0]["headers"].get("authorization") == "Bearer test-key"


def test_refusals_leave_no_session_behind(cluster, tmp_path):
    no_creds = {k: v for k, v in cluster.env.items() if not k.startswith("ANTHROPIC_")}
    ws = tmp_path / "ws"
    ws.mkdir()
    # No worker anywhere: this CLI would call the model itself, and it has no key.
    out = subprocess.run([MAINSAIL, "run", "-p", "hello"], cwd=ws, env=dict(no_creds, MAINSAIL_EMBEDDED_WORKER="true"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "no worker is running" in out.stderr and "ANTHROPIC_API_KEY" in out.stderr
    # Workers that cannot call the model either: named, and told where the key goes.
    worker = cluster.start_worker(env=no_creds)
    out = subprocess.run([MAINSAIL, "run", "-p", "hello"], cwd=ws, env=cluster.env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1, out.stdout
    assert f"mainsail-{worker.pid}@" in out.stderr and "in their environment" in out.stderr
    assert "Traceback" not in out.stderr
    assert cluster.store.session_ids() == []


def test_leaving_with_its_own_worker_takes_no_time(cluster, tmp_path):
    with FakeMessagesServer(bash_then_answer) as api:
        proc = run_p(cluster, tmp_path / "ws", "run it", embedded(cluster, ANTHROPIC_BASE_URL=api.url))
        out, err = proc.communicate(timeout=60)
        exited = time.time()
        assert proc.returncode == 0, err
    (sid,) = cluster.store.session_ids()
    last_id = cluster.store.r.xrevrange(f"mainsail:session:{sid}:log", count=1)[0][0].decode()
    answered = int(last_id.split("-")[0]) / 1000
    assert exited - answered < 1.5, f"the CLI took {exited - answered:.1f}s to leave after the answer"


def test_a_dead_workers_command_is_reported_in_seconds_not_after_its_lease(cluster, tmp_path):
    with FakeMessagesServer(bash_then_answer) as api:
        # A lease of an hour: the step can only come back through the dead worker's take-back (the warning below).
        cluster.env.update(ANTHROPIC_BASE_URL=api.url, MAINSAIL_LEASE_SECONDS="3600")
        first = cluster.start_worker()
        cluster.start_worker()
        ws = tmp_path / "ws"
        proc = run_p(cluster, ws, "run it with sleep 30", cluster.env)
        wait_for(lambda: (ws / "runs.txt").exists(), 30, what="the command to start")
        (sid,) = cluster.store.session_ids()
        running = [s for s in cluster.store.steps(sid) if s.status.value == "running"]
        victim = first if any(f":{first.pid}:" in s.owner for s in running) else cluster.procs[1]
        cluster.kill(victim)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    entries = cluster.store.entries(sid)
    (warning,) = [e.content for e in entries if isinstance(e, SystemEntry) and e.subtype == "warning"]
    assert " died while Tool step " in warning and "its outcome is unknown, not re-run." in warning
    result = [e for e in entries if isinstance(e, UserEntry) and e.origin == "tool_result"][-1]
    assert "outcome is unknown" in result.message.blocks()[0].text
    assert (ws / "runs.txt").read_text() == "ran\n"
    assert [e.subtype for e in entries if isinstance(e, ResultEntry)] == ["success"]
