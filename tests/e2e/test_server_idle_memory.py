"""`GET /api/sessions/{id}/events?until_idle=true` ends only once the session is really idle: its memory
extraction (the fork after a final answer, the ``extracting`` state) committed, as `mainsail -p` waits for
it (issue 26, item 18). A real `mainsail serve`, a real worker, the fake Messages API holding the
extraction's model call until the stream has sent the answer."""

from __future__ import annotations

import json
import threading

import pytest

from demo.scripted import ScriptedMessagesAPI, Turn, default_fork_turn
from statemachines import State
from tests.e2e.conftest import wait_for
from tests.e2e.serving import Serve, sse
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e


def test_until_idle_ends_after_the_memory_note_commits(cluster, workspace):
    release = threading.Event()

    def main(body: dict) -> Turn:
        return Turn(text="All done.")

    def extract(body: dict) -> Turn:
        release.wait(120)  # held until the stream has sent the answer
        return default_fork_turn("extract", body, ScriptedMessagesAPI.turn_index(body))

    main.extract = extract
    with FakeMessagesServer(main) as model:
        cluster.env.update({"ANTHROPIC_BASE_URL": model.url, "MAINSAIL_AUTO_MEMORY": "true"})
        cluster.start_worker()
        srv = Serve(cluster).start()
        made = cluster.mainsail("token", "create", "--name", "ops", cwd=workspace)
        assert made.returncode == 0, made.stderr
        with srv.client(made.stdout.strip()) as api:
            created = api.post("/api/sessions", json={"workspace": str(workspace), "prompt": "Say done"})
            assert created.status_code == 201, created.text
            sid = created.json()["id"]
            wait_for(lambda: model.fork_requests("extract"), 60, interval=0.1, what="the memory extraction's call")
            assert cluster.store.get_session(sid).state is State.EXTRACTING
            events = []
            try:
                for event in sse(api, f"/api/sessions/{sid}/events", params={"until_idle": "true", "deltas": "false"}):
                    events.append(event)
                    entry = json.loads(event["data"]).get("entry") or {}
                    if entry.get("type") == "result":
                        release.set()  # the answer is out: now let the extraction finish
            finally:
                release.set()
        entries = [json.loads(e["data"])["entry"] for e in events if e["event"] == "entry"]
        assert events[-1]["event"] == "end"
        kinds = [(e.get("type"), e.get("subtype")) for e in entries]
        assert ("result", "success") in kinds
        assert ("system", "memory") in kinds[kinds.index(("result", "success")):], \
            "the stream ended before the memory extraction committed"
        rec = cluster.store.get_session(sid)
        assert rec.state is State.IDLE and not rec.memory_pending()
