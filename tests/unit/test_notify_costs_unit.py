"""Webhook subscriptions, events, signatures; the cost report and budgets (pure code and fakeredis)."""

from __future__ import annotations

import json
import socket

import pytest

from statemachines import State
from workflows.costs.budgets import Budget, make_budget, refusal, spent
from workflows.costs.report import parse_by, report
from workflows.exceptions import ConfigurationError, NotifyError
from workflows.models import ResultEntry, SessionRecord, StateEntry
from workflows.notify.delivery import DeliveryFailed, post, request_of, sign, verify
from workflows.notify.events import events_of
from workflows.notify.outbox import Outbox
from workflows.notify.subscriptions import make_subscription, shown_url
from workflows.store.costs import CostRow, CostStore, add_call
from workflows.store.notify import NotifyStore, stage
from workflows.store.redis_store import Store

NOW = 1_795_000_000.0  # 2026-11-18 UTC

#: What the hosts of these tests resolve to (there is no DNS here): public, except the ones named inner.
ADDRESSES = {"inner.example": ["10.0.0.7"], "meta.example": ["169.254.169.254"],
             "mixed.example": ["93.184.216.34", "127.0.0.1"], "v6.example": ["::1"]}


@pytest.fixture(autouse=True)
def resolver(monkeypatch):
    def getaddrinfo(host, port, *args, **kw):
        if host in ("localhost",) or host.replace(".", "").isdigit():
            addresses = [host if host != "localhost" else "127.0.0.1"]
        elif host == "unknown.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        else:
            addresses = ADDRESSES.get(host, ["93.184.216.34"])
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
                for a in addresses]
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://host/x", "/relative", "http://", "javascript:alert(1)",
                                 "http://user:pw@host/x", "http://host:99999/"])
def test_a_webhook_url_must_be_http_or_https_with_a_host_and_no_credentials(url):
    with pytest.raises(NotifyError):
        make_subscription(kind="generic", url=url, token="alice", workspace=None)


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379/", "http://localhost/x", "http://inner.example/h",
                                 "http://meta.example/latest/meta-data", "https://mixed.example/", "http://v6.example/",
                                 "http://unknown.example/"])
def test_a_writer_tokens_webhook_may_not_reach_the_servers_own_network(url):
    """Server-side request forgery: a webhook made by a writer token (``private_ok`` false) goes to public
    addresses only, checked when made and again at delivery (the host may resolve elsewhere later); the operator
    (`mainsail notify add`) and admin tokens may name an inner receiver."""
    with pytest.raises(NotifyError, match="non-public|does not resolve"):
        make_subscription(kind="generic", url=url, token="alice", workspace=None)
    sub = make_subscription(kind="generic", url=url, token="alice", workspace=None, private_ok=True)
    assert sub.private_ok
    later = make_subscription(kind="generic", url="https://x.example/h", token="alice", workspace=None)
    later.url = url  # (as if x.example now resolved to the inner address)
    rec = SessionRecord(id="s1", workspace="/w", model="m", token="alice")
    [event] = events_of(rec, [ResultEntry(session_id="s1", result="ok")], "https://mainsail.example")
    with pytest.raises(DeliveryFailed, match="non-public|does not resolve"):
        post(event, later)


def test_a_subscription_names_one_scope_and_known_events(tmp_path):
    with pytest.raises(NotifyError, match="exactly one"):
        make_subscription(kind="generic", url="https://x.example/h", token="a", workspace=str(tmp_path))
    with pytest.raises(NotifyError, match="Unknown event"):
        make_subscription(kind="generic", url="https://x.example/h", token="a", workspace=None, events=["done"])
    with pytest.raises(NotifyError, match="no signing secret"):
        make_subscription(kind="slack", url="https://hooks.slack.com/services/T/B/X", token="a", workspace=None,
                          secret="0123456789abcdef")
    sub = make_subscription(kind="generic", url="https://x.example/h?k=secret", token=None, workspace=str(tmp_path))
    assert sub.secret.startswith("whsec_") and sub.covers("", str(tmp_path / "sub")) and not sub.covers("", "/else")
    assert shown_url(sub.url) == "https://x.example/…" and "secret" not in json.dumps(sub.shown())


def test_the_signature_is_hmac_sha256_over_timestamp_dot_body_and_verify_refuses_changes():
    sub = make_subscription(kind="generic", url="https://x.example/h", token="a", workspace=None,
                            secret="s" * 20)
    rec = SessionRecord(id="s1", workspace="/w", model="m", token="a")
    [event] = events_of(rec, [ResultEntry(session_id="s1", result="ok")], "https://mainsail.example")
    body, headers = request_of(event, sub, now=NOW)
    assert headers["Mainsail-Signature"] == sign("s" * 20, int(NOW), body)
    assert verify("s" * 20, headers["Mainsail-Signature"], body, now=NOW + 10)
    assert not verify("s" * 20, headers["Mainsail-Signature"], body + b" ", now=NOW)
    assert not verify("t" * 20, headers["Mainsail-Signature"], body, now=NOW)
    assert not verify("s" * 20, headers["Mainsail-Signature"], body, now=NOW + 301)  # too old: a replay
    assert json.loads(body)["link"] == "https://mainsail.example/sessions/s1"


