"""Background shells through a session's steps (fakeredis, steps inline): the permission check still
decides a background call, and cancelling or ending the session stops its shells."""

from __future__ import annotations

import re
import time

import pytest

from demo.scripted import ToolUse, Turn
from tests.conftest import running
from tests.inline import Inline, scripted_model
from tests.session_kw import create as create_session
from tests.unit.test_tools_bash import gone, marker
from workflows.models import RuleSet
from workflows.models.options import SessionOptions
from workflows.shells import ShellStore, shutdown


@pytest.fixture(autouse=True)
def no_shell_left():
    yield
    shutdown()


class Agent:
    """Starts ``command`` in the background, reads it once with BashOutput, then answers; keeps the results."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.results: list[str] = []

    def __call__(self, body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and last and last[-1].get("type") == "tool_result":
            content = last[-1]["content"]
            self.results.append(content if isinstance(content, str) else content[0]["text"])
        if len(self.results) == 0:
            return Turn(tool_uses=[ToolUse(name="Bash", input={"command": self.command, "run_in_background": True})])
        started = re.search(r"with ID: ([0-9a-f]{6})", self.results[0])
        if len(self.results) == 1 and started:
            return Turn(tool_uses=[ToolUse(name="BashOutput", input={"bash_id": started.group(1)})])
        return Turn(text="done")

    @property
    def shell_id(self) -> str:
        return re.search(r"with ID: ([0-9a-f]{6})", self.results[0]).group(1)


def run(engine, ws, agent: Agent, **session) -> str:
    if isinstance(session.get("rules"), str):
        kind, rule = session["rules"].split(" ", 1)
        session["rules"] = RuleSet()
        session["rules"].add(kind, rule, "test")
    rec = create_session(engine, str(ws), model=scripted_model(agent), auto_memory=False, **session)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "start it"))
    inline.drain()
    return rec.id


def test_a_session_starts_reads_and_cancelling_stops_its_shell(engine, ws):
    m = marker()
    agent = Agent(f"echo up; sleep {m}")
    sid = run(engine, ws, agent, permission_mode="bypassPermissions")
    assert agent.results[0].startswith("Command running in background with ID: ")
    assert agent.results[1].startswith("<status>running</status>")
    assert running(m)
    engine.stop(sid)
    assert gone(m, 6.0)
    deadline = time.monotonic() + 5
    while ShellStore(engine.store.r).status(sid, agent.shell_id) == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    info = ShellStore(engine.store.r).info(sid, agent.shell_id)
    assert (info["status"], info["kill"]) == ("killed", "the session was cancelled")


def test_ending_the_session_stops_its_shells(engine, ws):
    m = marker()
    agent = Agent(f"sleep {m}")
    sid = run(engine, ws, agent, permission_mode="bypassPermissions")
    assert running(m)
    engine.end_session(sid, "prompt_input_exit")
    assert gone(m, 6.0)


@pytest.mark.parametrize("session, why", [
    ({"permission_mode": "plan"}, "plan mode"),
    ({"permission_mode": "bypassPermissions", "rules": "deny Bash(sleep:*)"}, "deny rule Bash(sleep:*)"),
    ({"permission_mode": "default", "asks": "deny"}, "needs approval"),
])
def test_the_background_flag_never_bypasses_the_permission_check(engine, ws, session, why):
    m = marker()
    agent = Agent(f"touch started.txt; sleep {m}")  # touch writes: plan mode refuses it, default mode asks
    run(engine, ws, agent, **session)
    assert why in agent.results[0] and "running in background" not in agent.results[0]
    assert not running(m) and not (ws / "started.txt").exists()


def test_a_background_start_whose_worker_died_is_not_run_again_and_says_what_that_means(engine, ws, settings):
    m = marker()
    agent = Agent(f"sleep {m}")
    rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(agent), no_memory=True, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "start it"))
    inline.run(1)
    (tool_step,) = list(inline.queue)
    inline.queue.clear()
    assert engine.claim(rec.id, tool_step.id, "dead").step is not None  # its worker died mid-call
    inline.dispatch(engine.reap(time.time() + settings.lease_seconds + 1))
    inline.drain()
    assert not running(m)
    assert "outcome is unknown" in agent.results[0]
    assert agent.results[0].endswith("A background shell dies with the worker that runs it, and cancelling the "
                                     "session stops any that still run.")
