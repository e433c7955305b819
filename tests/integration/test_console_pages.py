"""The console's pages over HTTP (the app in-process, a real Redis): sign-in and its cookie, redirects,
the security headers, escaping of hostile session data, the overview's figures."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from server.app import create_app
from server.auth import COOKIE
from server.console.web import CSP
from workflows.engine import Engine
from workflows.store.api_tokens import TokenStore
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration

HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def app(real_redis, settings):
    engine = Engine(Store(real_redis), settings)
    return create_app(engine, aredis=None)


@pytest.fixture
def token(real_redis):
    secret, _ = TokenStore(real_redis).create("alice")
    return secret


@pytest.fixture
def client(app):
    with TestClient(app, base_url="http://console.test", follow_redirects=False) as c:
        yield c


def sign_in(client, token, next_="/"):
    return client.post("/signin", data={"token": token, "next": next_})


def test_pages_redirect_to_sign_in_without_a_valid_token(client):
    for path, target in [("/", "/signin"), ("/approvals", "/signin?next=/approvals"),
                         ("/overview", "/signin?next=/overview"), ("/sessions/abc", "/signin?next=/sessions/abc")]:
        r = client.get(path)
        assert (r.status_code, r.headers["location"]) == (303, target), path
    client.cookies.set(COOKIE, "mst_not-a-real-token")
    assert client.get("/").headers["location"] == "/signin"


def test_sign_in_sets_a_strict_http_only_cookie_and_never_shows_the_token(client, token):
    form = client.get("/signin")
    assert form.status_code == 200 and 'name="token"' in form.text
    r = sign_in(client, token, "/approvals")
    assert (r.status_code, r.headers["location"]) == (303, "/approvals")
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}={token};")
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/"):
        assert attribute.lower() in cookie.lower()
    assert "secure" not in cookie.lower()  # plain http here; https sets it (next test)
    page = client.get("/approvals")
    assert page.status_code == 200 and "token alice" in page.text
    assert token not in page.text and token not in page.headers.get("location", "")


def test_the_cookie_is_secure_over_https(app, token):
    with TestClient(app, base_url="https://console.test", follow_redirects=False) as c:
        assert "secure" in sign_in(c, token).headers["set-cookie"].lower()


def test_a_wrong_token_is_refused_and_not_echoed(client):
    r = sign_in(client, "mst_wrong-secret-123")
    assert r.status_code == 401
    assert "unknown or revoked" in r.text and "mst_wrong-secret-123" not in r.text
    assert "set-cookie" not in r.headers


def test_sign_in_from_another_site_is_refused(client, token):
    r = client.post("/signin", data={"token": token}, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403 and "set-cookie" not in r.headers


def test_next_only_goes_to_a_path_on_this_server(client, token):
    for hostile in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        client.cookies.clear()
        assert sign_in(client, token, hostile).headers["location"] == "/"


def test_sign_out_clears_the_cookie(client, token):
    sign_in(client, token)
    r = client.post("/signout")
    assert r.status_code == 303 and r.headers["location"] == "/signin"
    assert f'{COOKIE}=""' in r.headers["set-cookie"] and "max-age=0" in r.headers["set-cookie"].lower()
    assert client.get("/").headers["location"] == "/signin"


def test_a_revoked_token_signs_the_browser_out(client, token, real_redis):
    sign_in(client, token)
    assert client.get("/").status_code == 200
    TokenStore(real_redis).revoke("alice")
    assert client.get("/").headers["location"] == "/signin"


def test_pages_carry_a_strict_csp_and_load_scripts_only_from_files(client, token):
    sign_in(client, token)
    for path in ("/", "/approvals", "/overview", "/signin"):
        r = client.get(path, follow_redirects=True)
        assert r.headers["content-security-policy"] == CSP, path
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "<script>" not in r.text  # no inline script: only <script src=...>
    js = client.get("/static/console/session.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert client.get("/static/console/../web.py").status_code == 404
    assert client.get("/static/console/web.py").status_code == 404


def test_a_hostile_title_and_workspace_are_escaped(client, token, app, ws):
    store = app.state.engine.store
    rec = app.state.engine.create_session(str(ws))
    rec = store.get_session(rec.id)
    rec.title = HOSTILE
    store.save_session(rec)
    sign_in(client, token)
    for path in ("/", f"/sessions/{rec.id}"):
        text = client.get(path).text
        assert HOSTILE not in text and "<script>alert" not in text and "<img src=x" not in text, path
        assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in text, path


def test_the_sessions_table_filters_by_state(client, token, app, ws):
    rec = app.state.engine.create_session(str(ws))
    sign_in(client, token)
    assert rec.id in client.get("/?state=idle").text
    filtered = client.get("/?state=awaiting_permission").text
    assert rec.id not in filtered and "No sessions in state awaiting_permission" in filtered


def test_an_unknown_session_page_is_a_404_page(client, token):
    sign_in(client, token)
    r = client.get("/sessions/0123456789")
    assert r.status_code == 404 and "No session" in r.text and r.headers["content-type"].startswith("text/html")


def test_the_overview_counts_sessions_queues_and_workers(client, token, app, ws, real_redis):
    import time

    from workflows.store import keys

    engine = app.state.engine
    rec = engine.create_session(str(ws))
    rec = engine.store.get_session(rec.id)
    rec.cost_usd, rec.cost_by_model = 0.25, {"claude-test-model": 0.25}
    engine.store.save_session(rec)
    real_redis.zadd(keys.workers(), {"mainsail-1@a": time.time() + 60, "mainsail-2@b": time.time() - 60})
    sign_in(client, token)
    text = client.get("/overview").text
    assert "1 live worker(s)" in text
    assert "claude-test-model" in text and "$0.2500" in text
    assert 'aria-label="Sessions by state"' in text and ">idle</span>" in text


def test_the_new_session_form_offers_bypass_only_to_a_token_that_may_use_it(client, token, real_redis):
    sign_in(client, token)
    page = client.get("/").text
    assert '<option value="acceptEdits">' in page and 'value="bypassPermissions"' not in page
    client.post("/signout")
    admin, _ = TokenStore(real_redis).create("admin", allow_bypass=True)
    sign_in(client, admin)
    assert '<option value="bypassPermissions">' in client.get("/").text
