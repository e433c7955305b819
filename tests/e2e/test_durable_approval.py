"""Durable approval end to end: the session waits holding no worker, survives a worker
restart, and is answered from other processes (approve, deny, timeout, always, the
attached prompt)."""

from __future__ import annotations

import json
import subprocess

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models import PermissionDecisionEntry, PermissionRequestEntry

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(shared_cluster):
    """The module's one worker, shared by its tests (tests/e2e/shared_worker.py)."""
    return shared_cluster

COMMAND = "echo approved > approved.txt"


def script(times: int = 1) -> Script:
    turns = [Turn(text="Reading first.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})])]
    turns += [Turn(text="Now the command.", tool_uses=[ToolUse(name="Bash", input={"command": COMMAND})])] * times
    turns.append(Turn(text="Finished."))
    return Script(turns=turns)


def entries(cluster, kind):
    return [e for e in cluster.store.entries(cluster.session_id()) if isinstance(e, kind)]


def test_approve_from_another_process_after_the_worker_was_replaced(private_cluster, workspace):
    cluster = private_cluster  # its worker is killed and replaced
    with FakeMessagesServer(script()) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        first = cluster.start_worker()
        run = cluster.mainsail("run", "-p", "--approval-timeout", "600", "Run the command", cwd=workspace,
                               background=True)
        sid = cluster.wait_state("awaiting_permission")
        cluster.kill(first)
        cluster.start_worker()
        pending = cluster.mainsail("pending", cwd=workspace)
        assert pending.returncode == 0
        (req,) = entries(cluster, PermissionRequestEntry)
        assert sid[:8] in pending.stdout and req.request_id in pending.stdout and COMMAND in pending.stdout
        assert not (workspace / "approved.txt").exists()
        out = cluster.mainsail("approve", sid[:8], cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert f"Approved Bash: {COMMAND}" in out.stdout
        stdout, stderr = run.communicate(timeout=60)
        assert run.returncode == 0, stdout + stderr
        assert stdout == "Finished.\n"
        assert "Waiting for approval of Bash" in stderr and f"mainsail approve {sid[:8]}" in stderr
        assert (workspace / "approved.txt").read_text() == "approved\n"
        again = cluster.mainsail("approve", sid[:8], req.request_id, cwd=workspace)
        assert again.returncode == 1 and "was already approved by user" in again.stderr
        assert cluster.mainsail("pending", cwd=workspace).stdout.strip() == "No pending permission requests."


def test_deny_with_a_message_reaches_the_model(cluster, workspace):
    with cluster.serving(script()) as server:
        run = cluster.mainsail("run", "-p", "--approval-timeout", "600", "Run the command", cwd=workspace,
                               background=True)
        sid = cluster.wait_state("awaiting_permission")
        out = cluster.mainsail("deny", sid[:6], "--message", "not on this machine", cwd=workspace)
        assert out.returncode == 0, out.stderr
        stdout, stderr = run.communicate(timeout=60)
        assert run.returncode == 0, stderr
        assert "Denied: Bash" in stderr  # the headless result lists the denials
        assert not (workspace / "approved.txt").exists()
        assert "not on this machine" in json.dumps(server.requests[-1]["messages"][-1])
        (decision,) = entries(cluster, PermissionDecisionEntry)
        assert (decision.decision, decision.decided_by, decision.message) == ("deny", "user", "not on this machine")


def test_the_approval_timeout_denies_on_its_own(cluster, workspace):
    with cluster.serving(script()) as server:
        out = cluster.mainsail("run", "-p", "--approval-timeout", "1", "Run the command", cwd=workspace,
                               timeout=60)
        assert out.returncode == 0, out.stderr
        (decision,) = entries(cluster, PermissionDecisionEntry)
        assert (decision.decision, decision.decided_by) == ("deny", "timeout")
        assert "nobody answered within 1 seconds" in json.dumps(server.requests[-1]["messages"][-1])


def test_always_stops_later_identical_requests_from_asking(cluster, workspace):
    with cluster.serving(script(times=3)) as server:
        run = cluster.mainsail("run", "-p", "--approval-timeout", "600", "Run it three times", cwd=workspace,
                               background=True)
        sid = cluster.wait_state("awaiting_permission")
        out = cluster.mainsail("approve", sid[:8], "--always", cwd=workspace)
        assert out.returncode == 0 and "added the session rule Bash(echo approved:*)" in out.stdout
        stdout, stderr = run.communicate(timeout=60)
        assert run.returncode == 0, stderr
        assert len(entries(cluster, PermissionRequestEntry)) == 1
        assert cluster.store.get_session(sid).rules.allow[0].rule == "Bash(echo approved:*)"


def test_the_attached_prompt_takes_y_and_a_typed_message_denies(cluster, workspace):
    with cluster.serving(script(times=2)) as server:
        run = cluster.mainsail("run", "Run it twice", cwd=workspace, background=True, stdin=subprocess.PIPE)
        cluster.wait_state("awaiting_permission")
        run.stdin.write("y\n")
        run.stdin.flush()
        wait_for(lambda: len(entries(cluster, PermissionRequestEntry)) == 2, 30, what="the second request")
        run.stdin.write("please use printf instead\n")
        run.stdin.flush()
        stdout, stderr = run.communicate(timeout=60)
        assert run.returncode == 0, stdout + stderr
        assert f"⚡ Bash: {COMMAND}\n  (a)lways adds: Bash(echo approved:*)\n  (y)es / (n)o / (a)lways" in stderr
        decisions = entries(cluster, PermissionDecisionEntry)
        assert [(d.decision, d.message) for d in decisions] == [("allow", None),
                                                                 ("deny", "please use printf instead")]
        assert "please use printf instead" in json.dumps(server.requests[-1]["messages"][-1])
        assert "approved by user" in stdout and "denied by user" in stdout


def test_a_broken_settings_file_stops_the_session_before_it_starts(cluster, workspace):
    (workspace / ".mainsail").mkdir()
    (workspace / ".mainsail" / "settings.json").write_text('{\n  "permissions": {\n    "allow": ["Bash(npm"]\n  }\n}\n')
    out = cluster.mainsail("run", "hello", cwd=workspace)
    assert out.returncode == 1
    assert "Invalid permission rule 'Bash(npm'" in out.stderr and "settings.json, line 3" in out.stderr
    assert cluster.store.session_ids() == []
