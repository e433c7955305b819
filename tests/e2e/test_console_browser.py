"""The web console in a real browser (Playwright driving the Debian ``chromium`` package headless)
against a real ``mainsail serve`` process, a real worker and the fake Messages API: sign in with a
token, watch the sessions table and a session's transcript update live, approve a pending Bash from
the inbox and see the session go on to its answer. Screenshots of the pages go to tests/artifacts/.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.conftest import free_port
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "console"
COMMAND = "echo approved > approved.txt"
HOSTILE = 'Fix calc.py <img src=x onerror="document.title=1"><script>document.title=2</script>'
WAIT_MS = 60_000  # generous: the machine is often loaded

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium (CI installs it)", allow_module_level=True)


def script() -> Script:
    return Script(turns=[
        Turn(text="Reading first.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
        Turn(text="The bug is the minus.", tool_uses=[ToolUse(name="Edit", input={
            "file_path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"})]),
        Turn(text="Now the command.", tool_uses=[ToolUse(name="Bash", input={"command": COMMAND})]),
        Turn(text="Finished: the command ran and calc.py adds.", stream_delay_seconds=0.02),
        Turn(text="Second answer."),
    ])


@pytest.fixture
def server(cluster, workspace):
    """``mainsail serve`` on a free port (no worker inside: the cluster's worker runs the steps)."""
    port = free_port()
    with open(cluster.tmp / "serve.log", "wb") as log:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen([MAINSAIL, "serve", "--port", str(port), "--no-worker", "--log-level", "warning"],
                                cwd=workspace, env=cluster.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    cluster.procs.append(proc)
    url = f"http://127.0.0.1:{port}"

    def up():
        assert proc.poll() is None, (cluster.tmp / "serve.log").read_text()
        try:
            return httpx.get(f"{url}/signin", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    wait_for(up, 60, interval=0.2, what="mainsail serve to answer")
    return url


@pytest.fixture
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


def watch_errors(page, errors: list[str]) -> None:
    """Collect script errors and CSP violations (Chromium reports both on the console)."""
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))


def test_sign_in_follow_live_approve_from_the_inbox(cluster, workspace, server, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    token, _ = TokenStore(cluster.store.r).create("alice", admin=True)  # (its session gets a bare Edit rule)
    with FakeMessagesServer(script()) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        table = context.new_page()
        watch_errors(table, errors)

        # Sign in: the page asks for a token, then shows the (empty) sessions table.
        table.goto(f"{server}/")
        assert table.url == f"{server}/signin"
        table.fill("#token", token)
        table.click("button[type=submit]")
        table.wait_for_url(f"{server}/")
        (cookie,) = context.cookies()
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == ("mainsail_token", True, "Strict")
        assert token not in table.content()

        # A session started through the API shows up in the open table without a reload.
        created = httpx.post(f"{server}/api/sessions", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                             json={"workspace": str(workspace), "prompt": HOSTILE, "allowed_tools": ["Edit"],
                                   "approval_timeout_seconds": 600})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        cluster.wait_state("awaiting_permission", timeout=90)
        row = table.locator(f'tr[data-id="{sid}"]')
        row.locator(".state-awaiting_permission").wait_for(timeout=WAIT_MS)
        table.screenshot(path=str(ARTIFACTS / "sessions.png"), full_page=True)

        # The session page: prompt as text, tool calls folded, the Edit as a diff, the request waiting.
        session = context.new_page()
        watch_errors(session, errors)
        session.goto(f"{server}/sessions/{sid}")
        transcript = session.locator("#transcript")
        transcript.locator(".ask").wait_for(timeout=WAIT_MS)
        assert transcript.locator(".prompt").first.inner_text() == f"> {HOSTILE}"
        assert session.locator("#transcript img, #transcript script").count() == 0
        assert session.title() != "1" and session.title() != "2"
        edit = transcript.locator('details.call[data-tool="Edit"]')
        assert edit.locator("summary").inner_text().startswith("Edit(calc.py)")
        assert edit.locator(".diff .del").text_content().strip() == "-    return a - b"
        assert edit.locator(".diff .add").text_content().strip() == "+    return a + b"
        assert f"Bash: {COMMAND}" in transcript.locator(".ask").inner_text()
        assert session.locator("#state").inner_text() == "awaiting_permission"
        session.screenshot(path=str(ARTIFACTS / "session.png"), full_page=True)

        # The inbox: the whole command, approved with a click; the item leaves the list.
        inbox = context.new_page()
        watch_errors(inbox, errors)
        inbox.goto(f"{server}/approvals")
        item = inbox.locator("li.request")
        assert COMMAND in item.locator("pre.prompt").inner_text()
        inbox.screenshot(path=str(ARTIFACTS / "approvals.png"), full_page=True)
        item.locator("button.approve").click()
        inbox.locator("#status").filter(has_text=f"Approved Bash: {COMMAND}").wait_for(timeout=WAIT_MS)
        inbox.locator("#empty").wait_for(state="visible", timeout=WAIT_MS)
        assert inbox.locator("li.request").count() == 0

        # The open session page, never reloaded, goes on to the answer and its closing line.
        transcript.locator(".closing").wait_for(timeout=WAIT_MS)
        assert "Finished: the command ran and calc.py adds." in transcript.inner_text()
        assert "approved by user (token:alice)" in transcript.locator(".decision").inner_text()
        assert transcript.locator(".closing").inner_text().startswith(f"session {sid[:8]} · 4 turns")
        bash = transcript.locator('details.call[data-tool="Bash"]')
        assert bash.locator("summary").inner_text().startswith(f"Bash({COMMAND})")
        wait_for(lambda: session.locator("#state").inner_text() == "idle", 60, what="the state label to say idle")
        wait_for(lambda: session.locator("#waiting").inner_text() == "0 request(s) in the inbox", 60,
                 what="the header to say nothing waits")
        assert (workspace / "approved.txt").read_text() == "approved\n"
        assert (workspace / "calc.py").read_text().count("return a + b") == 1
        session.locator("details.call").first.click()  # unfold one call for the screenshot

        # The message box sends through the API; the reply arrives on the same open stream.
        session.fill("#message", "Thanks, once more")
        session.click("#send-button")
        transcript.locator(".prompt").filter(has_text="> Thanks, once more").wait_for(timeout=WAIT_MS)
        transcript.locator(".text").filter(has_text="Second answer.").wait_for(timeout=WAIT_MS)
        # The closing line is its own stream entry, after the answer: wait for it, do not race it.
        wait_for(lambda: transcript.locator(".closing").count() == 2, 60, what="the second closing line")
        session.screenshot(path=str(ARTIFACTS / "session-answered.png"), full_page=True)

        overview = context.new_page()
        watch_errors(overview, errors)
        overview.goto(f"{server}/overview")
        assert "1 live worker(s)" in overview.locator("#workers").inner_text()
        assert overview.locator(".chart").count() == 4
        overview.screenshot(path=str(ARTIFACTS / "overview.png"), full_page=True)

        # Signing out clears the cookie: the pages send the browser back to sign in.
        table.click("form.signout button")
        table.wait_for_url(f"{server}/signin")
        assert context.cookies() == []
        context.close()
        assert errors == []


def sign_in(browser, server: str, token: str, errors: list[str]):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watch_errors(page, errors)
    page.goto(f"{server}/signin")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url(f"{server}/")
    return context, page


def test_start_a_session_from_the_console(cluster, workspace, server, browser):
    """The sessions page's form starts a session as `mainsail submit` would and opens its live page; a
    refusal (a workspace the server does not have) is said on the status line; a read-only token gets
    no form."""
    token, _ = TokenStore(cluster.store.r).create("bob")
    reader, _ = TokenStore(cluster.store.r).create("carol", read_only=True)
    with FakeMessagesServer(Script(turns=[Turn(text="Started from the console.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        errors: list[str] = []
        context, page = sign_in(browser, server, token, errors)
        page.click("#new-session summary")
        page.fill("#ns-workspace", "/no/such/dir")
        page.fill("#ns-prompt", "Say hello")
        page.click("#new-session-form button[type=submit]")
        page.locator("#status.error").filter(has_text="/no/such/dir").wait_for(timeout=WAIT_MS)
        assert page.url == f"{server}/"
        page.fill("#ns-workspace", str(workspace))
        page.select_option("#ns-mode", "plan")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "new-session.png"), full_page=True)
        page.click("#new-session-form button[type=submit]")
        page.wait_for_url(f"{server}/sessions/*", timeout=WAIT_MS)
        sid = page.url.rsplit("/", 1)[1]
        transcript = page.locator("#transcript")
        transcript.locator(".closing").wait_for(timeout=WAIT_MS)
        assert transcript.locator(".prompt").first.inner_text() == "> Say hello"
        assert "Started from the console." in transcript.inner_text()
        rec = cluster.store.get_session(sid)
        assert (rec.workspace, rec.permission_mode.value) == (str(workspace), "plan")
        context.close()

        context, page = sign_in(browser, server, reader, errors)
        assert page.locator("#new-session").count() == 0
        context.close()
        assert errors == [] or all("400" in e or "Failed to load resource" in e for e in errors), errors
