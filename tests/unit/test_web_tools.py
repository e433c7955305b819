"""WebFetch and WebSearch: their URL checks, HTML conversion, redirects, cache, permissions and costs.

A local HTTP server stands in for the web (nothing here reaches the internet); the small model and
the search call are the scripted Messages API through the real SDK.
"""

from __future__ import annotations

import http.server
import threading

import pytest

from demo.scripted import ToolUse, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from workflows.exceptions import ToolError
from workflows.models import PermissionMode, RuleSet, RuleSpec, SessionRecord, UserEntry
from workflows.models.options import SessionOptions, SessionSetup
from workflows.permissions import Decision, decide
from workflows.permissions.prompt import always_rules
from workflows.tools import get_tool, validate_input
from workflows.tools.web.fetch import MAX_URL_LENGTH, checked_url
from workflows.tools.web.html import to_markdown
from workflows.tools.web.search import links_and_text


class Site(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def log_message(self, *a):
        pass

    def do_GET(self):
        Site.hits.append(self.path)
        if self.path == "/page":
            body = (b"<html><head><title>Greeting</title><script>evil()</script></head><body><h1>Hello</h1>"
                    b"<p>The answer is <b>42</b>. <a href='/more'>more</a></p></body></html>")
            self._send(200, "text/html; charset=utf-8", body)
        elif self.path == "/moved":
            self.send_response(301)
            self.send_header("Location", "/page")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/away":
            self.send_response(302)
            self.send_header("Location", "https://elsewhere.example.org/x")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/image":
            self._send(200, "image/png", b"\x89PNG....")
        else:
            self._send(404, "text/plain", b"nope")

    def _send(self, status, kind, body):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Site.hits = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_urls_are_checked_and_http_upgraded_but_for_loopback():
    assert checked_url("http://example.com/a?b=1") == "https://example.com/a?b=1"
    assert checked_url("http://127.0.0.1:8000/x") == "http://127.0.0.1:8000/x"
    assert checked_url("http://localhost/x") == "http://localhost/x"
    for bad, why in [("ftp://example.com/f", "http:// and https://"), ("https://user:pw@example.com/", "user name"),
                     ("example.com", "http:// and https://"), ("https://intranet/x", "not a full host name"),
                     ("https://example.com:99999/", "Invalid URL"),
                     ("https://example.com/" + "a" * MAX_URL_LENGTH, "at most 2,000")]:
        with pytest.raises(ToolError, match=why):
            checked_url(bad)


def test_html_becomes_markdown_without_scripts():
    md = to_markdown("<html><head><title>T</title><style>x{}</style></head><body><h2>Sub</h2><ul><li>a</li></ul>"
                     "<script>alert(1)</script><a href='https://x.org'>link</a></body></html>")
    assert md.startswith("# T") and "## Sub" in md and "- a" in md and "[link](https://x.org)" in md
    assert "alert" not in md and "x{}" not in md


def test_schemas_match_claude_codes():
    fetch = get_tool("WebFetch").schema()["input_schema"]
    assert set(fetch["required"]) == {"url", "prompt"} and fetch["properties"]["url"]["format"] == "uri"
    search = get_tool("WebSearch").schema()["input_schema"]
    assert search["required"] == ["query"] and {"allowed_domains", "blocked_domains"} <= set(search["properties"])
    with pytest.raises(Exception, match="not both"):
        validate_input("WebSearch", {"query": "x y", "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]})
    with pytest.raises(Exception, match="at least 2"):
        validate_input("WebSearch", {"query": "x"})


def rec_with(mode="default", allow=(), deny=(), ask=()) -> SessionRecord:
    spec = lambda rules: [RuleSpec(rule=r, source="test") for r in rules]  # noqa: E731
    return SessionRecord(id="s1", model="claude-sonnet-4-5", workspace="/tmp", permission_mode=PermissionMode(mode),
                         rules=RuleSet(allow=spec(allow), deny=spec(deny), ask=spec(ask)))


def test_webfetch_asks_per_host_and_domain_rules_decide():
    fetch = get_tool("WebFetch")
    url = {"url": "https://docs.example.com/page", "prompt": "p"}
    assert decide(fetch, url, rec_with()).decision is Decision.ASK
    assert always_rules("WebFetch", url) == ["WebFetch(domain:docs.example.com)"]
    assert decide(fetch, url, rec_with(allow=["WebFetch(domain:docs.example.com)"])).decision is Decision.ALLOW
    assert decide(fetch, url, rec_with(allow=["WebFetch(domain:example.com)"])).decision is Decision.ASK  # exact host
    assert decide(fetch, {"url": "https://DOCS.example.com/x", "prompt": "p"},
                  rec_with(allow=["WebFetch(domain:docs.example.com)"])).decision is Decision.ALLOW
    assert decide(fetch, url, rec_with(mode="bypassPermissions", deny=["WebFetch(domain:docs.example.com)"])
                  ).decision is Decision.DENY
    assert decide(fetch, url, rec_with(mode="plan")).decision is Decision.ASK  # it only reads: plan mode asks
    assert decide(fetch, {"url": "not a url", "prompt": "p"}, rec_with(allow=["WebFetch(domain:)"])
                  ).decision is Decision.ASK
    assert decide(get_tool("WebSearch"), {"query": "abc"}, rec_with()).decision is Decision.ASK
    assert decide(get_tool("WebSearch"), {"query": "abc"}, rec_with(allow=["WebSearch"])).decision is Decision.ALLOW


def page_model(body: dict) -> Turn:
    """The session's model fetches /page then answers; the small model answers about the page."""
    first = body["messages"][0]["content"]
    first = first if isinstance(first, str) else first[-1].get("text", "")
    if first.startswith("Web page content:"):
        assert "The answer is **42**" in first and "evil" not in first
        return Turn(text="The page says the answer is 42.")
    if any(m["role"] == "assistant" for m in body["messages"]):
        return Turn(text="done")
    return Turn(tool_uses=[ToolUse(id="toolu_f", name="WebFetch", input={"url": first, "prompt": "what is it?"})])


def results(engine, sid):
    return {b.tool_use_id: b for e in engine.store.entries(sid) if isinstance(e, UserEntry)
            and e.origin == "tool_result" for b in e.message.blocks()}


def run_session(engine, ws, model, prompt):
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True), SessionSetup(model_overrides={"ANTHROPIC_DEFAULT_HAIKU_MODEL": model}))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, prompt))
    inline.drain()
    return engine.store.get_session(rec.id)


