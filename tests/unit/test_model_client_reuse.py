"""A worker builds one SDK client per configuration and its HTTP connections are kept across calls."""

from __future__ import annotations

import pytest

from demo.scripted import Script, Turn
from tests.fakeapi import FakeMessagesServer
from workflows.model import client as model_client
from workflows.model.client import client_for, stream_reply

MODEL = "claude-sonnet-5"


@pytest.fixture
def fresh_clients(monkeypatch):
    monkeypatch.setattr(model_client, "_clients", {})


@pytest.fixture
def server():
    with FakeMessagesServer(Script(turns=[Turn(text="hi")])) as srv:
        yield srv


def request(text: str) -> dict:
    return {"model": MODEL, "max_tokens": 100, "messages": [{"role": "user", "content": text}]}


def test_one_client_per_configuration(fresh_clients, settings, server):
    settings.anthropic_api_key, settings.anthropic_base_url = "k", server.url
    first = client_for(MODEL, settings)
    assert client_for(MODEL, settings) is first
    assert client_for("claude-opus-5", settings) is first  # the model is not part of a real client's key
    settings.api_timeout_seconds = settings.api_timeout_seconds + 1
    assert client_for(MODEL, settings) is not first


def test_successive_calls_reuse_one_http_connection(fresh_clients, settings, server):
    settings.anthropic_api_key, settings.anthropic_base_url = "k", server.url
    for i in range(3):
        reply = stream_reply(client_for(MODEL, settings), request(f"hello {i}"), lambda _text: None)
        assert reply.message.text() == "hi"
    assert len(server.requests) == 3
    assert server.connections == 1


def test_each_group_of_threads_has_a_client_of_its_own(fresh_clients, settings, server, monkeypatch):
    """httpcore's pool does work proportional to its connections at every request: a pool per few threads."""
    import itertools
    import threading

    monkeypatch.setattr(model_client, "_local", threading.local())
    monkeypatch.setattr(model_client, "_threads", itertools.count())
    settings.anthropic_api_key, settings.anthropic_base_url = "k", server.url
    got: dict[int, list] = {}

    def call(i: int) -> None:
        got[i] = [client_for(MODEL, settings), client_for(MODEL, settings)]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2 * model_client.THREADS_PER_CLIENT)]
    for t in threads:
        t.start()
        t.join()  # one at a time: the n-th thread to ask is thread n
    assert all(a is b for a, b in got.values())  # a thread keeps its client (and its connections)
    clients = {id(c) for c, _ in got.values()}
    assert len(clients) == 2


def test_the_clients_of_a_process_share_one_tls_context(fresh_clients, settings, server, monkeypatch):
    """Building a TLS context loads the CA bundle (~40 ms of CPU): made once per process, not per client."""
    import httpx2

    made = []
    real = httpx2.create_ssl_context
    monkeypatch.setattr(model_client, "_TLS", None)
    monkeypatch.setattr(httpx2, "create_ssl_context", lambda *a, **kw: made.append(1) or real(*a, **kw))
    settings.anthropic_api_key, settings.anthropic_base_url = "k", server.url
    clients = []
    for timeout in (30.0, 31.0, 32.0):  # three configurations: three clients
        settings.api_timeout_seconds = timeout
        clients.append(client_for(MODEL, settings))
    assert len({id(c) for c in clients}) == 3 and len(made) == 1
    for c in clients:  # and each still calls the API
        assert stream_reply(c, request("hello"), lambda _text: None).message.text() == "hi"
