"""The console's shell and inbox in a real browser (Playwright driving Debian's ``chromium`` headless) against
``mainsail serve``, a real worker and the fake Messages API, at a desktop size (1280x800) and phone sizes
(390x844, and 360 wide for the no-horizontal-scroll check): every page of the shell (sign-in, costs, overview,
the inbox, a missing session) fits the window, draws SVG icons (no glyph a font may lack), escapes a hostile
session title and keeps the header's counts live; the inbox shows each edit's diff and decides by button
and by key (j/k/a/d, "?" for the list of keys); an error stays until dismissed; browser notifications tell of
requests waiting and a session finishing. Screenshots of each page at each size go to tests/artifacts/console/.

One server, worker and session for the module (its tests run in order: the session's requests are decided
along the way); each test opens its own browser contexts.
"""

from __future__ import annotations

import httpx
import pytest

from demo.scripted import DEMO_FILES, Script, ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, Cluster, cluster_env, wait_for
from tests.e2e.serving import Serve
from tests.e2e.test_console_browser import ARTIFACTS, CHROMIUM, HOSTILE, WAIT_MS, sync_api, watch_errors
from tests.fakeapi import FakeMessagesServer
from workflows.store.api_tokens import TokenStore
from workflows.store.redis_store import Store

pytestmark = pytest.mark.e2e

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
NARROW = {"width": 360, "height": 740}
SIZES = {"desktop": DESKTOP, "phone": PHONE, "narrow": NARROW}
COMMAND = "echo shipped > shipped.txt"
GLYPHS = ("⛵", "⏺", "⎿", "⚡", "✓", "✗", "⏪", "⚠")
# Every Notification the page makes, recorded (and "granted", so the page makes them).
NOTIFICATIONS = """
window.__notes = [];
window.Notification = class {
  constructor(title, options) { window.__notes.push({ title: title, body: (options || {}).body || "" }); }
  static get permission() { return "granted"; }
  static requestPermission() { return Promise.resolve("granted"); }
};
"""


def script() -> Script:
    return Script(turns=[
        Turn(text="Reading first.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
        Turn(text="Two edits.", tool_uses=[
            ToolUse(name="Edit", input={"file_path": "calc.py", "old_string": "    return a - b",
                                        "new_string": "    return a + b"}),
            ToolUse(name="Write", input={"file_path": "NOTES.md", "content": "# Notes\nshipped\n"})]),
        Turn(text="Now the command.", tool_uses=[ToolUse(name="Bash", input={"command": COMMAND})]),
        Turn(text="Done."),
    ])


@pytest.fixture(scope="module")
def stack(redis_server, tmp_path_factory):
    """A worker, ``mainsail serve`` and one session (titled HOSTILE) waiting on its Edit and Write."""
    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed (pip install -e .)")
    tmp = tmp_path_factory.mktemp("shell")
    client = redis_server.client()
    client.flushall()
    cluster = Cluster(cluster_env(redis_server.url, tmp / "data"), Store(client), tmp)
    ws = tmp / "ws"
    ws.mkdir()
    for name, content in DEMO_FILES.items():
        (ws / name).write_text(content)
    with FakeMessagesServer(script()) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        try:
            cluster.start_worker()
            url = Serve(cluster).start().url
            admin, _ = TokenStore(client).create("alice", admin=True)
            reader, _ = TokenStore(client).create("rita", read_only=True)
            created = httpx.post(f"{url}/api/sessions", headers={"Authorization": f"Bearer {admin}"}, timeout=30,
                                 json={"workspace": str(ws), "prompt": HOSTILE, "approval_timeout_seconds": 600})
            assert created.status_code == 201, created.text
            sid = created.json()["id"]
            wait_for(lambda: len(httpx.get(f"{url}/api/approvals", headers={"Authorization": f"Bearer {admin}"},
                                           timeout=30).json()) == 2, 90, what="the Edit and the Write to ask")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            with sync_api.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
                yield {"url": url, "admin": admin, "reader": reader, "sid": sid, "ws": ws, "cluster": cluster,
                       "browser": browser}
                browser.close()
        finally:
            cluster.stop()
            client.flushall()
            client.close()


def context(stack, size: dict, token: str | None, scheme: str = "light"):
    ctx = stack["browser"].new_context(viewport=size, color_scheme=scheme)
    ctx.add_init_script(NOTIFICATIONS)
    if token:
        ctx.add_cookies([{"name": "mainsail_token", "value": token, "url": stack["url"]}])
    return ctx


def fits(page) -> None:
    """No horizontal scroll of the page itself (a wide table scrolls inside its own box)."""
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"{page.url}: the page is {width}px wide in a {inner}px window"


def harmless(page) -> None:
    """The hostile title stayed text: nothing it holds ran or became an element; no glyph icons."""
    assert page.title() not in ("1", "2")
    assert page.locator('img[src="x"], main script').count() == 0
    header = page.locator("header.top").inner_text()
    assert not [g for g in GLYPHS if g in header], header


def shot(page, name: str, size: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"shell-{name}-{size}.png"), full_page=True)