def test_webfetch_answers_with_the_small_model_caches_the_page_and_charges_the_session(engine, ws, site):
    model = scripted_model(page_model)
    rec = run_session(engine, ws, model, f"{site}/moved")  # a same-host redirect is followed
    block = results(engine, rec.id)["toolu_f"]
    assert not block.is_error and block.content == "The page says the answer is 42."
    assert Site.hits == ["/moved", "/page"]
    assert rec.state is State.IDLE and rec.usage_by_kind["web"].output_tokens > 0
    small = [r for r in api_of(model).requests if str(r["messages"][0]["content"]).startswith("Web page")]
    assert len(small) == 1 and small[0]["model"] == model
    run_session(engine, ws, model, f"{site}/moved")  # within 15 minutes: from the cache, no request
    assert Site.hits == ["/moved", "/page"]


def test_webfetch_reports_a_redirect_to_another_host_and_refuses_what_it_cannot_read(engine, ws, site):
    model = scripted_model(page_model)
    rec = run_session(engine, ws, model, f"{site}/away")
    block = results(engine, rec.id)["toolu_f"]
    assert "REDIRECT DETECTED" in block.content and "https://elsewhere.example.org/x" in block.content
    for path, why in [("/image", "image/png, not text"), ("/missing", "status code 404")]:
        rec = run_session(engine, ws, model, f"{site}{path}")
        block = results(engine, rec.id)["toolu_f"]
        assert block.is_error and why in block.content


