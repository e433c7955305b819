"""WebFetch through the installed command: a real worker fetches a page from a local site (never the
internet), the session's small model answers about it through the fake Messages API, and the
session's domain rules allow or refuse the fetch."""

from __future__ import annotations

import http.server
import json
import subprocess
import threading

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL
from tests.fakeapi import FakeMessagesServer
from workflows.models import UserEntry

pytestmark = pytest.mark.e2e


class Page(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        body = b"<html><head><title>Release notes</title></head><body><p>Version 7.1 ships on Friday.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def model(body: dict) -> Turn:
    first = body["messages"][0]["content"]
    first = first if isinstance(first, str) else first[-1].get("text", "")
    if first.startswith("Web page content:"):  # the small model, on the worker
        return Turn(text="It says version 7.1 ships on Friday." if "Version 7.1" in first else "no idea")
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and last[-1].get("type") == "tool_result":
        return Turn(text=f"Result: {last[-1]['content'] if isinstance(last[-1]['content'], str) else last[-1]['content'][0]['text']}")
    return Turn(tool_uses=[ToolUse(name="WebFetch", input={"url": first.split()[-1], "prompt": "When is 7.1 out?"})])


@pytest.fixture
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/notes"
    server.shutdown()


def run_p(cluster, ws, *args):
    return subprocess.run([MAINSAIL, "-p", "--output-format", "json", "--no-memory", *args], cwd=ws, env=cluster.env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_webfetch_runs_on_a_worker_under_the_sessions_domain_rules(cluster, workspace, site):
    with FakeMessagesServer(model) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        allowed = run_p(cluster, workspace, "--allowedTools", "WebFetch(domain:127.0.0.1)", f"read {site}")
        assert allowed.returncode == 0, allowed.stderr
        out = json.loads(allowed.stdout)
        assert out["result"] == "Result: It says version 7.1 ships on Friday."
        small = [r for r in api.requests if str(r["messages"][0]["content"]).startswith("Web page content:")]
        assert len(small) == 1 and "haiku" in small[0]["model"]
        denied = run_p(cluster, workspace, "--disallowedTools", "WebFetch(domain:127.0.0.1)", f"read {site}")
        out = json.loads(denied.stdout)
        assert "WebFetch" in out["result"] and "denied" in out["result"].lower(), out["result"]
        assert out["permission_denials"][0]["tool_name"] == "WebFetch"
    sid = out["session_id"]
    results = [e for e in cluster.store.entries(sid) if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert results and results[0].message.blocks()[0].is_error