def test_every_page_fits_each_size_with_live_counts(stack):
    url = stack["url"]
    errors: list[str] = []
    pages = {"approvals": "/approvals", "costs": "/costs", "overview": "/overview",
             "missing": "/sessions/0123456789abcdef", "sessions": "/", "session": f"/sessions/{stack['sid']}"}
    ours = {"approvals", "costs", "overview", "missing", "signin"}  # the session pages are sessions.css's
    for size, viewport in SIZES.items():
        ctx = context(stack, viewport, None)
        page = ctx.new_page()
        watch_errors(page, errors)
        page.goto(f"{url}/signin")
        assert page.locator("header.top nav").count() == 0  # signed out: no navigation, no counts
        fits(page)
        shot(page, "signin", size)
        page.fill("#token", stack["admin"])
        page.click("form.signin button[type=submit]")
        page.wait_for_url(f"{url}/")
        for name, path in pages.items():
            answer = page.goto(url + path, wait_until="load")
            if name == "missing":  # the page itself is a 404: Chromium says so once, as an error
                assert answer.status == 404
                wait_for(lambda: "404 (Not Found)" in "".join(errors), 10, what="the 404 to be logged")
                errors.remove(next(e for e in errors if "404 (Not Found)" in e))
            harmless(page)
            # the counts: two requests waiting (the Edit and the Write), no session working
            wait_for(lambda: page.locator("#approvals-count").get_attribute("data-count") == "2", 30,
                     what="the Approvals link to count 2")
            assert page.locator("#running-count").get_attribute("data-count") == "0"
            assert page.locator("header.top nav a.active").count() == 1
            if name in ours:
                fits(page)
            if size != "desktop":  # the header in two rows: brand and tools above, the pages as a tab bar
                nav, brand = page.locator("header.top nav").bounding_box(), page.locator(".brand").bounding_box()
                assert nav["y"] >= brand["y"] + brand["height"] - 1 and nav["width"] <= viewport["width"]
                assert page.locator(".who").is_hidden()
            else:
                assert page.locator(".who").inner_text() == "token alice"
            shot(page, name, size)
        if size == "desktop":  # the inbox's items as the server renders them: each edit with its diff
            page.goto(f"{url}/approvals")
            items = page.locator("li.request")
            assert items.count() == 2 and items.first.locator(".tool-name").inner_text() == "Edit"
            assert items.nth(0).locator("pre.diff .add").filter(has_text="return a + b").count() == 1
            assert items.nth(1).locator("pre.diff .add").filter(has_text="shipped").count() == 1
            assert items.first.locator(".where a").inner_text().startswith("Fix calc.py <img src=x onerror=")
        ctx.close()
    assert errors == [], errors


def test_a_read_only_token_sees_the_inbox_without_its_buttons(stack):
    """... in dark mode: the system's setting picks the colours."""
    ctx = context(stack, PHONE, stack["reader"], scheme="dark")
    page = ctx.new_page()
    errors: list[str] = []
    watch_errors(page, errors)
    page.goto(f"{stack['url']}/approvals")
    assert page.locator("li.request").count() == 2
    assert page.locator("li.request .actions, li.request button").count() == 0
    assert "(read-only)" in page.locator(".who").text_content()
    with page.expect_response(lambda r: r.url.endswith("/api/approvals")):  # a key decides nothing here
        page.keyboard.press("a")
    assert page.locator("li.request").count() == 2
    page.keyboard.press("o")  # opens the selected request's session
    page.wait_for_url(f"{stack['url']}/sessions/{stack['sid']}")
    page.go_back()
    fits(page)
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
    shot(page, "approvals-read-only-dark", "phone")
    ctx.close()
    assert errors == [], errors


