"""The team server's HTTP API end to end: httpx against a real ``mainsail serve`` process, real
workers, real Redis and the real SDK against the fake Messages API. Every endpoint, who may do what,
and live follow resumed by Last-Event-ID (also across a server crash)."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.e2e.serving import Serve, event_ids, sse
from tests.fakeapi import FakeMessagesServer, assistant_turns, last_prompt
from workflows.compaction.run import SUMMARY_SYSTEM
from workflows.models import CompactBoundaryEntry, PermissionDecisionEntry
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.e2e

COMMAND = "echo approved > approved.txt"
STEADY_TURNS = 8


def model(body: dict) -> Turn:
    """The fake model: the prompt's first word says what to do."""
    if body["system"][0]["text"] == SUMMARY_SYSTEM:
        return Turn(text="<summary>API SUMMARY</summary>")
    prompt = last_prompt(body)
    last = body["messages"][-1]["content"]
    after_tool = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
    if prompt.startswith("steady"):  # a session writing entries steadily, a few a second
        n = assistant_turns(body)
        if n < STEADY_TURNS:
            return Turn(text=f"Step {n}.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})],
                        delay_seconds=0.3)
        return Turn(text="Steady done.")
    if after_tool:
        return Turn(text=f"Done with {prompt}.")
    if prompt.startswith("read"):
        return Turn(text="Reading.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})])
    if prompt.startswith("bash"):
        return Turn(text="Running.", tool_uses=[ToolUse(name="Bash", input={"command": COMMAND})])
    if prompt.startswith("slow"):
        return Turn(text="Slow answer.", delay_seconds=20)
    return Turn(text=f"Answer to: {prompt}")


@pytest.fixture
def served(cluster, workspace):
    """(serve process, admin token, fake API) with one worker."""
    with FakeMessagesServer(model) as fake:
        cluster.env["ANTHROPIC_BASE_URL"] = fake.url
        cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"
        cluster.start_worker()
        admin, _ = TokenStore(cluster.store.r).create("admin")
        yield Serve(cluster).start(), admin, fake


def wait_idle(api: httpx.Client, sid: str, timeout: float = 60) -> dict:
    def idle():
        rec = api.get(f"/api/sessions/{sid}").json()
        return rec if rec["state"] == "idle" and not rec["queued"] else None
    return wait_for(idle, timeout, 0.2, f"session {sid[:8]} to be idle")


def wait_state(api: httpx.Client, sid: str, state: str, timeout: float = 60) -> dict:
    return wait_for(lambda: (rec := api.get(f"/api/sessions/{sid}").json())["state"] == state and rec,
                    timeout, 0.2, f"session {sid[:8]} to be {state}")


def texts(api: httpx.Client, sid: str) -> str:
    return json.dumps(api.get(f"/api/sessions/{sid}/transcript", params={"limit": 5000}).json()["entries"])


def create(api: httpx.Client, ws, prompt: str | None = None, **kw) -> dict:
    resp = api.post("/api/sessions", json={"workspace": str(ws), "prompt": prompt, **kw})
    assert resp.status_code == 201, resp.text
    return resp.json()


# ----------------------------------------------------------------------------- sessions


def test_create_list_get_transcript_and_export(served, workspace, tmp_path):
    srv, admin, _ = served
    other = tmp_path / "other"
    other.mkdir()
    with srv.client(admin) as api:
        empty = create(api, other)
        assert empty["state"] == "idle" and empty["workspace"] == os.path.realpath(other) and empty["turns"] == 0
        rec = create(api, workspace, "read the file", max_turns=5)
        sid = rec["id"]
        assert rec["state"] == "querying" and rec["max_turns"] == 5
        wait_idle(api, sid)

        missing = api.post("/api/sessions", json={"workspace": str(tmp_path / "nope")})
        assert missing.status_code == 400 and str(tmp_path / "nope") in missing.json()["detail"]
        relative = api.post("/api/sessions", json={"workspace": "ws"})
        assert relative.status_code == 400 and "'ws' is not an absolute path" in relative.json()["detail"]
        for body in ({}, {"workspace": str(workspace), "max_turns": 0}, {"workspace": 5}):
            bad = api.post("/api/sessions", json=body)
            assert bad.status_code == 422 and bad.json()["detail"].startswith("Invalid request: body."), bad.text
        garbled = api.post("/api/sessions", content=b"{not json", headers={"content-type": "application/json"})
        assert garbled.status_code == 422

        listed = api.get("/api/sessions").json()
        assert [s["id"] for s in listed] == [sid, empty["id"]]
        assert [s["id"] for s in api.get("/api/sessions", params={"limit": 1}).json()] == [sid]
        assert [s["id"] for s in api.get("/api/sessions", params={"workspace": str(other)}).json()] == [empty["id"]]
        assert [s["id"] for s in api.get("/api/sessions", params={"state": "querying"}).json()] == []
        assert len(api.get("/api/sessions", params={"state": "idle"}).json()) == 2
        assert api.get("/api/sessions", params={"state": "sleeping"}).status_code == 422

        full = api.get(f"/api/sessions/{sid}")
        assert full.status_code == 200 and full.json()["turns"] == 2 and full.json()["title"] == "read the file"
        assert full.headers["cache-control"] == "no-store"
        assert api.get(f"/api/sessions/{sid[:8]}").json()["id"] == sid
        unknown = api.get("/api/sessions/ffffffff-0000")
        assert unknown.status_code == 404 and "No session 'ffffffff-0000'" in unknown.json()["detail"]

        whole = api.get(f"/api/sessions/{sid}/transcript", params={"limit": 5000})
        assert whole.headers["cache-control"] == "no-store"
        whole = whole.json()
        assert whole["next"] is None and len(whole["entries"]) == len(whole["ids"]) >= 5
        assert "Reading." in json.dumps(whole["entries"]) and "Done with read the file." in json.dumps(whole)
        paged, ids, after = [], [], None
        while True:
            page = api.get(f"/api/sessions/{sid}/transcript", params={"limit": 1, **({"after": after} if after
                                                                                     else {})}).json()
            paged += page["entries"]
            ids += page["ids"]
            if page["next"] is None:
                break
            after = page["next"]
        assert paged == whole["entries"] and ids == whole["ids"]
        for bad in ("nonsense", "1-0.3", "99999999999999999999999-0"):
            resp = api.get(f"/api/sessions/{sid}/transcript", params={"after": bad})
            assert resp.status_code == 400 and "Invalid" in resp.json()["detail"], resp.text

        export = api.get(f"/api/sessions/{sid[:8]}/export")
        assert export.status_code == 200 and export.headers["content-type"].startswith("application/x-ndjson")
        assert export.headers["cache-control"] == "no-store"
        assert f'filename="{sid}.jsonl"' in export.headers["content-disposition"]
        lines = [json.loads(line) for line in export.text.splitlines()]
        assert lines and all(line["sessionId"] == sid for line in lines if "sessionId" in line)
        assert "Done with read the file." in export.text


def test_messages_queue_cancel_and_compact(served, workspace):
    srv, admin, fake = served
    with srv.client(admin) as api:
        sid = create(api, workspace)["id"]
        sent = api.post(f"/api/sessions/{sid}/messages", json={"message": "hello there"})
        assert sent.status_code == 202 and sent.json()["message"] == "Sent."
        wait_idle(api, sid)
        assert "Answer to: hello there" in texts(api, sid)

        api.post(f"/api/sessions/{sid}/messages", json={"message": "slow one"})
        wait_for(lambda: any(last_prompt(b) == "slow one" for b in fake.requests), 60, what="the slow call")
        queued = api.post(f"/api/sessions/{sid}/messages", json={"message": "after the slow one"}).json()
        assert queued["message"] == "Queued as message 1 of 1." and queued["state"] == "querying"
        assert api.get(f"/api/sessions/{sid}").json()["inbox"] == ["after the slow one"]
        cancelled = api.post(f"/api/sessions/{sid}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        wait_idle(api, sid)
        transcript = texts(api, sid)
        assert "Slow answer." not in transcript and "Answer to: after the slow one" in transcript
        assert api.post(f"/api/sessions/{sid}/messages", json={}).status_code == 400

        compacting = api.post(f"/api/sessions/{sid}/compact", json={"instructions": "keep the greeting"})
        assert compacting.status_code == 202 and compacting.json()["message"] == "Compacting."
        wait_for(lambda: any(isinstance(e, CompactBoundaryEntry) for e in srv.cluster.store.entries(sid)), 60,
                 what="the compact boundary")
        wait_idle(api, sid)
        assert "keep the greeting" in json.dumps(fake.requests[-1]["messages"])
        again = api.post(f"/api/sessions/{sid}/compact", json={})
        assert again.status_code in (202, 409)


# ----------------------------------------------------------------------------- approvals


def test_approvals_read_only_tokens_and_deciders(served, workspace):
    srv, admin, fake = served
    tokens = TokenStore(srv.cluster.store.r)
    # alice answers "always": Bash(echo approved:*) would also allow `echo approved x > .mcp.json`, a
    # protected write (workflows/permissions/protected_writes.py), so that needs the admin scope.
    alice, _ = tokens.create("alice", admin=True)
    reader, _ = tokens.create("reader", read_only=True)
    with srv.client(admin) as api, srv.client(alice) as as_alice, srv.client(reader) as ro:
        sid = create(api, workspace, "bash please")["id"]
        wait_state(api, sid, "awaiting_permission")
        (pending,) = ro.get("/api/approvals").json()
        assert pending["session_id"] == sid and pending["request"]["tool"] == "Bash"
        assert COMMAND in pending["prompt"] and pending["workspace"] == os.path.realpath(workspace)

        for path, body in ((f"/api/sessions/{sid}/approve", {}), (f"/api/sessions/{sid}/deny", {}),
                           (f"/api/sessions/{sid}/messages", {"message": "x"}), (f"/api/sessions/{sid}/cancel", {}),
                           (f"/api/sessions/{sid}/compact", {}), ("/api/sessions", {"workspace": str(workspace)})):
            refused = ro.post(path, json=body)
            assert refused.status_code == 403 and "read-only" in refused.json()["detail"], path
        assert ro.get(f"/api/sessions/{sid}").status_code == 200
        assert not (workspace / "approved.txt").exists()

        decided = as_alice.post(f"/api/sessions/{sid[:8]}/approve", json={"always": True})
        assert decided.status_code == 200, decided.text
        assert decided.json()["decided_by"] == "token:alice" and decided.json()["rules_added"] == [
            "Bash(echo approved:*)"]
        wait_idle(api, sid)
        assert (workspace / "approved.txt").read_text() == "approved\n"
        assert api.get(f"/api/sessions/{sid}").json()["rules"]["allow"] == ["Bash(echo approved:*)"]
        (decision,) = [e for e in srv.cluster.store.entries(sid) if isinstance(e, PermissionDecisionEntry)]
        assert (decision.decision, decision.decider) == ("allow", "token:alice")
        api.post(f"/api/sessions/{sid}/messages", json={"message": "bash again"})
        wait_idle(api, sid)  # the rule answers: nothing waits
        assert ro.get("/api/approvals").json() == []
        closed = as_alice.post(f"/api/sessions/{sid}/approve", json={})
        assert closed.status_code == 404, closed.text

        other = create(api, workspace, "bash for a denial")["id"]
        wait_state(api, other, "awaiting_permission")
        denied = as_alice.post(f"/api/sessions/{other}/deny", json={"message": "not on this machine"})
        assert denied.status_code == 200 and denied.json()["approved"] is False
        wait_idle(api, other)
        assert "not on this machine" in json.dumps(fake.requests[-1]["messages"][-1])
        (decision,) = [e for e in srv.cluster.store.entries(other) if isinstance(e, PermissionDecisionEntry)]
        assert (decision.decision, decision.decider, decision.message) == ("deny", "token:alice",
                                                                           "not on this machine")


# ----------------------------------------------------------------------------- who may see what


def test_a_token_for_one_workspace_sees_and_starts_nothing_elsewhere(served, tmp_path):
    srv, admin, _ = served
    for d in ("a/sub", "ab", "b"):
        (tmp_path / d).mkdir(parents=True)
    a, ab, b = (os.path.realpath(tmp_path / d) for d in ("a", "ab", "b"))
    (tmp_path / "a" / "to-b").symlink_to(b)
    made = srv.cluster.mainsail("token", "create", "--name", "team-a", "--workspace", a, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    team_a = made.stdout.split()[0]
    with srv.client(admin) as api, srv.client(team_a) as mine:
        sa = create(api, a)["id"]
        create(api, ab)
        sb = create(api, b, "bash in b")["id"]
        wait_state(api, sb, "awaiting_permission")

        assert [s["id"] for s in mine.get("/api/sessions", params={"limit": 100}).json()] == [sa]
        assert mine.get("/api/sessions", params={"workspace": b}).json() == []
        assert mine.get("/api/approvals").json() == []
        assert len(api.get("/api/approvals").json()) == 1
        unknown = mine.get("/api/sessions/0123abcd").json()["detail"]
        for ref in (sb, sb[:8], sb[:1]):
            for verb, path in (("GET", ""), ("GET", "/transcript"), ("GET", "/export"), ("GET", "/events"),
                               ("POST", "/approve"), ("POST", "/deny"), ("POST", "/messages"),
                               ("POST", "/cancel"), ("POST", "/compact")):
                if ref == sb[:1] and sa.startswith(ref):
                    continue  # the prefix names the token's own session (its /events would follow it live)
                resp = mine.request(verb, f"/api/sessions/{ref}{path}",
                                    json={"message": "x"} if verb == "POST" else None)
                assert resp.status_code == 404, (ref, path, resp.text)
                assert resp.json()["detail"] == unknown.replace("0123abcd", ref), resp.text
                assert sb not in resp.text or ref == sb
        assert api.get(f"/api/sessions/{sb}").json()["pending"] == 1  # nothing was decided

        # A session elsewhere sharing a's 8-character prefix: the restricted token's prefix still names
        # its own session (and learns nothing of the other); an unrestricted token is told it is ambiguous.
        twin = srv.cluster.store.get_session(sb).model_copy(update={"id": sa[:8] + "-0000-4000-8000-000000000000"})
        srv.cluster.store.save_session(twin)
        assert mine.get(f"/api/sessions/{sa[:8]}").json()["id"] == sa
        assert api.get(f"/api/sessions/{sa[:8]}").status_code == 409
        assert mine.get(f"/api/sessions/{twin.id}").status_code == 404

        for ws, extra in ((b, {}), (ab, {}), (f"{a}/../b", {}), (f"{a}/to-b", {}), (str(tmp_path / "gone"), {}),
                          (a, {"add_dirs": [b]}), (a, {"add_dirs": ["../ab"]}), ("/", {})):
            refused = mine.post("/api/sessions", json={"workspace": ws, **extra})
            assert refused.status_code == 403, (ws, extra, refused.text)
            assert "team-a" in refused.json()["detail"] and a in refused.json()["detail"]
        inside = mine.post("/api/sessions", json={"workspace": f"{a}/sub"})
        assert inside.status_code == 201 and inside.json()["workspace"] == f"{a}/sub"


# ----------------------------------------------------------------------------- authentication


def test_tokens_are_required_checked_and_never_logged(served, workspace):
    srv, admin, _ = served
    tokens = TokenStore(srv.cluster.store.r)
    gone, _ = tokens.create("gone")
    wrong = "mst_" + "x" * 43
    with srv.client(admin) as api:
        sid = create(api, workspace, "hello")["id"]
        wait_idle(api, sid)
    assert httpx.get(srv.url + "/api/openapi.json").status_code == 401  # every route needs a token
    schema = httpx.get(srv.url + "/api/openapi.json", headers={"Authorization": f"Bearer {admin}"}).json()
    paths = set(schema["paths"])
    for path in ("/api/sessions", "/api/sessions/{session}", "/api/sessions/{session}/transcript",
                 "/api/sessions/{session}/export", "/api/sessions/{session}/events", "/api/sessions/{session}/messages",
                 "/api/sessions/{session}/cancel", "/api/sessions/{session}/compact", "/api/approvals",
                 "/api/sessions/{session}/approve", "/api/sessions/{session}/deny"):
        assert path in paths, path
    assert "NewSession" in schema["components"]["schemas"]

    with srv.client() as anon:
        tokens.revoke("gone")
        for headers in ({}, {"Authorization": f"Bearer {wrong}"}, {"Authorization": f"Bearer {gone}"},
                        {"Authorization": f"Basic {admin}"}, {"Authorization": "Bearer"},
                        {"Cookie": f"mainsail_token={wrong}"}):
            for verb, path in (("GET", "/api/sessions"), ("GET", f"/api/sessions/{sid}"), ("GET", "/api/approvals"),
                               ("GET", f"/api/sessions/{sid}/events"), ("POST", "/api/sessions"),
                               ("POST", f"/api/sessions/{sid}/approve")):
                resp = anon.request(verb, path, headers=headers, json={"workspace": str(workspace)})
                assert resp.status_code == 401, (headers, path, resp.text)
                assert resp.headers.get("www-authenticate") == "Bearer"
                assert "token" in resp.json()["detail"].lower()

        # CORS is off: no answer lets another origin's page read it, preflight or not.
        preflight = anon.options("/api/sessions", headers={"Origin": "https://evil.example",
                                                           "Access-Control-Request-Method": "POST",
                                                           "Access-Control-Request-Headers": "authorization"})
        cross = anon.get("/api/sessions", headers={"Origin": "https://evil.example",
                                                   "Authorization": f"Bearer {admin}"})
        assert cross.status_code == 200
        for resp in (preflight, cross):
            assert not any(h.lower().startswith("access-control-") for h in resp.headers), resp.headers

        # The console's cookie: reads work; a change needs the X-Mainsail-Console header.
        cookie = {"Cookie": f"mainsail_token={admin}"}
        assert anon.get("/api/sessions", headers=cookie).status_code == 200
        forged = anon.post(f"/api/sessions/{sid}/messages", headers=cookie, json={"message": "from evil"})
        assert forged.status_code == 403 and "X-Mainsail-Console" in forged.json()["detail"]
        assert anon.post("/api/sessions", headers=cookie, json={"workspace": str(workspace)}).status_code == 403
        console = anon.post(f"/api/sessions/{sid}/messages", headers={**cookie, "X-Mainsail-Console": "1"},
                            json={"message": "from the console"})
        assert console.status_code == 202, console.text

        # Bodies have a limit, told before they are read.
        big = anon.post("/api/sessions", headers={"Authorization": f"Bearer {admin}"},
                        json={"workspace": str(workspace), "prompt": "x" * (2 << 20)})
        assert big.status_code == 413 and "limit" in big.json()["detail"]

    with srv.client(admin) as api:
        wait_idle(api, sid)
        assert "from evil" not in texts(api, sid) and "Answer to: from the console" in texts(api, sid)
    log = srv.log()
    assert "GET /api/sessions" in log  # the access log is on, and still holds no token
    for secret in (admin, gone, wrong):
        assert secret not in log and secret[4:20] not in log


# ----------------------------------------------------------------------------- live follow


def test_live_follow_resumes_exactly_across_drops_and_a_server_crash(served, workspace):
    srv, admin, _ = served
    r = srv.cluster.store.r
    with srv.client(admin) as api:
        sid = create(api, workspace, "steady please")["id"]
        path = f"/api/sessions/{sid}/events"
        got: list[dict] = []

        def follow(limit: int | None, headers=None, params=None):
            for event in sse(api, path, headers=headers, params={"deltas": "false", **(params or {})}):
                assert event["event"] in ("entry", "end"), event
                got.append(event)
                if event["event"] == "end" or (limit and sum(e["event"] == "entry" for e in got) >= limit):
                    return

        follow(4)  # a connection dropped by the client
        follow(8, headers={"Last-Event-ID": got[-1]["id"]})
        # The server crashes mid-stream; the client reconnects to the restarted one with the last id it saw.
        try:
            for event in sse(api, path, headers={"Last-Event-ID": got[-1]["id"]}, params={"deltas": "false"}):
                got.append(event)
                if sum(e["event"] == "entry" for e in got) >= 12:
                    srv.kill()
        except httpx.HTTPError:
            pass
        assert srv.proc.poll() is not None
        srv.start()
        follow(None, headers={"Last-Event-ID": got[-1]["id"]}, params={"until_idle": "true"})
        assert got[-1]["event"] == "end"
        assert api.get(f"/api/sessions/{sid}").json()["state"] == "idle"

        entries = [e for e in got if e["event"] == "entry"]
        expected = event_ids(r, sid)
        assert [e["id"] for e in entries] == expected  # nothing missed, nothing repeated
        assert any("." in i for i in expected)  # commits of several entries were among them
        stored = api.get(f"/api/sessions/{sid}/transcript", params={"limit": 5000}).json()["entries"]
        assert [json.loads(e["data"])["entry"] for e in entries] == stored
        assert all(json.loads(e["data"])["id"] == e["id"] for e in entries)
        assert "Steady done." in json.dumps(stored)

        # Resuming from any id, in the middle of a commit too, sends exactly what follows it.
        for i, eid in enumerate(expected):
            if "." not in eid and i % 3:
                continue
            rest = [e["id"] for e in sse(api, path, headers={"Last-Event-ID": eid},
                                         params={"deltas": "false", "until_idle": "true"}) if e["event"] == "entry"]
            assert rest == expected[i + 1:], eid
        after = [e["id"] for e in sse(api, path, params={"after": expected[2], "until_idle": "true"})
                 if e["event"] == "entry"]
        assert after == expected[3:]
        assert [e["event"] for e in sse(api, path, headers={"Last-Event-ID": expected[-1]},
                                        params={"until_idle": "true"})] == ["end"]
        bad = api.get(path, headers={"Last-Event-ID": "12-x"})
        assert bad.status_code == 400 and "Invalid event id '12-x'" in bad.json()["detail"]


def test_a_live_stream_sends_new_entries_and_deltas_and_ends_when_idle(served, workspace):
    srv, admin, _ = served
    with srv.client(admin) as api:
        sid = create(api, workspace)["id"]
        events = sse(api, f"/api/sessions/{sid}/events", params={"until_idle": "false"})
        sent = api.post(f"/api/sessions/{sid}/messages", json={"message": "steady live"})
        assert sent.status_code == 202
        seen = []
        for event in events:
            seen.append(event)
            if event["event"] == "entry" and "Steady done." in event["data"]:
                break
        events.close()
        kinds = {e["event"] for e in seen}
        assert {"entry", "delta"} <= kinds, kinds
        assert "Step 3." in "".join(json.loads(e["data"])["text"] for e in seen if e["event"] == "delta")
        wait_idle(api, sid)
        ended = list(sse(api, f"/api/sessions/{sid}/events", params={"until_idle": "true", "deltas": "false"}))
        assert ended[-1]["event"] == "end" and [e["id"] for e in ended[:-1]] == event_ids(srv.cluster.store.r, sid)
