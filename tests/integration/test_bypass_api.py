"""The team server's bypass scope on the paths a review found open: approving in a bypassPermissions
session, running a --continue schedule whose session is in bypass, enabling a bypass schedule while the
workspace's settings are broken. The app in-process (FastAPI's TestClient), a real Redis."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from demo.scripted import Script, ToolUse, Turn
from server.app import create_app
from tasks.app import configure
from tests.inline import Inline, scripted_model
from workflows.engine import Engine
from workflows.models import PermissionMode
from workflows.models.options import RemoteOptions, SessionOptions
from workflows.schedules import RunMode, Schedule
from workflows.store.api_tokens import TokenStore
from workflows.store.redis_store import Store
from workflows.store.schedules import ScheduleStore

pytestmark = pytest.mark.integration


@pytest.fixture
def engine(real_redis, redis_server, settings):
    configure(redis_server.url)  # a denial sends its step: to this test's Redis
    return Engine(Store(real_redis), settings)


@pytest.fixture
def client(engine):
    with TestClient(create_app(engine, aredis=None), base_url="http://server.test") as c:
        yield c


@pytest.fixture
def tokens(real_redis) -> dict[str, dict]:
    """Authorization headers: ``ci``, made without --allow-bypass."""
    return {"ci": {"Authorization": f"Bearer {TokenStore(real_redis).create('ci')[0]}"}}


def test_approving_in_a_bypass_session_needs_the_scope_denying_never(engine, client, tokens, ws):
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={"command": "touch out.txt"})]),
                                         Turn(text="done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, asks="wait"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "make out.txt"))
    inline.drain()
    (req,) = engine.store.get_session(rec.id).pending_requests()
    engine.update_limits(rec.id, permission_mode=PermissionMode.BYPASS)  # by someone with the right to
    r = client.post(f"/api/sessions/{rec.id}/approve", json={"request": req.id}, headers=tokens["ci"])
    assert r.status_code == 403
    assert r.json()["detail"].startswith(f"Token 'ci' may not send to session {rec.id[:8]} (it runs in "
                                         "bypassPermissions mode)")
    assert engine.store.get_session(rec.id).pending_requests() == [req]  # nothing decided
    r = client.post(f"/api/sessions/{rec.id}/deny", json={"request": req.id, "message": "no"}, headers=tokens["ci"])
    assert r.status_code == 200 and r.json()["approved"] is False


def test_running_a_continue_schedule_into_a_bypass_session_needs_the_scope(engine, client, tokens, ws):
    last = engine.create_session(str(ws), SessionOptions(permission_mode=PermissionMode.BYPASS))
    s = Schedule(name="nightly", cron="0 3 * * *", workspace=str(ws), prompt="report", mode=RunMode.CONTINUE,
                 created_by="user:me", last_session_id=last.id)
    ScheduleStore(engine.store.r).add(s)
    r = client.post(f"/api/schedules/{s.id}/run", headers=tokens["ci"])
    assert r.status_code == 403
    assert r.json()["detail"].startswith(f"Token 'ci' may not continue session {last.id[:8]} (it runs in "
                                         "bypassPermissions mode)")
    assert not engine.store.get_session(last.id).title  # nothing was sent to it


def test_enabling_a_bypass_schedule_while_its_settings_are_broken_is_refused(engine, client, tokens, ws):
    s = Schedule(name="nightly", cron="0 3 * * *", workspace=str(ws), prompt="report", created_by="user:me",
                 enabled=False, options=RemoteOptions(permission_mode=PermissionMode.BYPASS))
    ScheduleStore(engine.store.r).add(s)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text("{broken")
    r = client.post(f"/api/schedules/{s.id}/enable", headers=tokens["ci"])
    assert r.status_code == 403
    detail = r.json()["detail"]
    assert detail.startswith(f"Token 'ci' was made without --allow-bypass, and whether schedule {s.id[:8]}'s "
                             "sessions would run in bypassPermissions cannot be told while its settings are broken")
    assert not ScheduleStore(engine.store.r).get(s.id).enabled