def test_the_inbox_by_keyboard_then_by_touch(stack):
    url, cluster = stack["url"], stack["cluster"]
    desk = context(stack, DESKTOP, stack["admin"])
    page = desk.new_page()
    errors: list[str] = []
    watch_errors(page, errors)
    page.goto(f"{url}/approvals")
    items = page.locator("li.request")
    assert items.nth(0).get_attribute("class") == "request selected"  # the first is selected at once

    page.keyboard.press("?")  # the list of keys, closed by Escape; keys wait while it is open
    help_box = page.locator("#help")
    help_box.wait_for(state="visible")
    assert "Approve the selected request" in help_box.inner_text()
    shot(page, "help", "desktop")
    page.keyboard.press("a")
    assert items.count() == 2
    page.keyboard.press("Escape")
    help_box.wait_for(state="hidden")

    page.keyboard.press("j")
    assert "selected" in items.nth(1).get_attribute("class") and "selected" not in items.nth(0).get_attribute("class")
    page.keyboard.press("k")
    assert "selected" in items.nth(0).get_attribute("class")
    page.keyboard.press("j")
    write = items.nth(1)
    write.locator(".deny-message").fill("Not now: keep the notes in the wiki")
    page.keyboard.press("d")  # typed into the box: a letter, not a key of the inbox
    assert write.locator(".deny-message").input_value().endswith("wikid")
    write.locator(".deny-message").fill("Not now: keep the notes in the wiki")
    write.locator("pre.prompt").click()  # out of the box, the item still selected
    page.keyboard.press("d")
    page.locator("#status").filter(has_text="Denied Write").wait_for(timeout=WAIT_MS)
    assert items.count() == 1 and "selected" in items.first.get_attribute("class")
    page.keyboard.press("a")
    page.locator("#status").filter(has_text="Approved Edit").wait_for(timeout=WAIT_MS)

    # The Bash the model asks next arrives by the page's refresh, with a notification; no diff for a command.
    page.locator("li.request .tool-name").filter(has_text="Bash").wait_for(timeout=WAIT_MS)
    assert page.locator("li.request pre.diff").count() == 0
    wait_for(lambda: any(n["title"].startswith("Mainsail: 1 request(s)") and COMMAND in n["body"]
                         for n in page.evaluate("window.__notes")), 30, what="the waiting notification")

    # Decided on a phone by a tap while the desktop page still lists it (its refreshes held back): the
    # desktop's "a" then gets the server's refusal, which stays through refreshes until dismissed.
    stale = page.evaluate("fetch('/api/approvals').then((r) => r.text())")
    page.route("**/api/approvals", lambda route: route.fulfill(status=200, body=stale,
                                                               content_type="application/json"))
    phone = context(stack, PHONE, stack["admin"])
    touch = phone.new_page()
    watch_errors(touch, errors)
    touch.goto(f"{url}/approvals")
    fits(touch)
    shot(touch, "approvals-bash", "phone")
    touch.locator("li.request button.approve").click()
    touch.locator("#empty").wait_for(state="visible", timeout=WAIT_MS)
    touch.locator("#approvals-count[data-count='0']").wait_for(timeout=WAIT_MS)
    page.keyboard.press("a")
    refusal = page.locator("#status.error")
    refusal.wait_for(timeout=WAIT_MS)
    with page.expect_response("**/api/approvals"):
        pass
    assert refusal.is_visible() and page.locator("#status").get_attribute("role") == "alert"
    assert f"(Bash: {COMMAND}) was already approved by token:alice" in refusal.inner_text()
    shot(page, "approvals-error", "desktop")
    page.click("#status-dismiss")
    assert page.locator("#status.error").count() == 0 and page.locator("#status-dismiss").is_hidden()
    errors[:] = [e for e in errors if "status of 409" not in e]  # the refusal, as Chromium logs it
    page.unroute("**/api/approvals")

    # The desktop page, never reloaded: the list empties, and the session's end is notified.
    page.locator("#empty").wait_for(state="visible", timeout=WAIT_MS)
    wait_for(lambda: cluster.store.get_session(stack["sid"]).state.value == "idle", 60, what="the session to end")
    wait_for(lambda: any(n["title"] == "Mainsail: session finished" and n["body"].startswith("Fix calc.py <img")
                         for n in page.evaluate("window.__notes")), 30, what="the finished notification")
    shot(page, "approvals-empty", "desktop")
    assert page.locator("#notify-me").is_hidden()  # the browser allows notifications already: nothing to ask
    page.keyboard.press("g")
    page.keyboard.press("c")
    page.wait_for_url(f"{url}/costs")
    ws = stack["ws"]
    assert (ws / "shipped.txt").read_text() == "shipped\n" and not (ws / "NOTES.md").exists()
    assert "return a + b" in (ws / "calc.py").read_text()
    desk.close()
    phone.close()
    assert errors == [], errors


def test_an_error_stays_until_dismissed(stack):
    url = stack["url"]
    ctx = context(stack, PHONE, stack["admin"])
    page = ctx.new_page()
    page.goto(f"{url}/")
    page.click("#new-session summary")
    page.fill("#ns-workspace", "/no/such/dir")
    page.fill("#ns-prompt", "Say hello")
    page.click("#new-session-form button[type=submit]")
    status = page.locator("#status.error")
    status.filter(has_text="/no/such/dir").wait_for(timeout=WAIT_MS)
    assert page.locator("#status").get_attribute("role") == "alert"
    with page.expect_response(lambda r: "/api/sessions?" in r.url):  # the table's refresh says nothing over it
        pass
    assert status.is_visible() and "/no/such/dir" in status.inner_text()
    shot(page, "error", "phone")
    page.click("#status-dismiss")
    assert page.locator("#status.error").count() == 0 and page.locator("#status-text").inner_text() == ""
    assert page.locator("#status-dismiss").is_hidden()
    ctx.close()
