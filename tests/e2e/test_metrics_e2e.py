"""``/metrics`` of a real ``mainsail serve``: a session run by a real worker moves the counters (the worker's
counts reach Redis within seconds), the gauges read the store, and a token is required."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import wait_for
from tests.e2e.serving import Serve
from tests.e2e.test_server_api import COMMAND, create, model, wait_idle, wait_state
from tests.fakeapi import FakeMessagesServer
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.e2e


def figure(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition ``text`` (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        if m and m.group(1) == name and ",".join(sorted((m.group(2) or "").split(","))).strip(",") == want:
            return float(m.group(3))
    return 0.0


def test_a_session_moves_the_counters_and_the_gauges_read_the_store(cluster, workspace):
    with FakeMessagesServer(model) as fake:
        cluster.env["ANTHROPIC_BASE_URL"] = fake.url
        cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"
        cluster.env["MAINSAIL_MODEL"] = "claude-sonnet-4-6"  # a model with a price the figures below name
        cluster.start_worker()
        admin, _ = TokenStore(cluster.store.r).create("ops", read_only=True)
        writer, _ = TokenStore(cluster.store.r).create("lead")
        srv = Serve(cluster).start()
        with srv.client(writer) as api, srv.client(admin) as scrape:
            assert srv.client().get("/metrics").status_code == 401
            sid = create(api, workspace, "bash please")["id"]
            wait_state(api, sid, "awaiting_permission")
            waiting = scrape.get("/metrics").text
            assert figure(waiting, "mainsail_approvals_waiting") == 1
            assert figure(waiting, "mainsail_sessions", state="awaiting_permission") == 1
            assert figure(waiting, "mainsail_workers") >= 1
            assert figure(waiting, "mainsail_queue_depth", queue="model") == 0
            assert api.post(f"/api/sessions/{sid}/approve", json={}).status_code == 200
            wait_idle(api, sid)
            assert (workspace / "approved.txt").exists(), COMMAND

            def moved():
                text = scrape.get("/metrics").text
                return text if figure(text, "mainsail_steps_finished_total", kind="model", outcome="done") >= 2 \
                    and figure(text, "mainsail_approval_decision_seconds_count", by="user", decision="allow") == 1 \
                    else None

            text = wait_for(moved, 30, 0.5, "the worker's and the server's counts to reach Redis")
            resp = scrape.get("/metrics")
            assert resp.headers["content-type"].startswith("text/plain")
        assert figure(text, "mainsail_steps_finished_total", kind="tool", outcome="done") == 1
        assert figure(text, "mainsail_steps_created_total", kind="model") == 2
        assert figure(text, "mainsail_step_duration_seconds_count", kind="tool") == 1
        assert figure(text, "mainsail_step_duration_seconds_bucket", kind="tool", le="+Inf") == 1
        assert figure(text, "mainsail_model_calls_total", kind="main", model="claude-sonnet-4-6") == 2
        assert figure(text, "mainsail_model_tokens_total", model="claude-sonnet-4-6", type="output") > 0
        assert figure(text, "mainsail_model_cost_usd_total", model="claude-sonnet-4-6") > 0
        assert figure(text, "mainsail_approvals_asked_total") == 1
        assert figure(text, "mainsail_approvals_waiting") == 0
        assert figure(text, "mainsail_sessions", state="idle") == 1
