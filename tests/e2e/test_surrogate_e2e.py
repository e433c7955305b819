"""A lone surrogate from the model (JSON ``"\\udc80"``) leaves the session readable, end to end.

The installed CLI, a real worker, the real anthropic SDK against the fake Messages API and a real
``mainsail serve``: the model sends a lone surrogate in a Write's content, a Read's path and a Bash
command. The run finishes, ``show`` and ``export`` exit 0 and show the repaired text (U+FFFD, noted),
a message queued afterwards runs, and the server's transcript endpoint answers 200.
"""

from __future__ import annotations

import json
import threading

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.e2e.serving import Serve, sse
from tests.fakeapi import FakeMessagesServer
from workflows.models import AssistantEntry
from workflows.store import keys
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.e2e

BAD = "\udc80"


#: Set by a test once its second message is queued: the first model call answers only then.
released = threading.Event()


def model(body: dict) -> Turn:
    """The first prompt gets three tool calls with a lone surrogate each (once :data:`released`, so a
    message sent meanwhile is queued); then an answer holding one; the queued message, its own answer."""
    messages = body["messages"]
    if "second message" in json.dumps(messages[-1]):
        return Turn(text="Second message answered.")
    if sum(1 for m in messages if m["role"] == "assistant") == 0:
        released.wait(60)
        return Turn(text=f"Writing {BAD} now.", tool_uses=[
            ToolUse(name="Write", input={"file_path": "out.txt", "content": f"caf{BAD} latte\n"}),
            ToolUse(name="Read", input={"file_path": f"in{BAD}.txt"}),
            ToolUse(name="Bash", input={"command": f"echo x{BAD}y > bash_out.txt"}),
        ])
    return Turn(text=f"Done {BAD} here.")


@pytest.fixture
def fake(cluster):
    released.clear()
    with FakeMessagesServer(model) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"
        cluster.start_worker()
        yield server


def run_first(cluster, workspace) -> str:
    """Submit the first prompt, queue a second message while its model call is out, and wait for both."""
    out = cluster.mainsail("submit", "--permission-mode", "bypassPermissions", "first: write things",
                           cwd=workspace)
    assert out.returncode == 0, out.stdout + out.stderr
    sid = cluster.session_id()
    wait_for(lambda: cluster.store.get_session(sid).state.value == "querying", 30, what="the first model call")
    sent = cluster.mainsail("send", sid, "second message", cwd=workspace)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert "is busy; queued" in sent.stdout, sent.stdout
    released.set()
    done = cluster.mainsail("watch", sid, cwd=workspace)  # follows until the session is idle
    assert done.returncode == 0, done.stdout + done.stderr
    wait_for(lambda: not cluster.store.inbox(sid) and cluster.store.get_session(sid).state.value == "idle",
             60, what="the queued message to run")
    return sid


def test_a_surrogate_from_the_model_leaves_the_session_readable(cluster, workspace, fake):
    sid = run_first(cluster, workspace)
    texts = [e.message.text() for e in cluster.store.entries(sid) if isinstance(e, AssistantEntry)]
    assert texts == ["Writing \ufffd now.", "Done \ufffd here.", "Second message answered."], texts

    shown = cluster.mainsail("show", sid, cwd=workspace)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "Traceback" not in shown.stdout + shown.stderr
    for line in ("Writing \ufffd now.", "⏺ Read(in\ufffd.txt)", "⏺ Bash(echo x\ufffdy > bash_out.txt)",
                 "text repaired", "message.content.1.input.content", "Second message answered."):
        assert line in shown.stdout, shown.stdout

    exported = cluster.mainsail("export", sid, cwd=workspace)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines() if line.strip()]
    (first,) = [e for e in lines if e.get("type") == "assistant" and "Writing" in json.dumps(e)]
    uses = {b["name"]: b["input"] for b in first["message"]["content"] if b.get("type") == "tool_use"}
    assert uses == {"Write": {"file_path": "out.txt", "content": "caf\ufffd latte\n"},
                    "Read": {"file_path": "in\ufffd.txt"}, "Bash": {"command": "echo x\ufffdy > bash_out.txt"}}
    assert first["mainsail"]["repaired"] == ["message.content.0.text", "message.content.1.input.content",
                                 "message.content.2.input.file_path", "message.content.3.input.command"]

    # Each tool call got a clean answer (no crash): what it wrote, if anything, is the repaired text.
    results = [b for e in lines if e.get("type") == "user" and isinstance(e["message"]["content"], list)
               for b in e["message"]["content"] if b.get("type") == "tool_result"]
    assert len(results) == 3 and not any("Traceback" in json.dumps(b) for b in results)
    assert not (workspace / "out.txt").exists() or (workspace / "out.txt").read_text() == "caf\ufffd latte\n"
    # The next model call was sent the repaired conversation.
    assert "caf\ufffd latte" in json.dumps(fake.requests[-1]["messages"], ensure_ascii=False)


