"""docker-compose.yml, without Docker: parse it, interpolate its variables as Compose does,
and run each service's command as a local process (Redis with the file's flags and
password, each worker with its environment), then run the agent-loop scenario through
them, with the CLI connecting as a team member's ACL user (the README's recipe)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import redis

from tests.compose import interpolate, load_compose
from tests.conftest import ROOT, TEAM_ACL, free_port
from tests.e2e.conftest import MAINSAIL, Cluster, wait_for
from tests.e2e.test_agent_loop import check_transcript, script
from tests.fakeapi import FakeMessagesServer
from workflows.store.redis_store import Store

pytestmark = pytest.mark.e2e

PASSWORD = "compose-Pw_4"
ENV = {"MAINSAIL_REDIS_PASSWORD": PASSWORD}


def image_healthcheck() -> list[str]:
    """The Dockerfile's HEALTHCHECK command (its exec form)."""
    (line,) = [ln for ln in (ROOT / "Dockerfile").read_text().splitlines() if ln.startswith("HEALTHCHECK")]
    return json.loads(line[line.index(" CMD ") + 5:])


def workers(services: dict) -> dict:
    return {name: svc for name, svc in services.items() if svc.get("command", [])[:2] == ["mainsail", "worker"]}


def test_compose_declares_redis_with_aof_a_password_and_a_worker_per_queue():
    services = load_compose()["services"]
    redis_cmd = [interpolate(arg, ENV) for arg in services["redis"]["command"]]
    assert redis_cmd[0] == "redis-server"
    assert redis_cmd[redis_cmd.index("--appendonly") + 1] == "yes"
    assert redis_cmd[redis_cmd.index("--requirepass") + 1] == PASSWORD
    assert interpolate(services["redis"]["environment"]["REDISCLI_AUTH"], ENV) == PASSWORD
    queues = {}
    for name, svc in workers(services).items():
        cmd = svc["command"]
        assert cmd[:2] == ["mainsail", "worker"], name
        queues[cmd[cmd.index("-Q") + 1]] = name
        assert interpolate(svc["environment"]["MAINSAIL_REDIS_URL"], ENV) == f"redis://:{PASSWORD}@redis:6379/0"
    assert set(queues) == {"model", "tools", "memory"}


def test_compose_refuses_to_start_without_a_password():
    services = load_compose()["services"]
    for value in [*services["redis"]["command"], services["model-worker"]["environment"]["MAINSAIL_REDIS_URL"]]:
        if "MAINSAIL_REDIS_PASSWORD" in value:
            with pytest.raises(ValueError, match="set MAINSAIL_REDIS_PASSWORD"):
                interpolate(value, {})


def test_redis_is_published_only_on_request_and_on_localhost_by_default():
    services = load_compose()["services"]
    assert not any("ports" in svc for name, svc in services.items() if name not in ("server", "flower"))
    (flower,) = services["flower"]["ports"]  # an optional profile, on localhost too
    assert services["flower"]["profiles"] == ["flower"] and interpolate(flower, {}) == "127.0.0.1:5555:5555"
    (http,) = services["server"]["ports"]  # the team server's HTTP port: on localhost unless told otherwise
    assert interpolate(http, {}) == "127.0.0.1:8750:8750"
    assert services["server"]["command"][:2] == ["mainsail", "serve"] and "--no-worker" in services["server"]["command"]
    (published,) = load_compose("docker-compose.publish.yml")["services"]["redis"]["ports"]
    assert interpolate(published, {}) == "127.0.0.1:6379:6379"
    assert interpolate(published, {"MAINSAIL_REDIS_BIND": "10.0.0.2"}) == "10.0.0.2:6379:6379"


@pytest.fixture
def compose_redis(tmp_path):
    """The compose file's redis service as a local process (its own port, 127.0.0.1, a temp dir)."""
    if MAINSAIL is None or shutil.which("redis-server") is None:
        pytest.skip("needs the mainsail command and redis-server")
    port = free_port()
    data = tmp_path / "redis-data"
    data.mkdir()
    command = [interpolate(arg, ENV) for arg in load_compose()["services"]["redis"]["command"]]
    proc = subprocess.Popen(command + ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(data)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port, password=PASSWORD)
    wait_for(lambda: _pings(client), 10, what="compose redis")
    yield port, data, client
    client.close()
    proc.terminate()
    proc.wait(10)


