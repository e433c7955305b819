"""The sessions list and a session's page in a real browser (Playwright driving Debian's ``chromium``)
at desktop (1280x800) and phone (390x844, and a 360-wide check) sizes, against one real ``mainsail
serve``, a real worker and the fake Messages API, shared by the module's tests:

- ``GET /api/sessions``'s filters (q over title, id and first prompt; state, workspace, token, schedule),
  each narrowing what the token may see and never widening it;
- the list: short copyable ids, a state icon drawn in SVG, search and each filter reflected in the URL
  (a shared link shows the same view), j / k / Enter, rows as cards at phone width, no sideways scroll;
- a session's page: each sub-agent's lines nested under its Agent call and foldable, the actions shown
  only where they apply (Cancel while a turn runs, approve / deny while a request waits, the message box
  while idle), kept so live; a hostile title and prompt stay text.

Screenshots of each page at each size go to tests/artifacts/console/.
"""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.conftest import wait_for
from tests.e2e.console_world import (  # noqa: F401 - world and chromium are fixtures
    HOSTILE,
    HOSTILE_TITLE,
    SIZES,
    WAITING,
    chromium,
    command,
    world,
)
from tests.e2e.test_console_browser import ARTIFACTS, WAIT_MS, watch_errors
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.e2e

def listed(client, **params) -> list[str]:
    got = client.get("/api/sessions", params=params)
    assert got.status_code == 200, got.text
    return [s["id"] for s in got.json()]


def test_api_filters_narrow_what_the_token_sees(world):
    a, b, sid = world.a, world.b, world.sid
    assert set(listed(a)) == set(sid.values())
    waiting = {sid[k] for k in WAITING}
    assert set(listed(a, state="awaiting_permission")) == waiting
    assert set(listed(a, workspace=str(world.ws2))) == waiting
    assert set(listed(a, token="bob")) == waiting
    assert set(listed(a, token="alice")) == set(sid.values()) - waiting
    assert listed(a, schedule=world.schedule) == [sid["scheduled"]]
    assert listed(a, schedule="nightly") == [sid["scheduled"]]  # by name, as `mainsail schedule` takes it
    assert listed(a, q="NEEDLE") == [sid["needle"]]  # its first prompt (its title is "Tidy work")
    assert listed(a, q=sid["agents"][:8]) == [sid["agents"]]
    assert listed(a, q="bold") == [sid["hostile"]]  # the title
    tidy = {sid["needle"], sid["agents"], sid["scheduled"]}
    assert set(listed(a, q="tidy", state="idle", token="alice")) == tidy
    assert listed(a, q="no such text anywhere") == []
    row = a.get("/api/sessions", params={"q": "bash: asking"}).json()[0]
    assert (row["token"], row["state"]) == ("bob", "awaiting_permission")
    # bob's token sees ws2 only: no filter shows him more, alice's schedule is not his to name
    assert set(listed(b)) == waiting
    assert listed(b, token="alice") == [] and listed(b, workspace=str(world.ws)) == []
    assert listed(b, q=sid["needle"][:8]) == []
    hidden = b.get("/api/sessions", params={"schedule": world.schedule})
    assert hidden.status_code == 404 and "no schedule" in hidden.text.lower(), hidden.text
    assert a.get("/api/sessions", params={"schedule": "nope"}).status_code == 404
    assert a.get("/api/sessions", params={"q": "x" * 201}).status_code == 422


def signed_in(chromium, world, size: str, token: str | None = None, **kw):
    width, height = SIZES[size]
    context = chromium.new_context(viewport={"width": width, "height": height}, **kw)
    context.add_cookies([{"name": "mainsail_token", "value": token or world.alice, "url": world.url}])
    return context


WIDE = """w => [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > w + 1)
  .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' ' + Math.round(e.getBoundingClientRect().right))"""


def no_sideways_scroll(page) -> None:
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"the page scrolls sideways: {width}px wide; past the edge: {page.evaluate(WIDE, inner)[:9]}"


def shown_ids(page) -> list[str]:
    return page.locator("#rows tr").evaluate_all("rows => rows.map(r => r.dataset.id)")


def wait_rows(page, ids) -> None:
    wait_for(lambda: sorted(shown_ids(page)) == sorted(ids), 30, 0.1, f"the list to show {sorted(ids)}")


