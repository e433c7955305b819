"""The CLI's client of the team server (cli/remote/): the SSE parser, error mapping, the reconnecting
follower and the dispatch of commands by MAINSAIL_SERVER. HTTP is httpx's MockTransport: these test
the client's own logic; tests/e2e/test_remote_cli.py runs it against a real `mainsail serve`."""

from __future__ import annotations

import json

import click
import httpx
import pytest
from click.testing import CliRunner

from cli.remote import route
from cli.remote.client import Client, RemoteError, check_server_url, open_client
from cli.remote.sse import Event, SSEDecoder, follow_events
from workflows.exceptions import ConfigurationError

TOKEN = "mst_secret-token-value"


def decode(text: str, last: str | None = None) -> list[Event]:
    return list(SSEDecoder(last).events(text.splitlines()))


# -- the event-stream parser ----------------------------------------------------------------------------------


def test_fields_build_an_event_and_a_blank_line_dispatches_it():
    assert decode("event: entry\nid: 1-0\ndata: {\"a\": 1}\n\n") == [Event("entry", '{"a": 1}', "1-0")]


def test_data_lines_join_with_newlines_and_one_leading_space_is_dropped():
    assert decode("data:  two spaces\ndata:none\ndata\n\n") == [Event("message", " two spaces\nnone\n", None)]


def test_comments_and_unknown_fields_are_ignored():
    assert decode(": ping\nfoo: bar\ndata: x\n: another\n\n") == [Event("message", "x", None)]


def test_an_event_without_an_id_keeps_the_last_id_and_an_empty_event_is_not_dispatched():
    events = decode("id: 5-0\nevent: entry\ndata: a\n\nevent: delta\ndata: b\n\nid: 6-0\n\nevent: delta\ndata: c\n\n")
    assert events == [Event("entry", "a", "5-0"), Event("delta", "b", "5-0"), Event("delta", "c", "6-0")]


def test_an_unfinished_event_at_the_end_is_dropped_and_retry_is_read():
    d = SSEDecoder("1-0")
    assert list(d.events(["retry: 3000", "data: half"])) == []
    assert d.retry_ms == 3000 and d.last_event_id == "1-0"


def test_an_id_holding_nul_is_ignored():
    assert decode("id: 1-0\n\nid: a\0b\ndata: x\n\n") == [Event("message", "x", "1-0")]


def test_event_type_resets_after_each_dispatch():
    assert [e.event for e in decode("event: end\ndata: {}\n\ndata: y\n\n")] == ["end", "message"]


# -- errors -------------------------------------------------------------------------------------------------


def client(handler) -> Client:
    return Client("http://srv.test", TOKEN, transport=httpx.MockTransport(handler))


@pytest.mark.parametrize("status, detail, expected", [
    (401, "The API token is unknown or revoked.", "The server refused MAINSAIL_TOKEN: The API token is unknown"),
    (403, "Token 'ro' is read-only: ...", "Token 'ro' is read-only: ..."),
    (404, "No session 'abc'.", "No session 'abc'."),
    (409, "Session 1234 has no pending permission request.", "Session 1234 has no pending permission request."),
    (503, "The server cannot reach its Redis right now.", "is unavailable (503): The server cannot reach its Redis"),
    (500, "Internal error; the server's log has the details.", "failed (500): Internal error"),
])
def test_a_refusal_is_the_servers_detail(status, detail, expected):
    with client(lambda req: httpx.Response(status, json={"detail": detail})) as c, \
            pytest.raises(RemoteError) as err:
        c.get("/api/sessions")
    assert expected in str(err.value) and err.value.status == status
    assert TOKEN not in str(err.value)


def test_a_validation_error_list_is_summarised():
    body = {"detail": [{"loc": ["body", "workspace"], "msg": "Field required"}]}
    with client(lambda req: httpx.Response(422, json=body)) as c, pytest.raises(RemoteError, match="body.workspace: "
                                                                                               "Field required"):
        c.post("/api/sessions", {})


def test_a_route_the_server_does_not_have_asks_whether_it_is_mainsail():
    with client(lambda req: httpx.Response(404, json={"detail": "Not Found"})) as c, \
            pytest.raises(RemoteError, match="is MAINSAIL_SERVER the address of `mainsail serve`"):
        c.get("/api/approvals")


