"""The inbox is a queue across a cancel, and a run's figures agree everywhere they are shown
(the installed CLI, real worker processes, the real SDK against the fake Messages API)."""

from __future__ import annotations

import json
import re

import pytest

from demo.scripted import ScriptUsage, ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer, last_prompt
from workflows.models import ResultEntry, SystemEntry, UserEntry

pytestmark = pytest.mark.e2e

BYPASS = ("--permission-mode", "bypassPermissions")


def echo(body: dict) -> Turn:
    """A Bash call per prompt (``sleep 90`` for "slow ...", else ``sleep 3``), then ``answer to: <prompt>``."""
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and last and last[-1].get("type") == "tool_result":
        return Turn(text=f"answer to: {last_prompt(body)}", usage=ScriptUsage(input_tokens=1500, output_tokens=40))
    pause = 90 if last_prompt(body).startswith("slow") else 3  # cancelled before it ends
    return Turn(text="working", tool_uses=[ToolUse(name="Bash", input={"command": f"sleep {pause}"})],
                usage=ScriptUsage(input_tokens=1200, output_tokens=80))


@pytest.fixture
def api(cluster):
    with FakeMessagesServer(echo) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        yield server


def prompts(cluster, sid):
    return [e.message.text() for e in cluster.store.entries(sid) if isinstance(e, UserEntry) and e.origin == "prompt"]


def results(cluster, sid):
    return [e for e in cluster.store.entries(sid) if isinstance(e, ResultEntry)]


def busy_with_two_queued(cluster, workspace) -> str:
    out = cluster.mainsail("submit", *BYPASS, "--no-memory", "slow zero", cwd=workspace)
    assert out.returncode == 0, out.stderr
    sid = out.stdout.strip()
    wait_for(lambda: cluster.store.get_session(sid).state.value == "running_tools", 30, what="running tools")
    for n, msg in enumerate(("first", "second"), 1):
        out = cluster.mainsail("send", sid[:8], msg, cwd=workspace)
        assert out.returncode == 0 and f"queued as message {n} of {n}" in out.stdout, out.stdout + out.stderr
    listing = cluster.mainsail("sessions", cwd=workspace).stdout
    assert "QUEUED" in listing and re.search(rf"{sid[:8]}\s+running_tools\s+2\s", listing), listing
    shown = cluster.mainsail("show", sid[:8], "--no-transcript", cwd=workspace).stdout
    assert "running_tools  (2 queued: they run next, in the order sent" in shown
    assert "queued 1   first" in shown and "queued 2   second" in shown
    return sid


def test_after_a_cancel_the_queued_messages_run_next_in_the_order_sent(cluster, workspace, api):
    sid = busy_with_two_queued(cluster, workspace)
    out = cluster.mainsail("cancel", sid[:8], cwd=workspace)
    assert out.returncode == 0, out.stderr
    assert f"Cancelled session {sid[:8]} (it was running_tools). Its next queued message runs now: 'first' " \
           "(1 more queued)" in out.stdout, out.stdout
    out = cluster.mainsail("send", sid[:8], "third", cwd=workspace)
    # behind "second", or (a slow machine: both ran already) it starts at once; either way it runs last
    assert "is busy; queued as message" in out.stdout or "it is working on it" in out.stdout, out.stdout
    wait_for(lambda: len(results(cluster, sid)) == 4, 60, what="four results")
    assert prompts(cluster, sid) == ["slow zero", "first", "second", "third"]
    assert [r.result for r in results(cluster, sid)] == ["Cancelled by user", "answer to: first",
                                                          "answer to: second", "answer to: third"]
    wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 10, what="idle")
    assert "(" not in cluster.mainsail("show", sid[:8], "--no-transcript", cwd=workspace).stdout.split(
        "state", 1)[1].splitlines()[0], "idle with nothing queued"


