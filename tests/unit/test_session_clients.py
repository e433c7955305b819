"""The one client protocol of the simple session verbs (cli/clients/): the chooser on MAINSAIL_SERVER, the
routing that keeps the one command definition, and the HTTP implementation's calls and lines (httpx's
MockTransport; tests/e2e/test_remote_cli.py runs it against a real `mainsail serve`)."""

from __future__ import annotations

import json

import httpx
from click.testing import CliRunner

from cli.approvals import approve, deny
from cli.clients import HttpClient, LocalClient, client_for
from cli.remote import route
from cli.remote.client import Client
from cli.run import submit
from cli.sessions import cancel, compact, send


def test_client_for_is_http_with_a_server_and_local_without(monkeypatch):
    monkeypatch.delenv("MAINSAIL_SERVER", raising=False)
    assert isinstance(client_for(), LocalClient)
    monkeypatch.setenv("MAINSAIL_SERVER", "http://127.0.0.1:1")
    assert isinstance(client_for(), HttpClient)


def test_with_a_server_the_verbs_keep_their_one_definition(monkeypatch):
    monkeypatch.setenv("MAINSAIL_SERVER", "http://127.0.0.1:1")
    monkeypatch.delenv("MAINSAIL_REDIS_URL", raising=False)
    for command in (submit, send, cancel, approve, deny, compact):
        routed = route(command)
        assert routed.callback is command.callback and "calls the team server's HTTP API" in routed.help


def _served(monkeypatch, answers: dict[str, dict]) -> list[tuple[str, dict]]:
    calls: list[tuple[str, dict]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append((request.url.path, json.loads(request.content or b"{}")))
        return httpx.Response(200, json=answers[request.url.path])

    monkeypatch.setenv("MAINSAIL_SERVER", "http://127.0.0.1:1")
    monkeypatch.setattr("cli.clients.http.open_client",
                        lambda: Client("http://127.0.0.1:1", "t", transport=httpx.MockTransport(handle)))
    return calls


def test_send_cancel_and_decide_are_one_call_each_with_the_local_lines(monkeypatch):
    sid = "1a2b3c4d-0000"
    calls = _served(monkeypatch, {
        "/api/sessions/1a2b/messages": {"session_id": sid, "message": "Sent."},
        "/api/sessions/1a2b/cancel": {"session_id": sid, "message": "Cancelled the turn of session 1a2b3c4d."},
        "/api/sessions/1a2b/approve": {"approved": True, "tool": "Bash", "summary": "ls", "session_id": sid,
                                       "request_id": "r1", "rules_added": ["Bash(ls:*)"]},
    })
    out = CliRunner().invoke(send, ["1a2b", "hi"])
    assert out.exit_code == 0 and out.output == "Session 1a2b3c4d: Sent. Watch: mainsail watch 1a2b3c4d\n"
    out = CliRunner().invoke(cancel, ["1a2b", "--clear"])
    assert out.exit_code == 0 and out.output == "Cancelled the turn of session 1a2b3c4d.\n"
    out = CliRunner().invoke(approve, ["1a2b", "--always"])
    assert out.output == ("Approved Bash: ls (session 1a2b3c4d, request r1) and added the session rule "
                          "Bash(ls:*).\n")
    assert calls == [("/api/sessions/1a2b/messages", {"message": "hi", "interrupt": False, "clear": False}),
                     ("/api/sessions/1a2b/cancel", {"clear": True}),
                     ("/api/sessions/1a2b/approve", {"request": None, "always": True})]
    out = CliRunner().invoke(send, ["1a2b"])  # checked before any call, in both modes
    assert out.exit_code == 2 and "Missing MESSAGE" in out.output and len(calls) == 3


def test_submit_is_one_create_call_with_the_local_lines(monkeypatch):
    calls = _served(monkeypatch, {"/api/sessions": {"id": "9f8e7d6c-0000", "warnings": ["no price known"]}})
    out = CliRunner().invoke(route(submit), ["--cwd", "/srv/repo", "--max-turns", "3",
                                             "--add-dir", "/srv/lib", "hi"])
    assert out.exit_code == 0 and out.stdout == "9f8e7d6c-0000\n"
    assert out.stderr == "Warning: no price known\nWatch it with: mainsail watch 9f8e7d6c\n"
    assert calls == [("/api/sessions", {"workspace": "/srv/repo", "prompt": "hi", "max_turns": 3,
                                        "allowed_tools": [], "disallowed_tools": [], "add_dirs": ["/srv/lib"],
                                        "no_memory": False})]
    for args, said in ((["hi"], "give the session's workspace with --cwd DIR"),
                       (["--cwd", "srv", "hi"], "--cwd 'srv': through MAINSAIL_SERVER, give an absolute path"),
                       (["--cwd", "/srv", "-r", "1a2b", "hi"], "--resume is not available through MAINSAIL_SERVER")):
        out = CliRunner().invoke(route(submit), args)  # refused before any call
        assert out.exit_code == 2 and said in out.output and len(calls) == 1
