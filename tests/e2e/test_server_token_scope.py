"""Issue 25, cause 6, end to end: a workspace-scoped API token may not approve its session's write of
``.claude/settings.json`` (only an admin token may), nor a command reaching another team's workspace;
a real ``mainsail serve``, real workers, real Redis, the real SDK against the fake Messages API."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.e2e.serving import Serve
from tests.fakeapi import FakeMessagesServer, last_prompt
from workflows.permissions.sandbox import sandbox_status

pytestmark = pytest.mark.e2e

SANDBOX_OFF = json.dumps({"sandbox": {"enabled": False}})
STEAL = "cp ../b/secret.txt stolen.txt && touch ../b/planted.txt"
PEEK = "python3 -c \"print(open('../b/secret.txt').read())\""
SECRET = "team b's secret"


def model(body: dict) -> Turn:
    """The fake model: the prompt's first word says which attack to try."""
    prompt = last_prompt(body)
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return Turn(text=f"Done with {prompt}.")
    if prompt.startswith("settings"):
        return Turn(text="Turning the sandbox off.", tool_uses=[ToolUse(
            name="Write", input={"file_path": ".claude/settings.json", "content": SANDBOX_OFF})])
    if prompt.startswith("steal"):
        return Turn(text="Copying.", tool_uses=[ToolUse(name="Bash", input={"command": STEAL})])
    if prompt.startswith("peek"):
        return Turn(text="Peeking.", tool_uses=[ToolUse(name="Bash", input={"command": PEEK})])
    return Turn(text=f"Answer to: {prompt}")


