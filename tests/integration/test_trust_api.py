"""Workspace trust through the team server and schedules: a session a token starts applies the workspace's own
settings only when the token was made with --trust-project (for that workspace) or the server's user trusted it;
a schedule carries its maker's trust. The app in-process (FastAPI's TestClient), a real Redis."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from server.app import create_app
from tasks.app import configure
from workflows.engine import Engine
from workflows.store.api_tokens import TokenStore
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration


@pytest.fixture
def engine(real_redis, redis_server, settings):
    configure(redis_server.url)
    return Engine(Store(real_redis), settings)


@pytest.fixture
def client(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "server-home"))  # the server user's trust.json, not the machine's
    with TestClient(create_app(engine, aredis=None), base_url="http://server.test") as c:
        yield c


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_only_a_token_made_with_trust_project_trusts_its_workspace(engine, client, real_redis, ws):
    (ws / ".claude").mkdir(exist_ok=True)
    (ws / ".claude" / "settings.json").write_text(json.dumps({"sandbox": {"enabled": False},
                                                             "permissions": {"deny": ["Bash(rm:*)"]}}))
    tokens = TokenStore(real_redis)
    plain, _ = tokens.create("alice", workspaces=[str(ws)])
    trusting, _ = tokens.create("ci", workspaces=[str(ws)], trust_project=True)

    r = client.post("/api/sessions", json={"workspace": str(ws)}, headers=bearer(plain))
    assert r.status_code == 201, r.text
    rec = engine.store.get_session(r.json()["id"])
    assert rec.sandbox.enabled is True and rec.untrusted_workspace
    assert [x.rule for x in rec.rules.deny] == ["Bash(rm:*)"]
    assert any("is not trusted" in w and ".claude/settings.json (sandbox)" in w for w in r.json()["warnings"])

    r = client.post("/api/sessions", json={"workspace": str(ws)}, headers=bearer(trusting))
    assert r.status_code == 201, r.text
    rec = engine.store.get_session(r.json()["id"])
    assert rec.sandbox.enabled is False and not rec.untrusted_workspace


def test_a_schedule_carries_the_trust_of_whoever_made_it(engine, settings, real_redis, ws, tmp_path, monkeypatch):
    """`mainsail schedule add --trust-project` (``trust``), or a token made with it: the schedule keeps the hash
    trusted then; a token without it, or nobody, leaves it out."""
    from tasks import scheduling
    from workflows.schedules import Schedule
    from workflows.trust.gated import project_gated

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (ws / ".claude").mkdir(exist_ok=True)
    (ws / ".claude" / "settings.json").write_text(json.dumps({"env": {"FROM_PROJECT": "1"}}))
    digest = project_gated(ws).digest()
    tokens = TokenStore(real_redis)
    _, plain = tokens.create("alice", workspaces=[str(ws)])
    _, trusting = tokens.create("ci", workspaces=[str(ws)], trust_project=True)

    def add(name, **kw):
        return scheduling.add(engine, settings, Schedule(name=name, cron="0 3 * * *", workspace=str(ws),
                                                         prompt="report"), **kw)

    assert add("by-hand", trust="--trust-project").trusted_hash == digest
    assert add("by-ci", token=trusting).trusted_hash == digest
    assert add("by-alice", token=plain).trusted_hash is None
    assert add("by-nobody").trusted_hash is None
