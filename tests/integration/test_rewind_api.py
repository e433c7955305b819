"""/rewind over the HTTP API: the list of messages and the rewind itself. The app in-process (FastAPI's
TestClient), a real Redis, the session's steps run inline through the real SDK."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from server.app import create_app
from tasks.app import configure
from tests.inline import Inline, scripted_model
from tests.unit.test_rewind import script
from workflows.engine import Engine
from workflows.models.options import SessionOptions
from workflows.store.api_tokens import TokenStore
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration


@pytest.fixture
def engine(real_redis, redis_server, settings):
    configure(redis_server.url)
    return Engine(Store(real_redis), settings)


def test_the_api_lists_the_messages_and_rewinds_code_and_conversation(engine, real_redis, ws, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "server-home"))
    rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(script(ws)), permission_mode="bypassPermissions", no_memory=True))
    inline = Inline(engine)
    for prompt in ("one", "two"):
        inline.dispatch(engine.submit(rec.id, prompt))
        inline.drain()
    admin, _ = TokenStore(real_redis).create("admin")
    reader, _ = TokenStore(real_redis).create("viewer", read_only=True)
    auth = {"Authorization": f"Bearer {admin}"}
    with TestClient(create_app(engine, aredis=None), base_url="http://server.test") as client:
        listed = client.get(f"/api/sessions/{rec.id[:8]}/rewind", headers=auth)
        assert listed.status_code == 200, listed.text
        assert [(p["number"], p["message"], p["files"]) for p in listed.json()] == [(1, "one", 1), (2, "two", 2)]
        assert client.post(f"/api/sessions/{rec.id}/rewind", json={"to": 3}, headers=auth).status_code == 409
        both_off = client.post(f"/api/sessions/{rec.id}/rewind", json={"to": 1, "code": False,
                                                                       "conversation": False}, headers=auth)
        assert both_off.status_code == 422
        assert client.post(f"/api/sessions/{rec.id}/rewind", json={"to": 2},
                           headers={"Authorization": f"Bearer {reader}"}).status_code == 403
        done = client.post(f"/api/sessions/{rec.id}/rewind", json={"to": 2}, headers=auth)
        assert done.status_code == 200, done.text
        body = done.json()
        assert body["restored"] == [str(ws / "a.txt")] and body["deleted"] == [str(ws / "b.txt")]
        assert body["prompt"] == "two" and body["state"] == "idle" and "not tracked" in body["message"]
        assert (ws / "a.txt").read_text() == "v1\n" and not (ws / "b.txt").exists()
        assert [p["message"] for p in client.get(f"/api/sessions/{rec.id}/rewind", headers=auth).json()] == ["one"]

