"""The session flags interactive mode used to drop (issue 27): ``--system-prompt``, ``--append-system-prompt``,
``--max-turns``, ``--max-budget-usd``, ``--tools`` and ``--session-id`` now reach its session, as they reach
print mode's. The installed ``mainsail`` with no command and lines on its stdin (tests/e2e/test_interactive.py's
way), a real worker, real Redis and the fake Messages API, which records each request."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.test_interactive import api, interactive, request_for  # noqa: F401  (api: a fixture)
from workflows.models import ResultEntry

pytestmark = pytest.mark.e2e


def system_text(body: dict) -> str:
    system = body.get("system") or ""
    return system if isinstance(system, str) else "".join(b.get("text", "") for b in system)


def results(cluster, sid: str) -> list[ResultEntry]:
    return [e for e in cluster.store.entries(sid) if isinstance(e, ResultEntry)]


def test_system_prompt_replaces_the_default_one(cluster, workspace, api):
    interactive(cluster, workspace, "Hello there\n/exit\n", "--system-prompt", "You are a pirate.", "--no-memory")
    system = system_text(request_for(api, "Hello there"))
    assert "You are a pirate." in system
    assert cluster.store.get_session(cluster.session_id()).custom_system_prompt == "You are a pirate."


def test_append_system_prompt_is_added_to_the_default_one(cluster, workspace, api):
    interactive(cluster, workspace, "Hello there\n/exit\n", "--append-system-prompt", "Always answer in haiku.",
                "--no-memory")
    system = system_text(request_for(api, "Hello there"))
    assert "Always answer in haiku." in system and system.startswith("You are Mainsail")


def test_max_turns_stops_the_run_after_that_many_turns(cluster, workspace, api):
    stdout, _ = interactive(cluster, workspace, "Fix calc.py\n/exit\n", "--max-turns", "1",
                            "--permission-mode", "bypassPermissions", "--no-memory")
    sid = cluster.session_id()
    assert [r.subtype for r in results(cluster, sid)] == ["error_max_turns"]
    assert cluster.store.get_session(sid).max_turns == 1
    assert "turn limit (1)" in stdout


def test_max_budget_usd_stops_the_run_once_spent(cluster, workspace, api):
    interactive(cluster, workspace, "Fix calc.py\n/exit\n", "--max-budget-usd", "0.000001",
                "--permission-mode", "bypassPermissions", "--no-memory")
    sid = cluster.session_id()
    assert [r.subtype for r in results(cluster, sid)] == ["error_max_budget_usd"]
    assert cluster.store.get_session(sid).max_budget_usd == 0.000001


def test_tools_limits_the_tools_offered_to_the_model(cluster, workspace, api):
    interactive(cluster, workspace, "Hello there\n/exit\n", "--tools", "Read", "--no-memory")
    assert [t["name"] for t in request_for(api, "Hello there")["tools"]] == ["Read"]
    assert cluster.store.get_session(cluster.session_id()).tools == ["Read"]


def test_session_id_names_the_new_session(cluster, workspace, api):
    sid = str(uuid.uuid4())
    stdout, _ = interactive(cluster, workspace, "Hello there\n/exit\n", "--session-id", sid, "--no-memory")
    assert cluster.session_id() == sid
    assert stdout.startswith(f"New session {sid[:8]} ")


def test_a_resumed_session_takes_the_limits_too(cluster, workspace, api):
    interactive(cluster, workspace, "Hello there\n/exit\n", "--no-memory")
    sid = cluster.session_id()
    interactive(cluster, workspace, "Fix calc.py\n/exit\n", "--continue", "--max-turns", "1",
                "--permission-mode", "bypassPermissions", "--no-memory")
    assert [r.subtype for r in results(cluster, sid)] == ["success", "error_max_turns"]