def test_an_answer_that_is_not_json_is_named():
    with client(lambda req: httpx.Response(200, text="<html>login</html>", headers={"content-type": "text/html"})) \
            as c, pytest.raises(RemoteError, match="with text/html, not the Mainsail API's JSON"):
        c.get("/api/sessions")


def test_an_unreachable_server_names_its_address_and_the_setting():
    def refuse(request):
        raise httpx.ConnectError("[Errno 111] Connection refused")

    with client(refuse) as c, pytest.raises(RemoteError) as err:
        c.get("/api/sessions")
    assert str(err.value).startswith("Cannot reach the Mainsail server at http://srv.test: [Errno 111]")
    assert "check MAINSAIL_SERVER" in str(err.value) and err.value.retry


def test_the_token_goes_only_in_the_authorization_header():
    seen = []

    def record(request):
        seen.append(request)
        return httpx.Response(200, json=[])

    with client(record) as c:
        c.get("/api/sessions", state="idle", workspace=None)
    (req,) = seen
    assert req.headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in str(req.url) and str(req.url) == "http://srv.test/api/sessions?state=idle"


@pytest.mark.parametrize("url, ok", [
    ("https://mainsail.example:8750/", "https://mainsail.example:8750"),
    ("http://127.0.0.1:8750", "http://127.0.0.1:8750"),
    ("http://localhost:8750", "http://localhost:8750"),
    ("http://[::1]:8750", "http://[::1]:8750"),
])
def test_usable_server_addresses(url, ok):
    assert check_server_url(url) == ok


@pytest.mark.parametrize("url, problem", [
    ("mainsail.example:8750", "must be the server's address"),
    ("ftp://host", "must be the server's address"),
    ("https://alice:pw@host", "must not hold a user or password"),
    ("http://10.0.0.5:8750", "would cross the network unencrypted"),
])
def test_unusable_server_addresses(url, problem):
    with pytest.raises(ConfigurationError, match=problem):
        check_server_url(url)
    assert check_server_url("http://10.0.0.5:8750", allow_http=True) == "http://10.0.0.5:8750"


def test_a_missing_or_mangled_token_is_a_configuration_error(monkeypatch):
    monkeypatch.setenv("MAINSAIL_SERVER", "http://127.0.0.1:1")
    monkeypatch.delenv("MAINSAIL_TOKEN", raising=False)
    with pytest.raises(ConfigurationError, match="MAINSAIL_TOKEN is not"):
        open_client()
    monkeypatch.setenv("MAINSAIL_TOKEN", "mst_abc\ndef")
    with pytest.raises(ConfigurationError, match="characters no API token has") as err:
        open_client()
    assert "mst_abc" not in str(err.value)


def test_the_token_setting_is_never_printed(monkeypatch):
    from workflows.settings import load_settings

    monkeypatch.setenv("MAINSAIL_TOKEN", TOKEN)
    settings = load_settings()
    assert settings.token.get_secret_value() == TOKEN
    assert TOKEN not in repr(settings) and TOKEN not in str(settings)


# -- the reconnecting follower ------------------------------------------------------------------------------


class Dropping(httpx.SyncByteStream):
    """An event stream that sends ``text`` and then breaks, as a server that died would."""

    def __init__(self, text: str, then_fail: bool) -> None:
        self.text, self.then_fail = text, then_fail

    def __iter__(self):
        yield self.text.encode()
        if self.then_fail:
            raise httpx.ReadError("peer closed connection")


def entry(eid: str) -> str:
    return f"event: entry\nid: {eid}\ndata: {json.dumps({'id': eid})}\n\n"