@pytest.mark.parametrize("size", list(SIZES))
def test_session_list_search_filters_keys(world, chromium, size):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    sid, errors = world.sid, []
    context = signed_in(chromium, world, size)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=world.url)
    page = context.new_page()
    watch_errors(page, errors)
    page.goto(f"{world.url}/")
    wait_rows(page, sid.values())
    # each row: its short id, its state as an SVG icon and a word (no font glyph), its model on one line
    row = page.locator(f'#rows tr[data-id="{sid["asking"]}"]')
    assert row.locator("button.copy code").inner_text() == sid["asking"][:8]
    assert row.locator(".state-awaiting_permission svg use").get_attribute("href") == "#i-awaiting_permission"
    assert page.locator("#i-awaiting_permission").count() == 1
    model = row.locator("td.model")
    assert model.evaluate("td => getComputedStyle(td).whiteSpace") == "nowrap"
    # a hostile title stays text
    hostile = page.locator(f'#rows tr[data-id="{sid["hostile"]}"] td.title a')
    assert hostile.inner_text() == HOSTILE_TITLE
    assert page.locator("#rows img, #rows script, #rows b").count() == 0
    assert page.title() not in ("1", "2", "3", "4")
    no_sideways_scroll(page)
    assert page.evaluate("document.getElementById('list').getBoundingClientRect().right <= "
                         "document.querySelector('main').getBoundingClientRect().right")  # the table fits its page
    if size == "phone":  # rows are cards: the table's head is hidden, each row a grid
        assert page.locator("#list thead").is_hidden()
        assert row.evaluate("tr => getComputedStyle(tr).display") == "grid"
        page.set_viewport_size({"width": 360, "height": 780})
        no_sideways_scroll(page)
        page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / f"sessions-list-{size}.png"), full_page=True)

    # the short id copies the whole id
    row.locator("button.copy").click()
    page.locator("#status").filter(has_text=sid["asking"]).wait_for(timeout=WAIT_MS)
    assert page.evaluate("navigator.clipboard.readText()") == sid["asking"]

    # search, over the first prompt: the URL says it, and a shared link shows the same list
    page.fill("#q", "needle")
    wait_rows(page, [sid["needle"]])
    assert page.url == f"{world.url}/?q=needle"
    page.screenshot(path=str(ARTIFACTS / f"sessions-search-{size}.png"), full_page=True)
    page.fill("#q", "")
    wait_rows(page, sid.values())
    assert page.url == f"{world.url}/"

    # each filter, by itself, reflected in the URL
    waiting = [sid[k] for k in WAITING]
    for name, value, want in (("state", "awaiting_permission", waiting),
                              ("workspace", str(world.ws2), waiting),
                              ("token", "bob", waiting),
                              ("schedule", world.schedule, [sid["scheduled"]])):
        page.select_option(f"#{name}", value)
        wait_rows(page, want)
        assert httpx.URL(page.url).params.get(name) == value, page.url
        shared = context.new_page()
        watch_errors(shared, errors)
        shared.goto(page.url)  # as the link would open for someone else: the same view, filter chosen
        assert sorted(shown_ids(shared)) == sorted(want)
        assert shared.locator(f"#{name}").input_value() == value
        shared.close()
        page.select_option(f"#{name}", "")
        wait_rows(page, sid.values())
    page.select_option("#token", "alice")
    page.fill("#q", "tidy")
    wait_rows(page, [s for k, s in sid.items() if k not in (*WAITING, "hostile")])
    assert set(httpx.URL(page.url).params.items()) == {("token", "alice"), ("q", "tidy")}
    page.screenshot(path=str(ARTIFACTS / f"sessions-filtered-{size}.png"), full_page=True)
    page.goto(f"{world.url}/")
    wait_rows(page, sid.values())

    # j / k move the selection, Enter opens the selected session (the shortcuts list, "?", names them)
    order = shown_ids(page)
    page.locator("h1").click()  # (the focus out of any field)
    page.keyboard.press("?")
    assert "Next / previous session" in page.locator("#help").inner_text()
    page.keyboard.press("Escape")
    page.locator("#help").wait_for(state="hidden")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.locator("#rows tr.selected").get_attribute("data-id") == order[1]
    page.keyboard.press("k")
    assert page.locator("#rows tr.selected").get_attribute("data-id") == order[0]
    page.keyboard.press("k")  # stays on the first
    assert page.locator("#rows tr.selected").count() == 1
    page.keyboard.press("j")
    # (the list re-reads every 3 s and a session's activity can reorder it: Enter opens the row selected now)
    chosen = page.locator("#rows tr.selected").get_attribute("data-id")
    assert chosen in order
    page.keyboard.press("Enter")
    page.wait_for_url(f"{world.url}/sessions/{chosen}", timeout=WAIT_MS)
    context.close()
    assert errors == [], errors


def test_a_link_naming_a_schedule_keeps_it_through_other_filters(world, chromium):
    """``/?schedule=nightly`` (a name, as `mainsail schedule` takes it): the select keeps it, so changing
    another filter does not drop it."""
    errors: list[str] = []
    context = signed_in(chromium, world, "desktop")
    page = context.new_page()
    watch_errors(page, errors)
    page.goto(f"{world.url}/?schedule=nightly")
    wait_rows(page, [world.sid["scheduled"]])
    assert page.locator("#schedule").input_value() == "nightly"
    page.select_option("#state", "idle")
    wait_rows(page, [world.sid["scheduled"]])
    assert set(httpx.URL(page.url).params.items()) == {("schedule", "nightly"), ("state", "idle")}
    context.close()
    assert errors == [], errors