def test_compose_redis_requires_the_password_and_its_healthcheck_uses_it(compose_redis):
    port, _, _ = compose_redis
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port).ping()
    service = load_compose()["services"]["redis"]
    kind, check = service["healthcheck"]["test"]
    assert kind == "CMD-SHELL"
    check = check.replace("redis-cli", f"redis-cli -p {port}")
    auth = {"REDISCLI_AUTH": interpolate(service["environment"]["REDISCLI_AUTH"], ENV)}
    assert subprocess.run(["sh", "-c", check], env={**os.environ, **auth}).returncode == 0
    without = {k: v for k, v in os.environ.items() if k != "REDISCLI_AUTH"}
    assert subprocess.run(["sh", "-c", check], env=without).returncode != 0


def test_the_scenario_passes_through_the_compose_services_for_a_team_member(compose_redis, tmp_path, workspace):
    port, data, client = compose_redis
    # The README's recipe: `docker compose exec redis redis-cli ACL SETUSER alice reset on >PASSWORD ...`.
    subprocess.run(["redis-cli", "-p", str(port), "ACL", "SETUSER", "alice", "reset", ">alice-Pw_5", *TEAM_ACL],
                   env={**os.environ, "REDISCLI_AUTH": PASSWORD}, check=True, capture_output=True)
    alice_url = f"redis://alice:alice-Pw_5@127.0.0.1:{port}/0"
    with FakeMessagesServer(script()) as server:
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
        base_env.update({"MAINSAIL_LEASE_SECONDS": "2", "MAINSAIL_REAPER_INTERVAL_SECONDS": "0.5",
                         "MAINSAIL_DATA_DIR": str(tmp_path / "data")})
        cluster = Cluster(dict(base_env, MAINSAIL_REDIS_URL=alice_url, MAINSAIL_EMBEDDED_WORKER="false",
                               ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url),
                          Store(client), tmp_path)
        try:
            host_env = dict(ENV, ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url)
            for svc in workers(load_compose()["services"]).values():
                env = dict(base_env)
                for key, value in svc["environment"].items():
                    env[key] = interpolate(str(value), host_env).replace("@redis:6379/", f"@127.0.0.1:{port}/")
                cluster.start_worker(cmd=[MAINSAIL if c == "mainsail" else c for c in svc["command"]], env=env)
            assert cluster.store.live_queues() >= {"model", "tools", "memory"}
            # The health checks as the containers run them: the image's (a worker) and the beat's (Redis).
            services = load_compose()["services"]
            beat = services["beat"]["healthcheck"]["test"][1:]
            for check, svc in ((image_healthcheck(), services["model-worker"]), (beat, services["beat"])):
                env = dict(base_env)
                for key, value in svc["environment"].items():
                    env[key] = interpolate(str(value), host_env).replace("@redis:6379/", f"@127.0.0.1:{port}/")
                done = subprocess.run([sys.executable, *check[1:]], env=env, capture_output=True, text=True,
                                      timeout=60)
                assert done.returncode == 0, (check, done.stderr)
            out = cluster.mainsail("run", "--permission-mode", "bypassPermissions", "Fix the bug", cwd=workspace)
            assert out.returncode == 0, out.stdout + out.stderr
            check_transcript(cluster, workspace)
            assert (data / "appendonlydir").is_dir(), "Redis did not write its AOF"
            doctor = cluster.mainsail("doctor", cwd=workspace)
            assert doctor.returncode == 0, doctor.stdout + doctor.stderr
            assert "✓ Redis auth   authenticated as alice" in doctor.stdout
            from cli.worker import defaults_for

            # the model service runs `mainsail worker -Q model`: its default processes, each registered
            assert f"✓ Workers      {2 + defaults_for(['model']).processes} registered" in doctor.stdout
            assert "✓ Persistence  AOF is on" in doctor.stdout
            assert "alice-Pw_5" not in out.stdout + out.stderr + doctor.stdout + doctor.stderr
        finally:
            cluster.stop()


def _pings(client) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
