"""The sessions the console's list and session-page browser tests share (module-scoped: one ``mainsail
serve``, one worker and the fake Messages API for all of tests/e2e/test_console_sessions_browser.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import Cluster, cluster_env, wait_for
from tests.e2e.serving import Serve
from tests.e2e.test_console_browser import CHROMIUM, sync_api
from tests.fakeapi import FakeMessagesServer, assistant_turns, first_prompt
from workflows.store.api_tokens import TokenStore
from workflows.store.redis_store import Store

HOSTILE = 'Fix <img src=x onerror="document.title=1"><script>document.title=2</script> now'
HOSTILE_TITLE = '<b onclick="x()">Bold</b> <img src=x onerror="document.title=4">'
WAITING = ("asking", "approving", "cancelling")  # bob's sessions in ws2, each waiting for its Bash


def command(name: str) -> str:
    """The Bash command the session ``bash: NAME`` asks to run."""
    return f"echo hi > {name}.txt"
AGENT = {"description": "read a file", "prompt": "child: read the file you are given",
         "subagent_type": "general-purpose"}
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}


class Model:
    """The fake model: the session's first prompt says what it does. ``title`` answers the title requests."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.files = iter(["a.txt", "b.txt"] * 4)

    def __call__(self, body: dict) -> Turn:
        prompt, turns = first_prompt(body), assistant_turns(body)
        if prompt.startswith("child:"):
            if turns == 0:
                return Turn(tool_uses=[ToolUse(name="Read", input={"file_path": str(self.ws / next(self.files))})])
            return Turn(text="I read it.")
        if prompt.startswith("bash: ") and turns == 0:
            name = prompt.removeprefix("bash: ")
            return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": command(name)})])
        if prompt.startswith("agents") and turns == 0:
            return Turn(text="Two agents.", tool_uses=[ToolUse(id="toolu_one", name="Agent", input=AGENT),
                                                       ToolUse(id="toolu_two", name="Agent", input=AGENT)])
        return Turn(text="Done.")

    def title(self, body: dict) -> Turn:
        return Turn(text=HOSTILE_TITLE if "<img" in json.dumps(body) else "Tidy work")


@pytest.fixture(scope="module")
def world(redis_server, tmp_path_factory):
    """One server, one worker and these sessions, for every test of the module:
    hostile (alice, ws, idle), needle (alice, ws, idle, titled "Tidy work"), agents (alice, ws, idle, two
    Agent calls), asking, approving and cancelling (bob, ws2, each awaiting a Bash approval), scheduled
    (alice, ws, fired by hand)."""
    tmp = tmp_path_factory.mktemp("consolelist")
    client = redis_server.client()
    client.flushall()
    cluster = Cluster(cluster_env(redis_server.url, tmp / "data"), Store(client), tmp)
    ws, ws2 = tmp / "ws", tmp / "ws2"
    for d in (ws, ws2):
        d.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("bravo\nbravo\n")
    tokens = TokenStore(client)
    alice, _ = tokens.create("alice", admin=True)
    bob, _ = tokens.create("bob", workspaces=[str(ws2)])
    try:
        with FakeMessagesServer(Model(ws)) as api:
            cluster.env["ANTHROPIC_BASE_URL"] = api.url
            cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"
            cluster.start_worker()
            srv = Serve(cluster).start()
            a, b = srv.client(alice), srv.client(bob)

            def start(client, workspace, prompt, **extra):
                made = client.post("/api/sessions", json={"workspace": str(workspace), "prompt": prompt, **extra})
                assert made.status_code == 201, made.text
                return made.json()["id"]

            sid = {"hostile": start(a, ws, HOSTILE), "needle": start(a, ws, "needle: parse the numbers"),
                   "agents": start(a, ws, "agents: read two files")}
            for name in WAITING:
                sid[name] = start(b, ws2, f"bash: {name}", approval_timeout_seconds=600)
            sched = a.post("/api/schedules", json={"cron": "0 3 * * *", "workspace": str(ws),
                                                   "prompt": "nightly: check", "name": "nightly"})
            assert sched.status_code == 201, sched.text
            fired = a.post(f"/api/schedules/{sched.json()['id']}/run")
            assert fired.status_code == 202, fired.text
            sid["scheduled"] = fired.json()["session_id"]

            def settled():
                recs = {k: cluster.store.get_session(v) for k, v in sid.items()}
                return all(r.state.value == ("awaiting_permission" if k in WAITING else "idle") and
                           (k in WAITING or r.title in ("Tidy work", HOSTILE_TITLE)) for k, r in recs.items())

            wait_for(settled, 120, 0.2, "every session to settle and be titled")
            yield SimpleNamespace(url=srv.url, alice=alice, bob=bob, a=a, b=b, sid=sid, ws=ws, ws2=ws2,
                                  schedule=sched.json()["id"], cluster=cluster)
            a.close()
            b.close()
    finally:
        cluster.stop()
        client.flushall()
        client.close()


@pytest.fixture(scope="module")
def chromium():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()
