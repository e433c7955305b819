"""docker-compose.yml's environment as written, run through Mainsail's settings and model client: with
nothing set on the host but the required password and the key, each service's ``${X:-}`` becomes an empty
variable, and an empty variable is an unset one (no ``base_url=''`` for the SDK). And each service gets only
what it needs: the key and the relaxed confinement go to the workers alone; the image runs as a user and
checks its health; every variable the compose files read is in .env.example."""

from __future__ import annotations

import os
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from cli import health
from tests.compose import load_compose, mainsail_services, service_env
from tests.conftest import ROOT
from workflows.model.client import DEFAULT_BASE_URL, _make
from workflows.settings import Settings, load_settings
from workflows.store.registry import Workers

HOST = {"MAINSAIL_REDIS_PASSWORD": "pw", "ANTHROPIC_API_KEY": "sk-test"}  # all a user must set
WORKERS = ("model-worker", "tools-worker", "memory-worker")
OTHERS = ("server", "beat", "flower")


@pytest.fixture
def container_env(monkeypatch):
    """Make the process environment a service's container environment (Mainsail's variables only)."""
    def enter(env: dict[str, str]) -> Settings:
        for name in list(os.environ):
            if name.startswith(("MAINSAIL_", "ANTHROPIC_")):
                monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return load_settings()
    return enter


@pytest.mark.parametrize("name", [*WORKERS, *OTHERS])
def test_each_service_s_environment_as_written_gives_valid_settings(container_env, name):
    env = service_env(load_compose()["services"][name], HOST)
    settings = container_env(env)
    assert settings.redis_url == "redis://:pw@redis:6379/0"
    assert settings.model == Settings.model_fields["model"].default  # MAINSAIL_MODEL="" is unset
    assert settings.anthropic_base_url is None


@pytest.mark.parametrize("name", WORKERS)
def test_a_worker_s_model_client_reaches_the_api_when_the_base_url_is_left_empty(container_env, name):
    env = service_env(load_compose()["services"][name], HOST)
    assert env["ANTHROPIC_BASE_URL"] == ""  # what compose passes for an unset ${ANTHROPIC_BASE_URL:-}
    client = _make("claude-x", container_env(env))
    assert str(client.base_url).rstrip("/") == DEFAULT_BASE_URL
    assert client.api_key == "sk-test"


def test_empty_mainsail_variables_are_unset_and_the_sandbox_default_holds(container_env):
    from workflows.permissions.sandbox import sandbox_env_enabled

    settings = container_env({"MAINSAIL_MAX_TOKENS": "", "MAINSAIL_LEASE_SECONDS": "", "MAINSAIL_SANDBOX": "",
                              "MAINSAIL_REDIS_URL": "", "ANTHROPIC_API_KEY": ""})
    assert settings.max_tokens == 8192 and settings.lease_seconds == 30.0 and settings.redis_url is None
    assert settings.anthropic_api_key is None
    assert sandbox_env_enabled() is True


def test_only_the_workers_get_the_api_key_and_the_relaxed_confinement():
    services = load_compose()["services"]
    for name in WORKERS:
        env = services[name]["environment"]
        assert "ANTHROPIC_API_KEY" in env and "ANTHROPIC_BASE_URL" in env, name
        assert set(services[name]["security_opt"]) == {"seccomp=unconfined", "apparmor=unconfined"}, name
    for name in OTHERS:
        assert not [k for k in services[name]["environment"] if k.startswith("ANTHROPIC_")], name
        assert "security_opt" not in services[name], name
    assert set(mainsail_services(services)) == {*WORKERS, *OTHERS}


def test_the_image_runs_as_a_user_who_owns_the_workspaces_and_checks_its_health():
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines()]
    users = [ln.split()[1] for ln in lines if ln.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(rf"chown {users[-1]}:{users[-1]} /workspaces", text)
    assert "HEALTHCHECK" in text and "cli.health" in text and '"worker"' in text
    services = load_compose()["services"]
    for name in OTHERS:  # their own check; the workers use the image's
        assert services[name]["healthcheck"]["test"][:4] == ["CMD", "python", "-m", "cli.health"], name
    assert all("healthcheck" not in services[name] for name in WORKERS)


def test_env_example_names_every_variable_the_compose_files_read_and_git_ignores_env():
    read = set()
    for name in ("docker-compose.yml", "docker-compose.publish.yml"):
        read |= set(re.findall(r"\$\{(\w+)", (ROOT / name).read_text()))
    example = (ROOT / ".env.example").read_text()
    named = set(re.findall(r"^(\w+)=", example, re.M))
    assert read <= named, read - named
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_worker_health_is_a_live_registration_from_this_host(fake_redis, monkeypatch):
    monkeypatch.setattr(health, "_redis", lambda: fake_redis)
    assert "no live worker registration" in health.check_worker()
    Workers(fake_redis).register("mainsail-1@x", ["model"], ttl=30, info={"host": "elsewhere"})
    assert "1 live worker(s)" in health.check_worker()
    Workers(fake_redis).register("mainsail-2@y", ["tools"], ttl=30, info={"host": socket.gethostname()})
    assert health.check_worker() is None
    assert health.main(["worker"]) == 0


def test_health_says_what_is_wrong_in_one_line(monkeypatch, capsys):
    monkeypatch.delenv("MAINSAIL_REDIS_URL", raising=False)
    assert health.main(["redis"]) == 1
    assert capsys.readouterr().err == "unhealthy: RuntimeError: MAINSAIL_REDIS_URL is not set in this container\n"
    assert health.main(["nonsense"]) == 2


def test_http_health_wants_a_200():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/ok" else 503)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        assert health.check_http(f"{base}/ok") is None
        assert health.check_http(f"{base}/down") == f"{base}/down answered 503"
    finally:
        server.shutdown()
