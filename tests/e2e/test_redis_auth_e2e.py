"""A session end to end through an authenticated Redis: real worker processes and the
installed CLI with a requirepass password, as an ACL user limited to Mainsail's keys
(the README's team-member rules), and over TLS (``rediss://``, a test CA)."""

from __future__ import annotations

import os

import pytest

from tests.e2e.conftest import MAINSAIL, Cluster
from tests.e2e.test_agent_loop import check_transcript, script
from tests.fakeapi import FakeMessagesServer
from workflows.store.redis_store import Store

pytestmark = pytest.mark.e2e


@pytest.fixture
def make_cluster(tmp_path):
    """Build a Cluster whose processes use ``url`` (plus ``extra`` env); stop it after the test."""
    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed (pip install -e .)")
    clusters = []

    def make(url: str, client, **extra: str) -> Cluster:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
        env["MAINSAIL_WARM"] = "false"  # (no warm server per test: tests/conftest.py)
        env.update({"MAINSAIL_REDIS_URL": url, "MAINSAIL_DATA_DIR": str(tmp_path / "data"),
                    "MAINSAIL_LEASE_SECONDS": "2", "MAINSAIL_REAPER_INTERVAL_SECONDS": "0.5",
                    "MAINSAIL_EMBEDDED_WORKER": "false", "ANTHROPIC_API_KEY": "test-key",
                    "PYTHONUNBUFFERED": "1", **extra})
        clusters.append(Cluster(env, Store(client), tmp_path))
        return clusters[-1]

    yield make
    for c in clusters:
        c.stop()


def run_session(cluster: Cluster, workspace, secret: str):
    with FakeMessagesServer(script()) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        out = cluster.mainsail("run", "--permission-mode", "bypassPermissions", "Fix the bug", cwd=workspace)
    assert out.returncode == 0, out.stdout + out.stderr
    assert secret not in out.stdout + out.stderr
    check_transcript(cluster, workspace)


def test_a_session_runs_through_a_password_protected_redis(make_cluster, auth_redis_server, auth_redis, workspace):
    run_session(make_cluster(auth_redis_server.url, auth_redis), workspace, "s3cret-Pw_1")


def test_a_session_runs_as_an_acl_user_limited_to_mainsail_keys(make_cluster, auth_redis_server, auth_redis,
                                                                 workspace):
    run_session(make_cluster(auth_redis_server.alice_url, auth_redis), workspace, "alice-pw")
    assert {k.decode().split(":")[0] for k in auth_redis.keys("*")} <= {"mainsail", "mainsail-celery"}


def test_a_session_runs_over_tls(make_cluster, tls_redis_server, tls_redis, tls_files, workspace):
    cluster = make_cluster(tls_redis_server.url, tls_redis, MAINSAIL_REDIS_CA_FILE=tls_files.ca)
    run_session(cluster, workspace, "tls-Pw_2")


def test_the_worker_log_masks_the_password(make_cluster, auth_redis_server, auth_redis):
    cluster = make_cluster(auth_redis_server.url, auth_redis)
    cluster.start_worker("-Q", "model")
    cluster.stop()
    log = (cluster.tmp / "worker-0.log").read_text()
    assert f"redis://:***@127.0.0.1:{auth_redis_server.port}/0" in log
    assert "s3cret-Pw_1" not in log
