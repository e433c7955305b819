"""Webhooks and budgets end to end: a real ``mainsail serve``, a real worker, real Redis, the real SDK against
the fake Messages API, and a local HTTP receiver on 127.0.0.1.

- Webhooks: a generic (signed) subscription for the admin token's sessions and a Slack one for the workspace
  get each event (waiting, finished, failed) once; the generic receiver answers 500 to its first POST and gets
  that event again (same delivery id, a valid signature) and then never again. The backoff is 20 ms
  (MAINSAIL_NOTIFY_BACKOFF_SECONDS): the retry is waited for as an event, not slept for.
- Budgets: a workspace budget below one turn's cost lets the first turn run and refuses the second, with
  the reason in the API's answer, the session's record and its transcript (what every watcher shows); the
  ledger's spend is what the fake API's usage costs at the model's price.
"""

from __future__ import annotations

import hashlib
import html
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from demo.script import ScriptUsage
from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, Cluster, cluster_env, wait_for
from tests.e2e.serving import Serve
from tests.e2e.test_server_api import create, texts, wait_idle, wait_state
from tests.fakeapi import FakeMessagesServer, assistant_turns, last_prompt
from workflows.model.pricing import cost_usd
from workflows.models import Usage
from workflows.store.api_tokens import TokenStore
from workflows.store.redis_store import Store

pytestmark = pytest.mark.e2e

MODEL = "claude-sonnet-4-5"
USAGE = ScriptUsage(input_tokens=1000, output_tokens=500)


def model(body: dict) -> Turn:
    prompt = last_prompt(body)
    if prompt.startswith("bash") and assistant_turns(body) == 0:
        return Turn(text="Running.", tool_uses=[ToolUse(name="Bash", input={"command": "echo hi > hi.txt"})],
                    usage=USAGE)
    if prompt.startswith("loop"):  # a tool call at every turn: max_turns ends it in an error
        return Turn(text="Again.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})], usage=USAGE)
    return Turn(text=f"Answer to: {prompt}", usage=USAGE)


class Receiver:
    """A webhook receiver: records every POST; answers 500 to the first one on ``/fail-once``."""

    def __init__(self) -> None:
        self.posts: list[dict] = []
        self.lock = threading.Lock()
        self.failed = False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with owner.lock:
                    status = 200
                    if self.path == "/fail-once" and not owner.failed:
                        owner.failed, status = True, 500
                    owner.posts.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                        "body": body, "status": status})
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def got(self, path: str, status: int | None = 200) -> list[dict]:
        with self.lock:
            return [p for p in self.posts if p["path"] == path and (status is None or p["status"] == status)]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def served(redis_server, tmp_path_factory):
    """(serve process, admin token, receiver) with one worker, shared by the module's tests (their sessions
    are in workspaces of their own); notifications retried after 20 ms."""
    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed (pip install -e .)")
    tmp = tmp_path_factory.mktemp("notify")
    client = redis_server.client()
    client.flushall()
    cluster = Cluster(cluster_env(redis_server.url, tmp / "data"), Store(client), tmp)
    receiver = Receiver()
    try:
        with FakeMessagesServer(model) as fake:
            cluster.env.update({"ANTHROPIC_BASE_URL": fake.url, "MAINSAIL_AUTO_MEMORY": "false",
                                "MAINSAIL_SESSION_MEMORY": "false", "MAINSAIL_SESSION_TITLES": "false",
                                "MAINSAIL_NOTIFY_BACKOFF_SECONDS": "0.02", "MAINSAIL_MODEL": MODEL})
            srv = Serve(cluster)
            cluster.env["MAINSAIL_PUBLIC_URL"] = srv.url
            cluster.start_worker()
            admin, _ = TokenStore(client).create("admin", admin=True)
            yield srv.start(), admin, receiver
    finally:
        cluster.stop()
        receiver.stop()
        client.flushall()
        client.close()


@pytest.fixture
def workspace(tmp_path):
    return tmp_path


def signed(secret: str, post: dict) -> bool:
    fields = dict(part.split("=", 1) for part in post["headers"]["mainsail-signature"].split(","))
    mac = hmac.new(secret.encode(), fields["t"].encode() + b"." + post["body"], hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, fields["v1"])