def test_a_dropped_stream_is_resumed_from_the_last_event_id_with_nothing_repeated():
    requests = []
    answers = [
        lambda: httpx.Response(200, stream=Dropping(entry("1-0.0") + entry("1-0") + "event: delta\ndata: {}\n\n",
                                                    then_fail=True)),
        lambda: httpx.Response(503, json={"detail": "restarting"}),
        lambda: httpx.Response(200, stream=Dropping(": ping\n\n" + entry("2-0") + "event: end\ndata: {}\n\n",
                                                    then_fail=False)),
    ]

    def handler(request):
        requests.append(request)
        return answers[len(requests) - 1]()

    drops, sleeps, reconnects = [], [], []
    with client(handler) as c:
        events = list(follow_events(c, "sid-1", on_drop=drops.append, on_reconnect=lambda: reconnects.append(1),
                                    sleep=sleeps.append))
    assert [(e.event, e.id) for e in events] == [("entry", "1-0.0"), ("entry", "1-0"), ("delta", "1-0"),
                                                 ("entry", "2-0"), ("end", "2-0")]
    assert "last-event-id" not in requests[0].headers
    assert [r.headers["last-event-id"] for r in requests[1:]] == ["1-0", "1-0"]
    assert requests[0].url.params["until_idle"] == "true" and requests[0].url.path == "/api/sessions/sid-1/events"
    assert len(drops) == 1 and "peer closed connection" in drops[0]  # one note per outage
    assert reconnects == [1] and sleeps == [0.2, 0.5]


def test_a_refused_stream_is_not_retried():
    with client(lambda req: httpx.Response(401, json={"detail": "revoked"})) as c, \
            pytest.raises(RemoteError, match="The server refused MAINSAIL_TOKEN: revoked"):
        list(follow_events(c, "sid-1", sleep=lambda s: None))


def test_a_server_that_stays_away_is_given_up_on_with_the_way_back(monkeypatch):
    def refuse(request):
        raise httpx.ConnectError("Connection refused")

    clock = iter(range(0, 1000, 100))
    monkeypatch.setattr("cli.remote.sse.time.monotonic", lambda: next(clock))
    with client(refuse) as c, pytest.raises(RemoteError, match="could not reconnect .* `mainsail watch sid-1234`"):
        list(follow_events(c, "sid-12345678", after="1-0", give_up_after=250, sleep=lambda s: None))


# -- which commands go where --------------------------------------------------------------------------------


@click.command("watch")
@click.argument("session")
def local_watch(session):
    click.echo(f"local {session}")


@click.command("worker")
def local_worker():
    click.echo("local worker")


def test_without_a_server_commands_are_untouched(monkeypatch):
    monkeypatch.delenv("MAINSAIL_SERVER", raising=False)
    assert route(local_watch) is local_watch and route(local_worker) is local_worker


def test_with_a_server_session_commands_are_remote_and_the_others_refuse(monkeypatch):
    monkeypatch.setenv("MAINSAIL_SERVER", "http://127.0.0.1:1")
    monkeypatch.delenv("MAINSAIL_REDIS_URL", raising=False)
    remote = route(local_watch)
    assert remote is not local_watch and remote.callback.__module__ == "cli.remote.watch"
    assert local_watch.callback.__module__ == __name__  # the original is left as it was
    out = CliRunner().invoke(route(local_worker), [])
    assert out.exit_code == 1 and "`mainsail worker` needs direct access to Redis" in out.output
    monkeypatch.setenv("MAINSAIL_REDIS_URL", "redis://127.0.0.1:1/0")  # an admin on the server: both
    assert route(local_worker) is local_worker and route(local_watch).callback.__module__ == "cli.remote.watch"


def test_the_submit_cwd_is_a_server_path_and_not_checked_here(monkeypatch):
    from cli.main import cli

    monkeypatch.setenv("MAINSAIL_SERVER", "http://127.0.0.1:1")
    monkeypatch.setenv("MAINSAIL_TOKEN", TOKEN)
    out = CliRunner().invoke(cli, ["submit", "hi"])
    assert out.exit_code == 2 and "give the session's workspace with --cwd DIR" in out.output
    out = CliRunner().invoke(cli, ["submit", "--cwd", "relative/dir", "hi"])
    assert out.exit_code == 2 and "give an absolute path on the server's machine" in out.output
    out = CliRunner().invoke(cli, ["submit", "--cwd", "/no/such/dir/here", "--continue", "hi"])
    assert out.exit_code == 2 and "--continue is not available through MAINSAIL_SERVER" in out.output
    out = CliRunner().invoke(cli, ["submit", "--cwd", "/no/such/dir/here", "hi"])  # checked on the server
    assert out.exit_code == 1 and "Cannot reach the Mainsail server at http://127.0.0.1:1" in out.output
    assert "directories on the SERVER's machine" in CliRunner().invoke(cli, ["submit", "--help"]).output