def search_model(body: dict) -> Turn:
    tools = body.get("tools") or []
    if tools and tools[0].get("type") == "web_search_20250305":
        assert tools[0]["allowed_domains"] == ["python.org"]
        return Turn(text="Python 3.14 is the newest release.", server_blocks=[
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "python"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                {"type": "web_search_result", "title": "Python", "url": "https://python.org/", "encrypted_content": "x",
                 "page_age": None}]}])
    if any(m["role"] == "assistant" for m in body["messages"]):
        return Turn(text="done")
    return Turn(tool_uses=[ToolUse(id="toolu_s", name="WebSearch",
                                   input={"query": "newest python", "allowed_domains": ["python.org"]})])


def test_websearch_passes_the_server_tool_through_and_lists_the_links(engine, ws):
    model = scripted_model(search_model)
    rec = run_session(engine, ws, model, "search")
    block = results(engine, rec.id)["toolu_s"]
    assert not block.is_error
    assert block.content.startswith('Web search results for query: "newest python"')
    assert '"url": "https://python.org/"' in block.content and "Python 3.14 is the newest release." in block.content
    assert rec.usage_by_kind["web"].input_tokens > 0


def test_search_errors_are_named():
    links, errors, text = links_and_text([{"type": "web_search_tool_result", "tool_use_id": "x",
                                           "content": {"type": "web_search_tool_result_error",
                                                       "error_code": "max_uses_exceeded"}}])
    assert (links, errors, text) == ([], ["max_uses_exceeded"], "")


HOSTILE_URLS = [  # an allow rule for docs.example.com must not be stretched to another host
    ("https://docs.example.com@evil.com/", Decision.ASK),  # userinfo: the host is evil.com
    ("https://evil.com#docs.example.com", Decision.ASK),
    ("https://docs.example.com.evil.com/", Decision.ASK),
    ("https://docs.example.com./x", Decision.ASK),  # a trailing dot is another name to the checker: ask
    ("https://docs.example.com\\@evil.com/", Decision.ASK),  # WHATWG reads '\' as '/', others as userinfo
    ("https://evil.com\\docs.example.com", Decision.ASK),
    ("https://docs.example.com%2F@evil.com/", Decision.ASK),
    ("https://xn--docs-example.com/", Decision.ASK),
    ("https://docs。example。com/", Decision.ASK),  # ideographic full stops
    ("https://docs.example.com\t.evil.com/", Decision.ASK),  # a tab browsers strip
    ("file:///etc/passwd", Decision.ASK),
    ("javascript:alert(1)", Decision.ASK),
    ("https://[::1]/", Decision.ASK),
    ("https://docs.example.com?x=@evil.com", Decision.ALLOW),  # the '@' is in the query: the host is docs
    ("https://DOCS.EXAMPLE.COM/", Decision.ALLOW),
    ("https://user:pw@docs.example.com/", Decision.ALLOW),
    ("https://docs.example.com:8443/x", Decision.ALLOW),  # domain rules name hosts, not ports (as Claude Code)
]


@pytest.mark.parametrize(("url", "expected"), HOSTILE_URLS, ids=[u for u, _ in HOSTILE_URLS])
def test_a_domain_rule_is_not_stretched_by_url_tricks(url, expected):
    rec = rec_with(allow=["WebFetch(domain:docs.example.com)"])
    assert decide(get_tool("WebFetch"), {"url": url, "prompt": "p"}, rec).decision is expected


@pytest.mark.parametrize("url", ["https://evil.com\\@docs.example.com/", "https://evil.com%5C@docs.example.com/",
                                 "https://evil.com;@docs.example.com/", "https://evil.com\t@docs.example.com/"])
def test_urls_whose_host_parsers_could_disagree_on_are_never_fetched(url):
    """urllib and httpx both read docs.example.com here, but a WHATWG parser reads evil.com for the first:
    a URL with userinfo is refused before any request, whatever the rules said."""
    from workflows.tools.web.fetch import checked_url

    with pytest.raises(ToolError, match="user name or password"):
        checked_url(url)