@pytest.fixture
def teams(cluster, tmp_path):
    """(server, fake API, a, b, team-a's token, boss's token): team-a scoped to a, boss an admin."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    (b / ".claude").mkdir(parents=True)
    (b / "secret.txt").write_text(SECRET + "\n")
    with FakeMessagesServer(model) as fake:
        cluster.env["ANTHROPIC_BASE_URL"] = fake.url
        cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"
        cluster.start_worker()
        made = {}
        for name, extra in (("team-a", ["--workspace", str(a)]), ("team-b", ["--workspace", str(b)]),
                            ("boss", ["--admin"])):
            out = cluster.mainsail("token", "create", "--name", name, *extra, cwd=tmp_path)
            assert out.returncode == 0, out.stderr
            made[name] = out.stdout.split()[0]
        yield Serve(cluster).start(), fake, a, b, made["team-a"], made["boss"]


def wait_state(api: httpx.Client, sid: str, state: str) -> dict:
    return wait_for(lambda: (rec := api.get(f"/api/sessions/{sid}").json())["state"] == state and rec,
                    60, 0.2, f"session {sid[:8]} to be {state}")


def start(api: httpx.Client, ws, prompt: str) -> str:
    resp = api.post("/api/sessions", json={"workspace": str(ws), "prompt": prompt})
    assert resp.status_code == 201, resp.text
    sid = resp.json()["id"]
    wait_state(api, sid, "awaiting_permission")
    return sid


def snapshot(d) -> dict:
    return {str(p): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_token_list_shows_the_admin_scope(teams, cluster, tmp_path):
    listed = cluster.mainsail("token", "list", cwd=tmp_path)
    assert listed.returncode == 0 and "ADMIN" in listed.stdout
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:]}
    assert rows["boss"][3] == "yes" and rows["team-a"][3] == "no"
    updated = cluster.mainsail("token", "update", "team-b", "--admin", cwd=tmp_path)
    assert updated.returncode == 0 and "admin (may approve protected writes)" in updated.stdout
    bare = cluster.mainsail("token", "update", "team-b", cwd=tmp_path)
    assert bare.returncode == 2 and "--admin/--no-admin" in bare.stderr


def test_a_scoped_tokens_approval_of_a_settings_write_is_refused_and_an_admins_goes_through(teams):
    srv, fake, a, _, team_a, boss = teams
    settings = a / ".claude" / "settings.json"
    with srv.client(team_a) as mine, srv.client(boss) as admin:
        sid = start(mine, a, "settings please")
        for body in ({}, {"always": True}):
            refused = mine.post(f"/api/sessions/{sid}/approve", json=body)
            assert refused.status_code == 403, refused.text
            detail = refused.json()["detail"]
            assert "'team-a'" in detail and "admin scope" in detail and str(settings) in detail
            assert "mainsail token update team-a --admin" in detail
        # The console's inbox buttons post the same request with the cookie: the same answer.
        with srv.client(cookies={"mainsail_token": team_a}) as console:
            refused = console.post(f"/api/sessions/{sid}/approve", json={}, headers={"X-Mainsail-Console": "1"})
            assert refused.status_code == 403 and "admin scope" in refused.json()["detail"]
        assert not settings.exists()
        assert [p["session_id"] for p in mine.get("/api/approvals").json()] == [sid]  # still waiting

        approved = admin.post(f"/api/sessions/{sid}/approve", json={})
        assert approved.status_code == 200 and approved.json()["decided_by"] == "token:boss"
        wait_state(mine, sid, "idle")
        assert settings.read_text() == SANDBOX_OFF

        # The next session of the workspace: the sandbox-off setting the admin let in is not applied (team-a's
        # token was not made with --trust-project and the server's user never trusted the workspace:
        # workflows/trust), so a program runs sandboxed, hiding team b: team-a may approve it, and it reads
        # nothing of b. Without a usable sandbox the program is not contained, and the approval is refused.
        sid = start(mine, a, "peek at it")
        peek = mine.post(f"/api/sessions/{sid}/approve", json={})
        if sandbox_status().available:
            assert peek.status_code == 200, peek.text
            wait_state(mine, sid, "idle")
        else:
            assert peek.status_code == 403 and "team-a" in peek.json()["detail"]
    assert SECRET not in json.dumps(fake.requests)


def test_a_scoped_token_may_not_start_a_session_whose_rules_allow_protected_writes(teams):
    srv, _, a, _, team_a, boss = teams
    body = {"workspace": str(a), "allowed_tools": ["Edit"]}  # (a bare Edit rule reaches settings files outside)
    with srv.client(team_a) as mine, srv.client(boss) as admin:
        refused = mine.post("/api/sessions", json=body)
        assert refused.status_code == 403, refused.text
        assert "admin scope" in refused.json()["detail"] and "Edit" in refused.json()["detail"]
        assert mine.get("/api/sessions").json() == []
        assert admin.post("/api/sessions", json=body).status_code == 201


def test_a_denial_needs_no_scope(teams):
    srv, _, a, _, team_a, _ = teams
    with srv.client(team_a) as mine:
        sid = start(mine, a, "settings please")
        denied = mine.post(f"/api/sessions/{sid}/deny", json={"message": "no"})
        assert denied.status_code == 200 and denied.json()["approved"] is False
        wait_state(mine, sid, "idle")
        assert not (a / ".claude").exists()


def test_the_cause_6_attack_fails_end_to_end(teams):
    """Turn the sandbox off, then copy another team's file out and plant one in its workspace."""
    srv, fake, a, b, team_a, _ = teams
    before = snapshot(b)
    with srv.client(team_a) as mine:
        sid = start(mine, a, "settings please")
        assert mine.post(f"/api/sessions/{sid}/approve", json={}).status_code == 403
        assert mine.post(f"/api/sessions/{sid}/deny", json={}).status_code == 200
        wait_state(mine, sid, "idle")

        sid = start(mine, a, "steal it")
        refused = mine.post(f"/api/sessions/{sid}/approve", json={})
        assert refused.status_code == 403, refused.text
        assert "outside the token's workspaces" in refused.json()["detail"] and str(b) in refused.json()["detail"]
        # A program: it runs in a sandbox that keeps every protected name read-only and hides b (the session
        # was started by team-a); refused where no sandbox can contain it.
        sid = start(mine, a, "peek at it")
        peek = mine.post(f"/api/sessions/{sid}/approve", json={})
        assert peek.status_code in (200, 403), peek.text
        if peek.status_code == 403:
            assert "admin scope" in peek.json()["detail"]
        else:
            wait_state(mine, sid, "idle")
    assert snapshot(b) == before and not (a / "stolen.txt").exists() and not (a / ".claude").exists()
    assert SECRET not in json.dumps(fake.requests)


@pytest.mark.skipif(not sandbox_status().available, reason="bwrap is not usable here")
def test_a_scoped_tokens_session_hides_the_other_workspaces_even_from_an_admins_approval(teams, cluster):
    srv, fake, a, b, team_a, boss = teams
    with srv.client(team_a) as mine, srv.client(boss) as admin:
        sid = start(mine, a, "peek at it")
        assert cluster.store.get_session(sid).sandbox.deny_read == [os.path.realpath(b)]
        assert admin.post(f"/api/sessions/{sid}/approve", json={}).status_code == 200
        wait_state(mine, sid, "idle")
    results = [b for r in fake.requests for m in r["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert results and SECRET not in json.dumps(results)
