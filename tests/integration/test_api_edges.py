"""The API's answers at its edges (issue 26, item 17), each a 500 or a leak before: a NUL byte in a path,
the largest event id, a restricted token probing the disk through schedules, a 422 or another error the
OpenAPI did not describe, a chunked body over the limit. The app in-process (FastAPI's TestClient), a
real Redis."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from server.app import create_app
from tasks.app import configure
from workflows.engine import Engine
from workflows.store.api_tokens import TokenStore
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration

LARGEST = f"{2**64 - 1}-{2**64 - 1}"


@pytest.fixture
def engine(real_redis, redis_server, settings):
    configure(redis_server.url)
    return Engine(Store(real_redis), settings)


@pytest.fixture
def app(engine):
    return create_app(engine, aredis=None, max_body=1024)


@pytest.fixture
def client(app):
    with TestClient(app, base_url="http://server.test", raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def tokens(real_redis, tmp_path) -> dict[str, dict]:
    (tmp_path / "theirs").mkdir()
    store = TokenStore(real_redis)
    return {"all": {"Authorization": f"Bearer {store.create('ops')[0]}"},
            "scoped": {"Authorization": f"Bearer {store.create('team', workspaces=[str(tmp_path / 'theirs')])[0]}"}}


@pytest.mark.parametrize(("method", "path", "kw", "field"), [
    ("post", "/api/sessions", {"json": {"workspace": "/tmp/a\x00b"}}, "body.workspace"),
    ("post", "/api/sessions", {"json": {"workspace": "/tmp", "add_dirs": ["x\x00"]}}, "body.add_dirs.0"),
    ("get", "/api/sessions", {"params": {"workspace": "/tmp\x00"}}, "query.workspace"),
    ("post", "/api/schedules", {"json": {"workspace": "/\x00", "cron": "@daily", "prompt": "x"}}, "body.workspace"),
    ("post", "/api/schedules", {"json": {"workspace": "/tmp", "cron": "@daily", "prompt": "x",
                                         "options": {"add_dirs": ["\x00"]}}}, "body.options.add_dirs.0"),
])
def test_a_nul_byte_in_a_path_is_a_422_naming_the_field(client, tokens, method, path, kw, field):
    r = getattr(client, method)(path, headers=tokens["all"], **kw)
    assert r.status_code == 422, r.text
    assert f"{field}: Value error, a path cannot hold a NUL byte" in r.json()["detail"]


def test_the_largest_event_id_is_a_400_not_a_500_nor_a_stream_that_aborts(client, tokens, engine, ws):
    sid = engine.create_session(str(ws)).id
    page = client.get(f"/api/sessions/{sid}/transcript", params={"after": LARGEST}, headers=tokens["all"])
    assert page.status_code == 400 and "no entry can come after the largest id" in page.json()["detail"]
    for headers in ({"Last-Event-ID": LARGEST}, {"Last-Event-ID": f"{LARGEST}.3"}):
        stream = client.get(f"/api/sessions/{sid}/events", headers={**tokens["all"], **headers})
        assert stream.status_code == 400 and "largest id" in stream.json()["detail"]


def test_a_restricted_token_learns_nothing_of_the_disk_through_schedules(client, tokens, tmp_path):
    (tmp_path / "exists").mkdir()
    body = {"cron": "@daily", "prompt": "x"}
    answers = [client.post("/api/schedules", json={**body, "workspace": str(tmp_path / name)},
                           headers=tokens["scoped"]) for name in ("exists", "missing")]
    assert [a.status_code for a in answers] == [403, 403]
    assert [a.json()["detail"].split(";")[0] for a in answers] == [answers[0].json()["detail"].split(";")[0]] * 2
    dirs = [client.post("/api/schedules", json={**body, "workspace": str(tmp_path / "theirs"),
                                                "options": {"add_dirs": [str(tmp_path / name)]}},
                        headers=tokens["scoped"]) for name in ("exists", "missing")]
    assert [d.status_code for d in dirs] == [403, 403] and "is outside them" in dirs[0].json()["detail"]
    relative = client.post("/api/schedules", json={**body, "workspace": "exists"}, headers=tokens["scoped"])
    assert relative.status_code == 400 and "is not an absolute path" in relative.json()["detail"]


def test_every_error_answer_is_in_the_openapi_as_it_is_sent(client, tokens):
    schema = client.get("/api/openapi.json", headers=tokens["all"]).json()
    post = schema["paths"]["/api/sessions"]["post"]["responses"]
    assert {"400", "401", "403", "404", "409", "413", "422", "503"} <= set(post)
    invalid = schema["components"]["schemas"][post["422"]["content"]["application/json"]["schema"]["$ref"]
                                               .rsplit("/", 1)[1]]
    assert invalid["properties"]["detail"]["type"] == "string" and "errors" in invalid["properties"]
    answer = client.post("/api/sessions", json={"workspace": 5}, headers=tokens["all"]).json()
    assert isinstance(answer["detail"], str) and answer["errors"][0]["loc"] == ["body", "workspace"]
    assert set(answer) == set(invalid["properties"])
    assert "HTTPValidationError" not in schema["components"]["schemas"]  # FastAPI's own, which we never send


def test_a_chunked_body_over_the_limit_is_a_413(client, tokens):
    def chunks():
        for _ in range(8):
            yield b'{"workspace": "' + b"x" * 200

    r = client.post("/api/sessions", content=chunks(), headers={**tokens["all"], "Content-Type": "application/json"})
    assert r.status_code == 413 and "over the server's limit of 1024 bytes" in r.json()["detail"]
