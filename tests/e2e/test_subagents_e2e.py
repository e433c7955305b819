"""Sub-agents as a user meets them: Task calls run as child sessions on real worker processes (a private
Redis, the real SDK against the fake Messages API), in parallel, through a SIGKILL, a cancel and an ask
answered with ``mainsail approve``."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer, assistant_turns, first_prompt
from workflows.engine.handback import report_of
from workflows.models import AssistantEntry, ResultEntry, StepKind, UserEntry

pytestmark = pytest.mark.e2e


def tasks(n: int) -> Turn:
    return Turn(text=f"Starting {n} agents.", tool_uses=[
        ToolUse(id=f"toolu_task{i}", name="Task", input={"description": f"job {i}", "prompt": f"child job {i}",
                                                          "subagent_type": "general-purpose"})
        for i in range(1, n + 1)])


class Family:
    """The fake model: the parent asks for ``n`` Task calls, then sums up; each child runs ``child``."""

    def __init__(self, n: int, child) -> None:
        self.n, self.child = n, child
        self.calls: list[tuple[str, float, float]] = []  # (child prompt, start, end) of each child call
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Turn:
        prompt = first_prompt(body)
        if prompt.startswith("child job"):
            turn = self.child(body, prompt)
            with self.lock:
                now = time.monotonic()
                self.calls.append((prompt, now, now + turn.delay_seconds))
            return turn
        return tasks(self.n) if assistant_turns(body) == 0 else Turn(text="All agents reported.")


def tool_results(cluster, sid) -> dict[str, list]:
    out: dict[str, list] = {}
    for e in cluster.store.entries(sid):
        if isinstance(e, UserEntry) and e.origin == "tool_result":
            for b in e.message.blocks():
                out.setdefault(b.tool_use_id, []).append(b)
    return out


def run_p(cluster, ws, *args: str) -> subprocess.Popen:
    return subprocess.Popen([MAINSAIL, "run", "-p", "--no-memory", *args], cwd=ws, env=cluster.env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def test_three_children_run_in_parallel_on_two_workers_and_a_sigkill_loses_no_answer(cluster, workspace):
    family = Family(3, lambda body, prompt: Turn(text=f"answer to {prompt}", delay_seconds=6.0))  # overlap under load
    with FakeMessagesServer(family) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        workers = [cluster.start_worker(), cluster.start_worker()]
        proc = run_p(cluster, workspace, "--permission-mode", "bypassPermissions", "--output-format", "stream-json",
                     "split the work in three")
        wait_for(lambda: len(family.calls) >= 3, 60, what="three child model calls")
        (sid,) = [s for s in cluster.store.session_ids() if not cluster.store.get_session(s).parent_session_id]
        children = cluster.store.get_session(sid).children
        assert len(children) == 3
        # Kill the worker running a child's model call, mid-call: the reaper takes the step back.
        running = {s.owner for c in children for s in cluster.store.steps(c)
                   if s.kind is StepKind.MODEL and s.status.value == "running" and s.owner}
        victim = next((w for w in workers if any(f":{w.pid}:" in o for o in running)), workers[0])
        cluster.kill(victim)
        out, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "All agents reported."
    # the children's messages stream with their Task call's id, as Claude Code's do
    nested = [(x["parent_tool_use_id"], x["type"]) for x in lines if x.get("parent_tool_use_id")]
    assert {p for p, _ in nested} == {"toolu_task1", "toolu_task2", "toolu_task3"}
    assert all(x["session_id"] == lines[0]["session_id"] for x in lines if x["type"] != "system")
    starts = sorted(start for _, start, _ in family.calls[:3])
    ends = sorted(end for _, _, end in family.calls[:3])
    assert starts[-1] < ends[0], f"the first three child calls did not overlap: {family.calls}"
    results = tool_results(cluster, sid)
    for i in (1, 2, 3):
        (block,) = results[f"toolu_task{i}"]  # recorded once
        assert report_of(block.content) == f"answer to child job {i}" and not block.is_error
    for child in children:
        entries = cluster.store.entries(child)
        assert sum(isinstance(e, AssistantEntry) for e in entries) == 1, "a child's answer was recorded twice"
        assert [e.subtype for e in entries if isinstance(e, ResultEntry)] == ["success"]
    parent = cluster.store.get_session(sid)
    assert parent.usage_by_kind["subagent"].output_tokens > 0
    tree = cluster.mainsail("sessions", "--tree", cwd=workspace).stdout
    assert re.search(rf"{sid[:8]}\s+idle\s+-\s+3\s", tree), tree
    assert tree.count("└ [general-purpose] job") == 3, tree


def test_cancelling_the_parent_leaves_no_child_running(cluster, workspace):
    family = Family(2, lambda body, prompt: Turn(tool_uses=[ToolUse(name="Bash", input={
        "command": f"echo {prompt[-1]} >> started.txt; sleep 30.6161"})]))
    with FakeMessagesServer(family) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        sid = cluster.mainsail("submit", "--no-memory", "--permission-mode", "bypassPermissions", "two jobs",
                               cwd=workspace).stdout.strip()
        wait_for(lambda: (workspace / "started.txt").exists()
                 and len((workspace / "started.txt").read_text().split()) == 2, 60, what="both children's commands")
        out = cluster.mainsail("cancel", sid[:8], cwd=workspace)
        assert out.returncode == 0 and "Cancelled" in out.stdout, out.stdout + out.stderr
        children = cluster.store.get_session(sid).children
        wait_for(lambda: all(cluster.store.get_session(c).state.value == "idle" for c in children), 20,
                 what="the children to stop")
        wait_for(lambda: subprocess.run(["pgrep", "-f", "sleep 30.6161"], capture_output=True).returncode == 1, 20,
                 what="the children's commands to be killed")
        time.sleep(1.5)  # nothing of theirs comes back to life
        for c in children:
            kid = cluster.store.get_session(c)
            assert kid.state.value == "idle"
            assert [e.subtype for e in cluster.store.entries(c) if isinstance(e, ResultEntry)] == ["cancelled"]
        left = [(s.kind.value, s.status.value) for c in children for s in cluster.store.steps(c)
                if s.status.value in ("pending", "running")]
        assert left == [], left
        assert cluster.store.get_session(sid).state.value == "idle"


def test_a_childs_bash_that_asks_is_pending_under_its_parent_and_approved_there_runs(cluster, workspace):
    def child(body, prompt):
        if assistant_turns(body) == 0:
            return Turn(tool_uses=[ToolUse(name="Bash", input={"command": "touch made-by-child.txt"})])
        return Turn(text="made the file")

    family = Family(1, child)
    with FakeMessagesServer(family) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        sid = cluster.mainsail("submit", "--no-memory", "make a file", cwd=workspace).stdout.strip()

        def listed():
            out = cluster.mainsail("pending", cwd=workspace).stdout
            return "touch made-by-child.txt" in out and out

        listing = wait_for(listed, 60, what="the child's request in mainsail pending")
        assert f"sub-agent general-purpose of session {sid[:8]}" in listing, listing
        assert not (workspace / "made-by-child.txt").exists()
        out = cluster.mainsail("approve", sid[:8], cwd=workspace)  # the parent's id: its child's only request
        assert out.returncode == 0 and "Approved Bash" in out.stdout, out.stdout + out.stderr
        wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 60, what="the parent to finish")
    assert (workspace / "made-by-child.txt").exists()
    (block,) = tool_results(cluster, sid)["toolu_task1"]
    assert report_of(block.content) == "made the file"
    assert "No pending permission requests." in cluster.mainsail("pending", cwd=workspace).stdout