def test_events_waiting_finished_failed_and_none_for_cancels_or_sub_agents():
    rec = SessionRecord(id="s1", workspace="/w", model="m")
    waiting = StateEntry(session_id="s1", trigger="ask", source=State.QUERYING, dest=State.AWAITING_PERMISSION)
    assert events_of(rec, [waiting], "http://x") == []  # (no pending permission request: nothing to approve)
    failed = ResultEntry(session_id="s1", subtype="error_max_turns", is_error=True)
    cancelled = ResultEntry(session_id="s1", subtype="cancelled", is_error=True)
    assert [e.type for e in events_of(rec, [failed, cancelled, ResultEntry(session_id="s1")], "http://x")] == [
        "failed", "finished"]
    child = SessionRecord(id="c1", workspace="/w", model="m", parent_session_id="s1")
    assert events_of(child, [ResultEntry(session_id="c1")], "http://x") == []


def test_the_dispatcher_sends_each_event_to_the_subscriptions_that_want_it(fake_redis):
    store = Store(fake_redis)
    mine = store.notify().add(make_subscription(kind="generic", url="https://a.example/", token="alice",
                                                workspace=None, events=["failed"]))
    store.notify().add(make_subscription(kind="slack", url="https://b.example/", token="bob", workspace=None))
    sent = []
    rec = SessionRecord(id="s1", workspace="/w", model="m", token="alice")
    ops = store.pipeline()
    staged = stage(rec, [ResultEntry(session_id="s1"), ResultEntry(session_id="s1", subtype="error_max_turns",
                                                                    is_error=True)], "http://x", ops, 10)
    ops.execute()
    Outbox(store.notify(), lambda event, sub: sent.append((event.type, sub.id))).landed(staged)
    assert sent == [("failed", mine.id)]


def test_a_delivery_is_claimed_once_and_released_after_a_failure(fake_redis):
    store = NotifyStore(fake_redis)
    assert store.claim("e1", "sub1") == "ok" and store.claim("e1", "sub1") == "busy"
    store.release("e1", "sub1")
    assert store.claim("e1", "sub1") == "ok"
    store.delivered("e1", "sub1")
    assert store.claim("e1", "sub1") == "done"


def test_the_ledger_sums_calls_by_day_token_workspace_and_model(fake_redis):
    for token, ws, model, cost in [("a", "/w1", "m1", 0.5), ("a", "/w1", "m1", 0.25), ("b", "/w2", "m2", None)]:
        pipe = fake_redis.pipeline()
        add_call(pipe, token, ws, model, 100, cost, when=NOW)
        pipe.execute()
    rows = CostStore(fake_redis).rows(CostStore(fake_redis).days())
    out = report(rows, parse_by("token"))
    assert out["groups"] == [{"token": "a", "cost_usd": 0.75, "tokens": 200, "unpriced_calls": 0},
                             {"token": "b", "cost_usd": 0.0, "tokens": 100, "unpriced_calls": 1}]
    assert report(rows, ["day"], since="2026-11-19")["groups"] == []
    with pytest.raises(ConfigurationError, match="day, token, workspace, model"):
        parse_by("week")


def test_a_budget_refuses_once_spent_names_its_limit_and_fix_and_counts_its_period_only(tmp_path):
    rows = [CostRow("2026-11-18", "alice", "/w", "m", 1.5), CostRow("2026-10-31", "alice", "/w", "m", 9.0),
            CostRow("2026-11-18", "bob", "/w/sub", "m", 0.75)]
    month = Budget(scope="token", name="alice", limit_usd=2)
    assert spent(month, rows, "2026-11-18") == (1.5, 0)
    assert refusal([month], rows, "alice", "/w", now=NOW) is None
    day = make_budget(token=None, workspace=str(tmp_path), limit_usd=0.5, period="day")
    rows.append(CostRow("2026-11-18", "bob", str(tmp_path / "x"), "m", 0.5))
    why = refusal([month, day], rows, "bob", str(tmp_path / "x"), now=NOW)
    assert why.startswith(f"Budget of workspace {tmp_path} is spent: $0.5000 of its $0.5 limit today (UTC).")
    assert f"mainsail budget set --workspace {tmp_path} --limit-usd N" in why
    unknown = [CostRow("2026-11-18", "alice", "/w", "m", 0.0, unpriced_calls=2)]
    assert "2 call(s) this month" in refusal([month], unknown, "alice", "/w", now=NOW)
    with pytest.raises(ConfigurationError, match="exactly one"):
        make_budget(token=None, workspace=None, limit_usd=1)
    with pytest.raises(ConfigurationError, match="greater than 0"):
        make_budget(token="a", workspace=None, limit_usd=0)
