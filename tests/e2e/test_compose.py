"""docker-compose.yml, without Docker: parse it and run each service's command as a
local process (Redis with the file's flags, each worker with its environment),
then run the agent-loop scenario through them."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import redis
import yaml

from tests.conftest import ROOT, free_port
from tests.e2e.conftest import MAINSAIL, Cluster, wait_for
from tests.e2e.test_agent_loop import check_transcript, script
from tests.fakeapi import FakeMessagesServer
from workflows.store import Store

pytestmark = pytest.mark.e2e


def load_compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_declares_redis_with_aof_and_a_worker_per_queue():
    services = load_compose()["services"]
    redis_cmd = services["redis"]["command"]
    assert redis_cmd[0] == "redis-server"
    assert redis_cmd[redis_cmd.index("--appendonly") + 1] == "yes"
    queues = {}
    for name, svc in services.items():
        if name == "redis":
            continue
        cmd = svc["command"]
        assert cmd[:2] == ["mainsail", "worker"], name
        queues[cmd[cmd.index("-Q") + 1]] = name
        assert svc["environment"]["MAINSAIL_REDIS_URL"] == "redis://redis:6379/0"
    assert set(queues) == {"model", "tools", "memory"}


def test_the_scenario_passes_through_the_compose_services(tmp_path, workspace):
    if MAINSAIL is None or shutil.which("redis-server") is None:
        pytest.skip("needs the mainsail command and redis-server")
    services = load_compose()["services"]
    port = free_port()
    data = tmp_path / "redis-data"
    data.mkdir()
    redis_proc = subprocess.Popen(services["redis"]["command"] + ["--port", str(port), "--bind", "127.0.0.1",
                                                                   "--dir", str(data)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    try:
        wait_for(lambda: _pings(client), 10, what="compose redis")
        with FakeMessagesServer(script()) as server:
            base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
            base_env.update({"MAINSAIL_LEASE_SECONDS": "2", "MAINSAIL_REAPER_INTERVAL_SECONDS": "0.5",
                             "MAINSAIL_DATA_DIR": str(tmp_path / "data")})
            cluster = Cluster(dict(base_env, MAINSAIL_REDIS_URL=url, MAINSAIL_EMBEDDED_WORKER="false",
                                   ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url),
                              Store(client), tmp_path)
            try:
                for name, svc in services.items():
                    if name == "redis":
                        continue
                    env = dict(base_env)
                    for key, value in svc["environment"].items():
                        env[key] = _local(str(value), url, server.url)
                    env["ANTHROPIC_API_KEY"] = "test-key"
                    env["ANTHROPIC_BASE_URL"] = server.url
                    cluster.start_worker(cmd=[MAINSAIL if c == "mainsail" else c for c in svc["command"]],
                                         env=env)
                assert cluster.store.live_queues() >= {"model", "tools", "memory"}
                out = cluster.mainsail("run", "--permission-mode", "bypassPermissions", "Fix the bug",
                                       cwd=workspace)
                assert out.returncode == 0, out.stdout + out.stderr
                check_transcript(cluster, workspace)
                assert (data / "appendonlydir").is_dir(), "Redis did not write its AOF"
            finally:
                cluster.stop()
    finally:
        redis_proc.terminate()
        redis_proc.wait(10)


def _local(value: str, redis_url: str, api_url: str) -> str:
    if value.startswith("redis://redis:"):
        return redis_url
    if value.startswith("${ANTHROPIC_BASE_URL"):
        return api_url
    if value.startswith("${MAINSAIL_MODEL"):
        return "claude-sonnet-4-5"
    return value


def _pings(client) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False

