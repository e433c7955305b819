"""Approvals that are not blind (issue 26, items 10 and 11), end to end with a real worker: the
attached prompt and ``mainsail pending`` show an edit's diff, and a call that offers no "always"
lists no ``(a)lways``, asks again when it is typed, and ``approve --always`` refuses it."""

from __future__ import annotations

import subprocess

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models import PermissionDecisionEntry, PermissionRequestEntry

pytestmark = pytest.mark.e2e

EDIT = {"file_path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"}
UNRULY = "echo $(date) > when.txt"  # a substitution: no rule can cover it, so no "always"


def entries(cluster, kind):
    return [e for e in cluster.store.entries(cluster.session_id()) if isinstance(e, kind)]


def test_the_prompt_and_pending_show_an_edits_diff(cluster, workspace):
    script = Script(turns=[Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
                           Turn(tool_uses=[ToolUse(name="Edit", input=EDIT)]), Turn(text="Fixed.")])
    with FakeMessagesServer(script) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        run = cluster.mainsail("run", "Fix it", cwd=workspace, background=True, stdin=subprocess.PIPE)
        sid = cluster.wait_state("awaiting_permission")
        pending = cluster.mainsail("pending", cwd=workspace)
        assert "    -    return a - b\n    +    return a + b" in pending.stdout, pending.stdout
        assert f"mainsail approve {sid[:8]} " in pending.stdout and "--always" in pending.stdout
        run.stdin.write("y\n")
        run.stdin.flush()
        stdout, stderr = run.communicate(timeout=90)
        assert run.returncode == 0, stdout + stderr
        calc = (workspace / "calc.py").resolve()
        assert f"⚡ Edit: calc.py\n  (a)lways adds: Edit\n    --- a{calc}\n    +++ b{calc}\n    @@ " in stderr, stderr
        assert "    -    return a - b\n    +    return a + b\n" in stderr
        assert "(y)es / (n)o / (a)lways" in stderr
        assert "a + b" in (workspace / "calc.py").read_text()


def test_a_call_without_always_lists_no_always_and_refuses_one(cluster, workspace):
    script = Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={"command": UNRULY})]), Turn(text="Ran.")])
    with FakeMessagesServer(script) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        run = cluster.mainsail("run", "Note the time", cwd=workspace, background=True, stdin=subprocess.PIPE)
        sid = cluster.wait_state("awaiting_permission")
        refused = cluster.mainsail("approve", sid[:8], "--always", cwd=workspace)
        assert refused.returncode == 1 and 'does not offer "always"' in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
        pending = cluster.mainsail("pending", cwd=workspace)
        assert "--always" not in pending.stdout and f"mainsail approve {sid[:8]}" in pending.stdout
        run.stdin.write("a\n")  # not offered: asked again, nothing decided
        run.stdin.flush()
        wait_for(lambda: cluster.store.get_session(sid).pending_requests(), 10, what="the request still pending")
        run.stdin.write("y\n")
        run.stdin.flush()
        stdout, stderr = run.communicate(timeout=90)
        assert run.returncode == 0, stdout + stderr
        assert "(a)lways is not offered: no rule can cover this call safely" in stderr
        assert "  (y)es / (n)o " in stderr and "(y)es / (n)o / (a)lways" not in stderr, stderr
        assert "(a)lways is not offered for this call: answer y or n" in stderr
        (decision,) = entries(cluster, PermissionDecisionEntry)
        assert (decision.decision, decision.rules_added) == ("allow", [])
        assert len(entries(cluster, PermissionRequestEntry)) == 1
        assert (workspace / "when.txt").exists()


def test_the_interactive_prompt_shows_the_diff_and_offers_no_always_where_none_is(cluster, workspace):
    script = Script(turns=[Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
                           Turn(tool_uses=[ToolUse(name="Edit", input=EDIT)]),
                           Turn(tool_uses=[ToolUse(name="Bash", input={"command": UNRULY})]), Turn(text="Both done.")])
    with FakeMessagesServer(script) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        proc = cluster.mainsail(cwd=workspace, background=True, stdin=subprocess.PIPE)  # interactive mode
        stdout, stderr = proc.communicate("Fix it\ny\na\ny\n/exit\n", timeout=120)
        assert proc.returncode == 0 and "Traceback" not in stdout + stderr, stdout + stderr
        calc = (workspace / "calc.py").resolve()
        assert f"⚡ Edit: calc.py\n  (a)lways adds: Edit\n    --- a{calc}\n    +++ b{calc}\n" in stderr, stderr
        assert "    -    return a - b\n    +    return a + b\n" in stderr
        assert f"⚡ Bash: {UNRULY}\n  (a)lways is not offered" in stderr
        assert "(a)lways is not offered for this call: answer y or n" in stderr
        assert [(d.decision, d.rules_added) for d in entries(cluster, PermissionDecisionEntry)] == [
            ("allow", []), ("allow", [])]
        assert "Both done." in stdout and (workspace / "when.txt").exists()