def test_webhooks_deliver_each_event_once_signed_and_retry_after_a_500(served, workspace):
    srv, admin, receiver = served
    with srv.client(admin) as api:
        made = api.post("/api/notify/subscriptions", json={"kind": "generic", "url": receiver.url + "/fail-once",
                                                           "token": "admin"})
        assert made.status_code == 201, made.text
        secret = made.json()["secret"]
        slack = api.post("/api/notify/subscriptions", json={"kind": "slack", "url": receiver.url + "/slack",
                                                            "workspace": str(workspace), "events": ["waiting"]})
        assert slack.status_code == 201 and "secret" not in slack.json()
        bad = api.post("/api/notify/subscriptions", json={"kind": "generic", "url": "file:///etc/passwd",
                                                          "token": "admin"})
        assert bad.status_code == 400 and "scheme 'file' is refused" in bad.json()["detail"]
        listed = api.get("/api/notify/subscriptions").json()
        assert len(listed) == 2 and all("secret" not in s and s["url"].endswith("/…") for s in listed)

        sid = create(api, workspace, "bash it")["id"]
        wait_state(api, sid, "awaiting_permission")
        first = wait_for(lambda: receiver.got("/fail-once"), 30, 0.05, "the waiting event, after its 500")
        slack_posts = wait_for(lambda: receiver.got("/slack"), 30, 0.05, "the Slack waiting event")
        assert api.post(f"/api/sessions/{sid}/approve", json={}).status_code == 200
        wait_idle(api, sid)
        wait_for(lambda: len(receiver.got("/fail-once")) == 2, 30, 0.05, "the finished event")

        loop = create(api, workspace, "loop", max_turns=1)["id"]
        wait_idle(api, loop)
        wait_for(lambda: len(receiver.got("/fail-once")) == 3, 30, 0.05, "the failed event")

    posts = receiver.got("/fail-once")
    events = [json.loads(p["body"]) for p in posts]
    assert [e["type"] for e in events] == ["waiting", "finished", "failed"]
    assert [e["session_id"] for e in events] == [sid, sid, loop]
    assert all(signed(secret, p) for p in posts) and not signed("whsec_wrong-secret-xx", posts[0])
    assert len({p["headers"]["mainsail-delivery"] for p in posts}) == 3  # each event once
    # The waiting event was answered 500 once, then sent again: same delivery id, a new valid signature.
    refused = receiver.got("/fail-once", status=500)
    assert len(refused) == 1 and refused[0]["headers"]["mainsail-delivery"] == first[0]["headers"]["mainsail-delivery"]
    assert len(receiver.got("/fail-once", status=None)) == 4
    assert events[0]["link"] == f"{srv.url}/sessions/{sid}" and "token" not in events[0]["link"].lower()
    assert events[0]["requests"][0]["tool"] == "Bash" and events[2]["subtype"] == "error_max_turns"
    assert events[1]["cost_usd"] == pytest.approx(cost_usd(MODEL, Usage(input_tokens=1000, output_tokens=500)) * 2)
    # Slack: its one event (it asked for waiting only), as text and blocks with a button to the console.
    assert len(slack_posts) == 1 and len(receiver.got("/slack", status=None)) == 1
    body = json.loads(slack_posts[0]["body"])
    assert "waiting for approval" in body["text"] and body["blocks"][1]["elements"][0]["url"] == events[0]["link"]
    assert secret not in srv.log() and secret not in (cluster_log := "".join(
        p.read_text(errors="replace") for p in srv.cluster.tmp.glob("*.log")))
    assert "/fail-once" not in cluster_log
    with srv.client(admin) as api:  # (the next test's sessions notify nobody)
        for sub in api.get("/api/notify/subscriptions").json():
            assert api.delete(f"/api/notify/subscriptions/{sub['id']}").status_code == 204
        assert api.get("/api/notify/subscriptions").json() == []


