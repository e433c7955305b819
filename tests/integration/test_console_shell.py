"""The console's shell over HTTP (the app in-process, a real Redis): ``/console/pulse`` (the header's live
counts and the sessions that just ended) counts only what the token may see and takes the cookie only; the
header draws its icons as SVG (no glyph a font may lack); the inbox offers no decision to a read-only token."""

from __future__ import annotations

import pytest

from statemachines import State
from tests.integration.test_console_pages import app, client, sign_in, token  # noqa: F401 (fixtures)
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.integration

GLYPHS = ("⛵", "⏺", "⎿", "⚡", "✓", "✗", "⏪", "⚠")


def saved(engine, ws, state: State, *, title: str = "", last_error: str | None = None, parent: str | None = None):
    rec = engine.create_session(str(ws))
    rec = engine.store.get_session(rec.id)
    rec.state, rec.title, rec.last_error, rec.parent_session_id = state, title, last_error, parent
    engine.store.save_session(rec)
    return rec


def test_the_pulse_counts_what_the_token_may_see(client, token, app, ws, tmp_path):  # noqa: F811
    engine = app.state.engine
    working = saved(engine, ws, State.QUERYING, title="busy")
    failed = saved(engine, ws, State.IDLE, title="broke", last_error="the model call failed")
    saved(engine, ws, State.RUNNING_TOOLS, parent=working.id)  # a sub-agent: its parent's business
    other = tmp_path / "elsewhere"
    other.mkdir()
    saved(engine, other, State.RUNNING_TOOLS)
    scoped, _ = TokenStore(engine.store.r).create("scoped", workspaces=[str(ws)])

    assert client.get("/console/pulse").status_code == 401  # no cookie, no answer (and no token in a URL)
    sign_in(client, scoped)
    r = client.get("/console/pulse")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    body = r.json()
    assert (body["waiting"], body["requests"], body["running"]) == (0, [], 1)
    seen = {s["id"]: s for s in body["sessions"]}
    assert set(seen) == {working.id, failed.id}
    assert seen[failed.id] == {"id": failed.id, "title": "broke", "state": "idle", "failed": True}
    assert seen[working.id]["state"] == "querying" and seen[working.id]["failed"] is False

    client.post("/signout")
    sign_in(client, token)  # every workspace: the other one's working session counts too
    assert client.get("/console/pulse").json()["running"] == 2


def test_the_header_draws_svg_icons_and_counts_on_every_page(client, token, app, ws):  # noqa: F811
    sign_in(client, token)
    for path in ("/", "/approvals", "/costs", "/overview", "/sessions/0123456789"):
        text = client.get(path).text
        header = text[text.index('<header class="top">'):text.index("</header>")]
        assert not [g for g in GLYPHS if g in header], path
        assert '<use href="#i-sail">' in header and 'id="i-sail"' in text, path
        assert 'id="approvals-count"' in header and 'id="running-count"' in header, path
        assert 'id="help"' in text and 'id="status-dismiss"' in text, path
    signin = client.post("/signout") and client.get("/signin").text
    assert not [g for g in GLYPHS if g in signin] and "approvals-count" not in signin


def test_the_inbox_offers_no_decision_to_a_read_only_token(client, app):  # noqa: F811
    reader, _ = TokenStore(app.state.engine.store.r).create("reader", read_only=True)
    sign_in(client, reader)
    text = client.get("/approvals").text
    assert 'data-read-only="1"' in text and "read-only: it may see the requests, not decide them" in text
