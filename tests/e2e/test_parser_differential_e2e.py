"""Issue 25, cause 1, through the installed CLI and a real worker: `ls\\<newline>#;touch PWNED`.

Bash removes the backslash-newline before it reads words, so the line is
`ls#;touch PWNED`; the checker's grammar once read the `#` as a comment and
approved `ls` in every mode. A scripted model sends it in plan mode, and under a
deny rule in bypass mode: no PWNED file may appear, and each call is refused.
"""

from __future__ import annotations

import subprocess

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.fakeapi import FakeMessagesServer
from workflows.models import PermissionDecisionEntry

pytestmark = pytest.mark.e2e

HIDDEN = ["ls\\\n#;touch PWNED", "ls -la\\\n#&&touch PWNED2", "l\\\ns\\\n#|touch PWNED3",
          "t\\\nouch PWNED4"]


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "a.txt").write_text("a\n")
    return ws


def _session(cluster, ws, *flags: str) -> tuple[list[PermissionDecisionEntry], list[dict]]:
    calls = [ToolUse(name="Bash", input={"command": c}) for c in HIDDEN]
    script = Script(turns=[Turn(tool_uses=calls), Turn(text="Done trying.")], extract=[Turn(text="Nothing.")])
    with FakeMessagesServer(script) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        out = cluster.mainsail("run", "-p", *flags, "Try it", cwd=ws, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Done trying." in out.stdout
        requests = server.requests
    decisions = [e for e in cluster.store.entries(cluster.session_id()) if isinstance(e, PermissionDecisionEntry)]
    results = [b for m in requests[1]["messages"][2:] for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    return decisions, results


def test_plan_mode_refuses_a_command_hidden_behind_a_line_continuation(cluster, ws):
    decisions, results = _session(cluster, ws, "--permission-mode", "plan")
    assert not list(ws.glob("PWNED*")), "a hidden command ran"
    assert [d.decision for d in decisions] == ["deny"] * len(HIDDEN)
    assert len(results) == len(HIDDEN) and all(r.get("is_error") for r in results)


def test_a_deny_rule_sees_the_command_hidden_behind_a_line_continuation(cluster, ws):
    decisions, results = _session(cluster, ws, "--permission-mode", "bypassPermissions",
                                  "--disallowedTools", "Bash(touch:*)")
    assert not list(ws.glob("PWNED*")), "a hidden command ran"
    assert [d.decision for d in decisions] == ["deny"] * len(HIDDEN)
    assert all("Bash(touch:*)" in r["content"] for r in results), results