@pytest.mark.parametrize("how", ["cancel --clear", "send --clear"])
def test_clearing_the_queue_drops_what_waits(cluster, workspace, api, how):
    sid = busy_with_two_queued(cluster, workspace)
    if how == "cancel --clear":
        out = cluster.mainsail("cancel", "--clear", sid[:8], cwd=workspace)
        assert "dropped 2 messages queued; it is idle now." in out.stdout, out.stdout
        out = cluster.mainsail("send", sid[:8], "third", cwd=workspace)
        expected = ["slow zero", "third"]
    else:
        out = cluster.mainsail("send", "--clear", sid[:8], "third", cwd=workspace)
        assert "Dropped 2 messages queued for session" in out.stdout and "'first', 'second'" in out.stdout
        assert "queued as message 1 of 1" in out.stdout, out.stdout
        cluster.mainsail("cancel", sid[:8], cwd=workspace)
        expected = ["slow zero", "third"]
    wait_for(lambda: len(results(cluster, sid)) == 2, 60, what="two results")
    assert prompts(cluster, sid) == expected


def shown_row(text: str, label: str) -> tuple[int, float]:
    m = re.search(rf"{label}\s+([\d,]+) tokens\s+\$(\d+\.\d{{4}})", text)
    assert m, (label, text)
    return int(m.group(1).replace(",", "")), float(m.group(2))


def test_the_json_result_the_closing_line_and_show_agree(cluster, workspace, api):
    out = cluster.mainsail("run", "-p", *BYPASS, "--model", "claude-sonnet-4-6", "--output-format", "json", "why?",
                           cwd=workspace)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    sid = data["session_id"]
    main_tokens = sum(data["usage"][k] for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens"))
    assert main_tokens == 1200 + 80 + 1500 + 40
    assert data["total_cost_usd"] == pytest.approx((2700 * 3 + 120 * 15) / 1e6)  # Sonnet prices
    assert data["cost_breakdown"]["main"]["cost_usd"] == data["total_cost_usd"]
    assert sum(m["costUSD"] for m in data["modelUsage"].values()) == pytest.approx(data["total_cost_usd"])
    assert data["cost_breakdown"]["memory"]["saving"] is True, "the extraction runs after the answer"

    def settled():
        rec = cluster.store.get_session(sid)
        titled = rec.title_step and cluster.store.get_step(sid, rec.title_step).finished
        return rec.state.value == "idle" and not rec.saving_memory() and titled

    wait_for(settled, 30, what="the memory extraction and the title")
    rec = cluster.store.get_session(sid)
    forks = [e for e in cluster.store.entries(sid) if isinstance(e, SystemEntry) and e.usage is not None]
    assert forks and all(e.cost_usd > 0 for e in forks)
    fork_tokens = sum(e.usage.total for e in forks)
    fork_cost = sum(e.cost_usd for e in forks)
    # the session's title: a call of the small model beside the runs, in the session's totals only
    title_tokens, title_cost = rec.usage_by_kind["title"].total, rec.cost_by_kind["title"]

    show = cluster.mainsail("show", sid[:8], cwd=workspace).stdout
    assert shown_row(show, "main loop") == (main_tokens, round(data["total_cost_usd"], 4))
    assert shown_row(show, "memory extraction") == (fork_tokens, round(fork_cost, 4))
    assert shown_row(show, "session title") == (title_tokens, round(title_cost, 4))
    assert shown_row(show, "claude-sonnet-4-6") == (rec.usage.total - title_tokens, round(rec.cost_usd - title_cost, 4))
    assert rec.usage.total == main_tokens + fork_tokens + title_tokens
    assert rec.cost_usd == pytest.approx(data["total_cost_usd"] + fork_cost + title_cost)
    assert f"cost        ${rec.cost_usd:.4f}" in show
    assert (f"last run    ${data['total_cost_usd']:.4f} · {main_tokens:,} tokens (+ memory ${fork_cost:.4f}, "
            f"{fork_tokens:,} tokens; ${rec.cost_usd - title_cost:.4f} · {rec.usage.total - title_tokens:,} tokens "
            "in all)") in show
    # The transcript's closing line says what the json said, and names the memory as saving.
    assert (f"✓ session {sid[:8]} · 2 turns · {main_tokens:,} tokens · ${data['total_cost_usd']:.4f} "
            "(+ memory: saving)") in show
    # Each fork's line says what it cost.
    assert f"· ${forks[0].cost_usd:.4f}, {forks[0].usage.total:,} tokens" in show
