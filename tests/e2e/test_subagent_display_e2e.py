"""Sub-agents on screen, through the installed command: a session makes two Task calls with the same prompt
(a real worker process, a private Redis, the real SDK against the fake Messages API); ``mainsail show``
prints each Task call under its own label with its own child's tool calls and results right under it."""

from __future__ import annotations

import threading

import pytest

from demo.scripted import ToolUse, Turn
from tests.fakeapi import FakeMessagesServer, assistant_turns, first_prompt
from workflows.models import AssistantEntry

pytestmark = pytest.mark.e2e

SAME = {"description": "read a file", "prompt": "child: read the file you are given", "subagent_type": "general-purpose"}


class TwoSameTasks:
    """The parent makes two identical Task calls; the first child to ask reads a.txt, the second b.txt."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.files = iter(["a.txt", "b.txt"])
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Turn:
        if first_prompt(body).startswith("child:"):
            if assistant_turns(body) == 0:
                with self.lock:
                    name = next(self.files)
                return Turn(tool_uses=[ToolUse(name="Read", input={"file_path": str(self.ws / name)})])
            return Turn(text="I read it.")
        if assistant_turns(body) == 0:
            return Turn(text="Two agents.", tool_uses=[ToolUse(id="toolu_one", name="Task", input=SAME),
                                                       ToolUse(id="toolu_two", name="Task", input=SAME)])
        return Turn(text="Both read.")


def test_show_prints_each_childs_tool_calls_under_its_own_task_call(cluster, workspace):
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("bravo\nbravo\n")
    with FakeMessagesServer(TwoSameTasks(workspace)) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        run = cluster.mainsail("run", "-p", "--no-memory", "--permission-mode", "bypassPermissions",
                               "read two files with agents", cwd=workspace)
        assert run.returncode == 0, run.stderr
    (sid,) = [s for s in cluster.store.session_ids() if not cluster.store.get_session(s).parent_session_id]
    shown = cluster.mainsail("show", sid[:8], cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout.splitlines()
    children = {c.parent_tool_use_id: c for c in cluster.store.get_sessions(cluster.store.get_session(sid).children)}
    for label, call in (("read a file", "toolu_one"), ("read a file #2", "toolu_two")):
        at = out.index(f"⏺ Task({label})")
        (read,) = [tu for e in cluster.store.entries(children[call].id) if isinstance(e, AssistantEntry)
                   for tu in e.message.tool_uses()]
        name = read.input["file_path"].rsplit("/", 1)[1]
        lines = 1 if name == "a.txt" else 2
        # right under the call: its child's Read (the path relative to the workspace), its result, its end
        assert out[at + 1] == f"    ⏺ Read({name})", shown.stdout
        assert out[at + 2] == f"      ⎿  Read {lines} line{'s' if lines > 1 else ''}", shown.stdout
        assert out[at + 3].startswith("    ✓ sub-agent "), shown.stdout
    assert {children["toolu_one"].id, children["toolu_two"].id} == set(cluster.store.get_session(sid).children)