def test_the_servers_transcript_of_a_surrogate_session_answers_200(cluster, workspace, fake):
    sid = run_first(cluster, workspace)
    admin, _ = TokenStore(cluster.store.r).create("admin")
    srv = Serve(cluster).start()
    with srv.client(admin) as api:
        page = api.get(f"/api/sessions/{sid}/transcript", params={"limit": 5000})
        assert page.status_code == 200, page.text
        assert "caf\ufffd latte" in json.dumps(page.json()["entries"], ensure_ascii=False)
        assert api.get(f"/api/sessions/{sid}").status_code == 200
        assert api.get(f"/api/sessions/{sid}/export").status_code == 200


def test_an_entry_that_cannot_be_read_leaves_the_session_readable_and_running(cluster, workspace, fake):
    released.set()
    out = cluster.mainsail("-p", "--permission-mode", "bypassPermissions", "first: write things", cwd=workspace)
    assert out.returncode == 0, out.stdout + out.stderr
    sid = cluster.session_id()
    # Written by hand (or an older version): bytes that are not UTF-8, in the middle of the transcript.
    bad = cluster.store.r.xadd(keys.log(sid), {"entry": b'{"type":"assistant","message":"\xff\xfe"}'}).decode()
    marker = f"Entry {bad} could not be read"

    shown = cluster.mainsail("show", sid, cwd=workspace)
    assert shown.returncode == 0 and marker in shown.stdout, shown.stdout + shown.stderr
    exported = cluster.mainsail("export", sid, cwd=workspace)
    assert exported.returncode == 0 and marker in exported.stdout, exported.stdout + exported.stderr
    watched = cluster.mainsail("watch", sid, cwd=workspace)
    assert watched.returncode == 0 and marker in watched.stdout, watched.stdout + watched.stderr

    admin, _ = TokenStore(cluster.store.r).create("admin")
    srv = Serve(cluster).start()
    with srv.client(admin) as api:
        page = api.get(f"/api/sessions/{sid}/transcript", params={"limit": 5000})
        assert page.status_code == 200, page.text
        assert any(e.get("subtype") == "unreadable" and e["content"].startswith(marker) for e in page.json()["entries"])
        events = [json.loads(ev["data"]) for ev in sse(api, f"/api/sessions/{sid}/events",
                                                         params={"until_idle": "true", "deltas": "false"})
                  if ev["event"] == "entry"]
        assert any(marker in ev["entry"].get("content", "") for ev in events)
        assert api.get(f"/api/sessions/{sid}/export").status_code == 200

    # The next message runs: the marker is left out of the model's context.
    again = cluster.mainsail("-p", "--resume", sid, "second message", cwd=workspace)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip() == "Second message answered."
    assert "could not be read" not in json.dumps(fake.requests[-1])


def test_a_prompt_that_is_not_utf8_runs_and_its_command_returns(cluster, workspace, fake):
    released.set()
    # argv bytes that are not UTF-8 (Python hands them on as lone surrogates): the run starts, is found by
    # the command that started it, and ends; the prompt is stored repaired.
    out = cluster.mainsail("-p", "--permission-mode", "bypassPermissions", "first: caf\udce9", cwd=workspace,
                           timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == "Done \ufffd here.\n"
    prompt = cluster.store.entries(cluster.session_id())[0]
    assert prompt.message.text() == "first: caf\ufffd" and prompt.repaired == ["message.content"]
