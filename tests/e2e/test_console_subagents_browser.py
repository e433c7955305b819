"""The console's transcript of a session with sub-agents, in a real browser (Playwright, Debian ``chromium``)
against ``mainsail serve``, a real worker and the fake Messages API: each sub-agent's lines sit inside its
own Task call's block (before the run's closing line), and two Task calls with one description are told
apart (``x``, ``x #2``); tool paths inside the workspace read relative to it."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.test_console_browser import WAIT_MS, browser, server, watch_errors  # noqa: F401 - fixtures
from tests.e2e.test_console_sessions_browser import HEAD
from tests.e2e.test_subagent_display_e2e import TwoSameTasks
from tests.fakeapi import FakeMessagesServer
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.e2e


def test_sub_agents_lines_sit_inside_their_task_calls_block(cluster, workspace, server, browser):  # noqa: F811
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("bravo\nbravo\n")
    token, _ = TokenStore(cluster.store.r).create("alice", admin=True)
    with FakeMessagesServer(TwoSameTasks(workspace)) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        created = httpx.post(f"{server}/api/sessions", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                             json={"workspace": str(workspace), "prompt": "read two files with agents"})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        cluster.wait_state("idle", timeout=120)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_cookies([{"name": "mainsail_token", "value": token, "url": server}])
        page = context.new_page()
        errors: list[str] = []
        watch_errors(page, errors)
        page.goto(f"{server}/sessions/{sid}")
        transcript = page.locator("#transcript")
        transcript.locator(".closing").wait_for(timeout=WAIT_MS)
        tasks = transcript.locator('details.call[data-tool="Task"]')
        tasks.nth(1).locator(".agent-lines .child", has_text="answered").wait_for(timeout=WAIT_MS)
        heads = [tasks.nth(i).locator("> summary").evaluate(HEAD) for i in range(tasks.count())]
        assert heads == ["Task(read a file)", "Task(read a file #2)"], heads
        reads = set()
        for i in range(2):
            lines = tasks.nth(i).locator(".agent-lines .child").all_inner_texts()
            assert len(lines) == 3, lines  # its child's Read, the Read's result, its end
            assert lines[0] in ("Read(a.txt)", "Read(b.txt)"), lines
            assert lines[1].strip().startswith("Read ") and lines[2].startswith("answered"), lines
            reads.add(lines[0])
        assert reads == {"Read(a.txt)", "Read(b.txt)"}
        # no sub-agent line outside a Task call's block, none after the closing line
        assert transcript.locator(".child").count() == transcript.locator("details.call .agent-lines .child").count()
        assert page.locator("#transcript > .closing ~ .child").count() == 0
        assert not errors, errors
        context.close()