def test_budget_refuses_the_turn_past_its_limit(served, workspace):
    srv, admin, receiver = served
    one_turn = cost_usd(MODEL, Usage(input_tokens=1000, output_tokens=500))
    with srv.client(admin) as api:
        assert api.post("/api/notify/subscriptions", json={"kind": "generic", "url": receiver.url + "/budget",
                                                           "workspace": str(workspace), "events": ["failed"]}
                        ).status_code == 201
        put = api.put("/api/budgets", json={"workspace": str(workspace), "limit_usd": one_turn / 2, "period": "day"})
        assert put.status_code == 200, put.text
        sid = create(api, workspace, "hello")["id"]
        wait_idle(api, sid)

        costs = api.get("/api/costs", params={"by": "token,workspace,model"}).json()
        mine = [g for g in costs["groups"] if g["workspace"] == str(workspace)]
        assert mine == [{"token": "admin", "workspace": str(workspace), "model": MODEL,
                         "cost_usd": pytest.approx(one_turn), "tokens": 1500, "unpriced_calls": 0}]
        assert api.get("/api/costs", params={"by": "week"}).status_code == 400
        [budget] = api.get("/api/budgets").json()
        assert budget["spent_usd"] == pytest.approx(one_turn)

        refused = api.post(f"/api/sessions/{sid}/messages", json={"message": "again"})
        assert refused.status_code == 402, refused.text
        why = refused.json()["detail"]
        assert why.startswith(f"Budget of workspace {workspace} is spent: ${one_turn:.4f} of its ${one_turn / 2:g}")
        assert "mainsail budget set --workspace" in why
        rec = wait_idle(api, sid)
        assert rec["budget_stop"] == why
        assert why in texts(api, sid)  # the transcript: what the stream, `mainsail watch` and the console show
        [failed] = wait_for(lambda: receiver.got("/budget"), 30, 0.05, "the refusal's failed event")
        assert json.loads(failed["body"])["subtype"] == "error_max_budget_usd"
        assert json.loads(failed["body"])["result"] == why
    with srv.client(cookies={"mainsail_token": admin}) as console:  # the console's pages, signed in
        page = console.get(f"/sessions/{sid}").text
        assert 'id="budget-stop"' in page and html.escape(why) in page
        costs_page = console.get("/costs").text
        assert str(workspace) in costs_page and "spent: new turns refused" in costs_page
        assert 'id="approvals-count"' in costs_page
    with srv.client(admin) as api:

        assert api.put("/api/budgets", json={"workspace": str(workspace), "limit_usd": 1}).status_code == 200
        assert api.post(f"/api/sessions/{sid}/messages", json={"message": "again"}).status_code in (200, 202)
        assert wait_idle(api, sid)["budget_stop"] is None


def test_the_new_routes_respect_token_scopes(served, tmp_path):
    srv, admin, receiver = served
    tokens = TokenStore(srv.cluster.store.r)
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    reader, _ = tokens.create("reader", read_only=True)
    scoped, _ = tokens.create("scoped", workspaces=[str(mine)])
    hook = {"kind": "generic", "url": receiver.url + "/scoped"}
    with srv.client(reader) as api:
        assert api.post("/api/notify/subscriptions", json={**hook, "token": "reader"}).status_code == 403
        assert api.put("/api/budgets", json={"token": "reader", "limit_usd": 100}).status_code == 403
    with srv.client(scoped) as api:
        assert api.post("/api/notify/subscriptions", json={**hook, "workspace": str(other)}).status_code == 403
        assert api.post("/api/notify/subscriptions", json={**hook, "token": "admin"}).status_code == 403
        inner = api.post("/api/notify/subscriptions", json={**hook, "workspace": str(mine)})
        assert inner.status_code == 400 and "non-public" in inner.json()["detail"]  # (no requests into the network)
        public = {"kind": "generic", "url": "http://93.184.216.34/hook"}  # (never sent: no session of it runs)
        made = api.post("/api/notify/subscriptions", json={**public, "workspace": str(mine)})
        assert made.status_code == 201
        put = api.put("/api/budgets", json={"token": "scoped", "limit_usd": 100})
        assert put.status_code == 403 and "needs an admin token" in put.json()["detail"]
        assert api.get("/api/costs", params={"by": "workspace"}).json()["groups"] == []  # others' workspaces
        assert api.get("/api/budgets").json() == []
    with srv.client(admin) as api:
        admin_sees = {s["id"] for s in api.get("/api/notify/subscriptions").json()}
        assert made.json()["id"] in admin_sees
    with srv.client(scoped) as api:
        gone = api.delete(f"/api/notify/subscriptions/{made.json()['id']}")
        assert gone.status_code == 204
        assert api.delete(f"/api/notify/subscriptions/{made.json()['id']}").status_code == 404