def test_a_token_sees_only_its_sessions_in_the_list(world, chromium):
    errors: list[str] = []
    context = signed_in(chromium, world, "desktop", token=world.bob)
    page = context.new_page()
    watch_errors(page, errors)
    page.goto(f"{world.url}/?token=alice")
    assert shown_ids(page) == []
    assert page.locator("#empty").is_visible()
    page.goto(f"{world.url}/")
    wait_rows(page, [world.sid[k] for k in WAITING])
    assert page.locator("#workspace option").all_inner_texts() == ["any workspace", str(world.ws2)]
    assert "nightly" not in page.locator("#schedule").inner_text()
    context.close()
    assert errors == [], errors


#: A call's head without its outcome (what its result said).
HEAD = ("s => [...s.childNodes].filter(n => !(n.classList && n.classList.contains('outcome')))"
        ".map(n => n.textContent).join('')")


def open_session(chromium, world, size: str, key: str, errors: list[str]):
    context = signed_in(chromium, world, size)
    page = context.new_page()
    watch_errors(page, errors)
    page.goto(f"{world.url}/sessions/{world.sid[key]}")
    page.locator("#live").filter(has_text="Live.").wait_for(timeout=WAIT_MS)
    return context, page


@pytest.mark.parametrize("size", list(SIZES))
def test_sub_agents_nest_under_their_agent_call_and_fold(world, chromium, size):
    errors: list[str] = []
    context, page = open_session(chromium, world, size, "agents", errors)
    transcript = page.locator("#transcript")
    transcript.locator(".closing").wait_for(timeout=WAIT_MS)
    calls = transcript.locator('details.call[data-tool="Agent"]')
    calls.nth(1).locator(".agent-lines .child.end").wait_for(timeout=WAIT_MS)
    assert [calls.nth(i).locator("> summary strong").inner_text() for i in range(2)] == ["Agent", "Agent"]
    assert [calls.nth(i).locator("> summary").evaluate(HEAD) for i in range(2)] == \
        ["Agent(read a file)", "Agent(read a file #2)"]
    assert calls.nth(0).locator("> summary .outcome svg use").get_attribute("href") == "#i-result"
    for i in range(2):
        lines = calls.nth(i).locator("details.agent .agent-lines .child")
        texts = lines.all_inner_texts()
        assert len(texts) == 3 and texts[0] in ("Read(a.txt)", "Read(b.txt)") and texts[2].startswith("answered"), texts
        assert lines.nth(0).locator("svg use").get_attribute("href") == "#i-call"
        assert lines.nth(1).locator("svg use").get_attribute("href") == "#i-result"
    # every sub-agent line sits in an Agent call's block, above the closing line
    assert transcript.locator(".child").count() == transcript.locator("details.call details.agent .child").count() == 6
    assert page.locator("#transcript > .closing ~ *").count() == 0
    assert page.locator("#transcript > .closing").evaluate(
        "c => [...document.querySelectorAll('.child')].every(l => l.compareDocumentPosition(c) & 4)")
    # a foreground agent's start and end notices (the stream's task lines) are not lines of their own here
    assert transcript.locator(".system.task").count() == 0
    # fold one sub-agent and unfold it: its call's head stays
    first = calls.nth(0).locator("details.agent")
    assert first.locator(".agent-lines").is_visible()
    first.locator("> summary").click()
    assert first.locator(".agent-lines").is_hidden() and calls.nth(0).locator("> summary").is_visible()
    page.screenshot(path=str(ARTIFACTS / f"session-agents-folded-{size}.png"), full_page=True)
    first.locator("> summary").click()
    assert first.locator(".agent-lines").is_visible()
    # no glyph a common font lacks: the marks are SVG
    assert not any(g in transcript.inner_text() for g in "⏺⎿⚡✓✗☐☒◐⏪⚠")
    no_sideways_scroll(page)
    page.screenshot(path=str(ARTIFACTS / f"session-agents-{size}.png"), full_page=True)
    # idle: the message box, no Cancel
    assert page.locator("#send").is_visible() and page.locator("#cancel-button").is_hidden()
    context.close()
    assert errors == [], errors


