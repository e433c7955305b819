"""``mainsail doctor`` with ``MAINSAIL_SERVER`` set checks the server and the token, not this machine
(issue 26, item 14): a real ``mainsail serve`` and a real worker; this machine's Redis is dead on purpose."""

from __future__ import annotations

import pytest

from tests.conftest import free_port
from tests.e2e.serving import Serve
from workflows.store.api_tokens import TokenStore

pytestmark = pytest.mark.e2e

SKIPPED = "- Local        local checks (Redis, workers, API key, sandbox of this machine) skipped: MAINSAIL_SERVER is set"


def doctor(cluster, workspace, server: str, token: str | None):
    env = {k: v for k, v in cluster.env.items() if k not in ("MAINSAIL_TOKEN",)}
    env.update(MAINSAIL_SERVER=server, MAINSAIL_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")  # nothing there
    env.pop("ANTHROPIC_API_KEY", None)
    if token:
        env["MAINSAIL_TOKEN"] = token
    saved, cluster.env = cluster.env, env
    try:
        return cluster.mainsail("doctor", cwd=workspace, timeout=60)
    finally:
        cluster.env = saved


def test_doctor_checks_the_server_and_the_token_and_skips_the_local_checks(cluster, workspace):
    srv = Serve(cluster).start()
    token, _ = TokenStore(cluster.store.r).create("alice", admin=True, workspaces=[str(workspace)])
    cluster.start_worker()

    out = doctor(cluster, workspace, srv.url, token)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(SKIPPED)
    assert lines[1].startswith(f"✓ Server       {srv.url} answers: Mainsail ")
    assert lines[2] == f"✓ Token        valid: alice (read-write; admin; workspaces {workspace})"
    assert lines[3].startswith("! Redis        the server's Redis ") and "AOF is off" in lines[3]
    assert lines[4].startswith("✓ Workers      1 live on the server: ") and "(model,tools,memory" in lines[4]
    assert lines[5] == "✓ API key      1 of 1 model worker(s) hold an API key or base URL"
    assert "Could not connect to Redis" not in out.stdout and "Sandbox" not in out.stdout
    assert token not in out.stdout + out.stderr

    refused = doctor(cluster, workspace, srv.url, "mst_not_a_real_token")
    assert refused.returncode == 1
    assert f"✓ Server       {srv.url} answers" in refused.stdout
    assert "✗ Token        The server refused MAINSAIL_TOKEN: The API token is unknown or revoked" in refused.stdout
    missing = doctor(cluster, workspace, srv.url, None)
    assert missing.returncode == 1 and "✗ Token        MAINSAIL_TOKEN is not set" in missing.stdout

    srv.kill()
    down = doctor(cluster, workspace, srv.url, token)
    assert down.returncode == 1 and f"✗ Server       Cannot reach the Mainsail server at {srv.url}" in down.stdout
    assert "Traceback" not in down.stdout + down.stderr
