"""The console's inbox is not blind (issue 26, items 10 and 11), in a real browser (Debian chromium)
against ``mainsail serve`` and a real worker: an Edit waiting for approval shows its diff (coloured
lines), and a call that offers no "always" has no Always button, and the API refuses an "always"
answer to it with a 409 instead of approving it once."""

from __future__ import annotations

import httpx
import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.e2e.test_console_browser import ARTIFACTS, WAIT_MS, browser, server, sign_in  # noqa: F401 (fixtures)
from tests.fakeapi import FakeMessagesServer
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.e2e

UNRULY = "echo $(date) > when.txt"  # a substitution: no rule can cover it


def script() -> Script:
    return Script(turns=[
        Turn(text="Reading first.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
        Turn(text="Fixing.", tool_uses=[ToolUse(name="Edit", input={
            "file_path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"})]),
        Turn(text="Noting the time.", tool_uses=[ToolUse(name="Bash", input={"command": UNRULY})]),
        Turn(text="Done."),
    ])


def test_the_inbox_shows_the_diff_and_no_always_where_none_is_offered(cluster, workspace, server, browser):  # noqa: F811
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    token, _ = TokenStore(cluster.store.r).create("alice", admin=True)
    auth = {"Authorization": f"Bearer {token}"}
    with FakeMessagesServer(script()) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        errors: list[str] = []
        context, page = sign_in(browser, server, token, errors)
        created = httpx.post(f"{server}/api/sessions", headers=auth, timeout=30,
                             json={"workspace": str(workspace), "prompt": "Fix calc.py",
                                   "approval_timeout_seconds": 600})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        cluster.wait_state("awaiting_permission", timeout=90)

        # The Edit (rendered on the server): its diff, made when the call asked, coloured; Always is offered.
        page.goto(f"{server}/approvals")
        item = page.locator("li.request")
        diff = item.locator("pre.diff")
        assert diff.locator(".del").filter(has_text="return a - b").text_content() == "-    return a - b\n"
        assert diff.locator(".add").filter(has_text="return a + b").text_content() == "+    return a + b\n"
        assert diff.locator(".hunk").count() == 1 and diff.locator(".file").count() == 2
        assert item.locator("button.always").count() == 1
        page.screenshot(path=str(ARTIFACTS / "approvals-diff.png"), full_page=True)
        session = context.new_page()  # the session page shows the same diff under its request
        session.goto(f"{server}/sessions/{sid}")
        ask = session.locator("#transcript .ask pre.diff")
        ask.wait_for(timeout=WAIT_MS)
        assert ask.locator(".add").filter(has_text="return a + b").text_content() == "+    return a + b\n"
        session.close()
        item.locator("button.approve").click()
        page.locator("#status").filter(has_text="Approved Edit").wait_for(timeout=WAIT_MS)

        # The Bash line no rule can cover: added by the page's refresh, with no Always button.
        page.locator("li.request pre.prompt").filter(has_text=UNRULY).wait_for(timeout=WAIT_MS)
        item = page.locator("li.request")
        assert "(a)lways is not offered" in item.locator("pre.prompt").inner_text()
        assert item.locator("button.always").count() == 0 and item.locator("button.approve").count() == 1
        (pending,) = httpx.get(f"{server}/api/approvals", headers=auth, timeout=30).json()
        assert pending["always_offered"] is False and pending["request"]["diff"] == ""
        refused = httpx.post(f"{server}/api/sessions/{sid}/approve", headers=auth, timeout=30,
                             json={"request": pending["request"]["id"], "always": True})
        assert refused.status_code == 409 and 'does not offer "always"' in refused.json()["detail"]
        page.reload()  # the page as the server renders it: no Always button either
        item = page.locator("li.request")
        assert item.locator("button.always").count() == 0 and item.locator("button.approve").count() == 1
        page.screenshot(path=str(ARTIFACTS / "approvals-no-always.png"), full_page=True)
        item.locator("button.approve").click()
        page.locator("#empty").wait_for(state="visible", timeout=WAIT_MS)
        wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 60, what="the session to finish")
        assert (workspace / "when.txt").exists() and "a + b" in (workspace / "calc.py").read_text()
        context.close()
        assert errors == [], errors