@pytest.mark.parametrize("size", list(SIZES))
def test_hostile_prompt_and_title_stay_text_on_the_session_page(world, chromium, size):
    errors: list[str] = []
    context, page = open_session(chromium, world, size, "hostile", errors)
    page.locator("#transcript .closing").wait_for(timeout=WAIT_MS)
    assert page.locator("#title").inner_text() == HOSTILE_TITLE
    assert page.locator("#transcript .prompt").first.inner_text() == f"> {HOSTILE}"
    assert page.locator("main img, main script, #title b").count() == 0
    assert page.title().startswith(HOSTILE_TITLE[:20]) and page.title() not in ("1", "2", "3", "4")
    no_sideways_scroll(page)
    page.screenshot(path=str(ARTIFACTS / f"session-{size}.png"), full_page=True)
    context.close()
    assert errors == [], errors


def test_actions_follow_the_state_live(world, chromium):
    """The waiting session at both sizes: Cancel and approve / deny shown, no message box; denied from the
    page, the turn ends: the buttons go, the message box comes, without a reload."""
    errors: list[str] = []
    pages = {}
    for size in SIZES:
        context, page = open_session(chromium, world, size, "asking", errors)
        ask = page.locator("#transcript .ask")
        ask.locator(".decide button.approve").wait_for(state="visible", timeout=WAIT_MS)
        assert command("asking") in ask.inner_text()
        assert page.locator("#cancel-button").is_visible()
        assert page.locator("#send").is_hidden()
        assert page.locator("#state").inner_text() == "awaiting_permission"
        no_sideways_scroll(page)
        page.screenshot(path=str(ARTIFACTS / f"session-waiting-{size}.png"), full_page=True)
        pages[size] = (context, page)
    context, page = pages["desktop"]
    page.fill("#transcript .ask .deny-message", "not today")
    page.click("#transcript .ask button.deny")
    page.locator("#status").filter(has_text=f"Denied Bash: {command('asking')}").wait_for(timeout=WAIT_MS)
    for context, page in pages.values():  # both pages: the phone's only through its live stream
        idle_actions(page)
        assert "denied by user (token:alice): not today" in page.locator("#transcript .decision").inner_text()
    assert not (world.ws2 / "asking.txt").exists()
    pages["phone"][1].screenshot(path=str(ARTIFACTS / "session-denied-phone.png"), full_page=True)
    for context, _ in pages.values():
        context.close()
    assert errors == [], errors


def idle_actions(page) -> None:
    """Once the session is idle: the message box, no Cancel, no approve / deny."""
    page.locator("#send").wait_for(state="visible", timeout=WAIT_MS)
    wait_for(lambda: page.locator("#state").inner_text() == "idle", 60, what="the state to say idle")
    assert page.locator("#cancel-button").is_hidden()
    for decide in page.locator("#transcript .ask .decide").all():
        decide.wait_for(state="hidden", timeout=WAIT_MS)
    wait_for(lambda: page.locator("#waiting").inner_text() == "0 request(s) in the inbox", 60,
             what="the header to say nothing waits")


def test_approve_from_the_session_page(world, chromium):
    errors: list[str] = []
    context, page = open_session(chromium, world, "phone", "approving", errors)
    page.locator("#transcript .ask button.approve").click()
    page.locator("#status").filter(has_text=f"Approved Bash: {command('approving')}").wait_for(timeout=WAIT_MS)
    page.locator("#transcript .closing").wait_for(timeout=WAIT_MS)
    idle_actions(page)
    assert (world.ws2 / "approving.txt").read_text() == "hi\n"
    assert "approved by user (token:alice)" in page.locator("#transcript .decision").inner_text()
    page.screenshot(path=str(ARTIFACTS / "session-approved-phone.png"), full_page=True)
    context.close()
    assert errors == [], errors


def test_cancel_from_the_session_page(world, chromium):
    errors: list[str] = []
    context, page = open_session(chromium, world, "desktop", "cancelling", errors)
    page.locator("#cancel-button").wait_for(state="visible", timeout=WAIT_MS)
    page.click("#cancel-button")
    idle_actions(page)
    assert not page.locator("#status").evaluate("s => s.classList.contains('error')")
    assert not (world.ws2 / "cancelling.txt").exists()
    assert world.cluster.store.get_session(world.sid["cancelling"]).pending_requests() == []
    page.screenshot(path=str(ARTIFACTS / "session-cancelled-desktop.png"), full_page=True)
    context.close()
    assert errors == [], errors


def test_a_read_only_token_gets_no_actions(world, chromium):
    reader, _ = TokenStore(world.cluster.store.r).create("reader", read_only=True)
    errors: list[str] = []
    context = signed_in(chromium, world, "phone", token=reader)
    page = context.new_page()
    watch_errors(page, errors)
    page.goto(f"{world.url}/sessions/{world.sid['needle']}")
    page.locator("#transcript .closing").wait_for(timeout=WAIT_MS)
    assert page.locator("#send, #cancel-button, .decide").count() == 0
    context.close()
    assert errors == [], errors
