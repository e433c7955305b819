"""``mainsail doctor`` without a Redis: it says so, starts nothing, never shows a secret
or a traceback, and exits 1 only for a ✗. The checks of workers, the API key and the
sandbox, on fakeredis and stand-ins."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from cli import doctor
from cli.main import cli
from tests.conftest import free_port
from workflows.settings import load_settings
from workflows.store.redis_store import Store
from workflows.store.server import RedisServer


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No Redis anywhere: nothing configured, nothing on the local URL, an empty data dir."""
    for var in ("MAINSAIL_REDIS_URL", "MAINSAIL_REDIS_CA_FILE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                "MAINSAIL_ANTHROPIC_API_KEY", "MAINSAIL_ANTHROPIC_BASE_URL", "MAINSAIL_MODEL",
                "MAINSAIL_EMBEDDED_WORKER", "MAINSAIL_REDIS_SERVER_BIN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MAINSAIL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MAINSAIL_LOCAL_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-secretsecret-WXYZ")
    monkeypatch.setattr(doctor, "check_sandbox", lambda: doctor.Check(doctor.OK, "Sandbox", "bwrap works"))
    return monkeypatch


def run_doctor():
    result = CliRunner().invoke(cli, ["doctor"], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def lines(result) -> dict[str, str]:
    """Check name -> its line."""
    return {line[2:14].strip(): line for line in result.output.splitlines() if line[:1] in "✓!✗"}


def test_with_no_redis_anywhere_it_says_so_and_starts_nothing(env, tmp_path):
    result = run_doctor()
    assert result.exit_code == 0, result.output
    redis_line = lines(result)["Redis"]
    assert redis_line.startswith("! Redis ")
    assert "nothing answers at redis://127.0.0.1:" in redis_line and "no embedded Redis is running" in redis_line
    assert "the next mainsail command starts an embedded one" in redis_line
    assert "MAINSAIL_REDIS_URL" in redis_line
    assert lines(result)["Workers"].startswith("! Workers      cannot tell without a Redis")
    assert not (tmp_path / "data" / "redis").exists(), "doctor started an embedded Redis"


def test_without_a_redis_binary_it_warns_that_nothing_would_survive(env):
    env.setenv("MAINSAIL_REDIS_SERVER_BIN", "none")
    result = run_doctor()
    assert result.exit_code == 0
    assert "in-memory Redis that keeps nothing" in lines(result)["Redis"]
    assert "apt-get install redis-server" in lines(result)["Redis"]


def test_an_unreachable_redis_url_is_a_failure_with_the_password_masked(env):
    port = free_port()
    env.setenv("MAINSAIL_REDIS_URL", f"redis://alice:hunter2@127.0.0.1:{port}/0")
    result = run_doctor()
    assert result.exit_code == 1
    assert lines(result)["Redis"].startswith(f"✗ Redis        Could not connect to Redis at "
                                             f"redis://alice:***@127.0.0.1:{port}/0: is it running?")
    assert "hunter2" not in result.output
    assert "1 to fix (✗)" in result.output


def test_the_api_key_is_never_shown_beyond_its_last_four_characters(env):
    result = run_doctor()
    assert lines(result)["API key"] == ("✓ API key      ANTHROPIC_API_KEY is set (…WXYZ); "
                                        "workers elsewhere need their own")
    assert "secretsecret" not in result.output


def test_no_api_key_and_no_base_url_is_a_failure(env):
    env.delenv("ANTHROPIC_API_KEY")
    result = run_doctor()
    assert result.exit_code == 1
    assert lines(result)["API key"].startswith("✗ API key      neither ANTHROPIC_API_KEY nor ANTHROPIC_BASE_URL")


def test_a_base_url_is_enough(env):
    env.delenv("ANTHROPIC_API_KEY")
    env.setenv("ANTHROPIC_BASE_URL", "http://proxy.internal:8080")
    assert "ANTHROPIC_BASE_URL is http://proxy.internal:8080" in lines(run_doctor())["API key"]


# ---------------------------------------------------------------------- single checks


def test_workers_name_the_queues_nobody_serves(fake_redis, settings):
    store = Store(fake_redis)
    store.register_worker("mainsail-1@a", ["model"], ttl=30)
    store.register_worker("mainsail-2@b", ["memory"], ttl=30)
    store.register_worker("mainsail-3@gone", ["tools"], ttl=-1)  # expired
    check = doctor.check_workers(RedisServer(fake_redis), settings)
    assert check.status == doctor.WARN
    assert check.message.startswith("2 registered: mainsail-1@a (model), mainsail-2@b (memory); "
                                    "no worker serves tools: each command runs one")
    assert "`mainsail worker -Q tools`" in check.message
    strict = doctor.check_workers(RedisServer(fake_redis),
                                  load_settings(data_dir=settings.data_dir, embedded_worker=False))
    assert strict.status == doctor.FAIL and "MAINSAIL_EMBEDDED_WORKER is off" in strict.message
    store.register_worker("mainsail-4@c", ["tools"], ttl=30)
    assert doctor.check_workers(RedisServer(fake_redis), settings).status == doctor.OK


def test_the_sandbox_line_is_the_sandbox_module_s_own_words(monkeypatch):
    import workflows.permissions.sandbox as sandbox

    monkeypatch.setattr(sandbox, "sandbox_status",
                        lambda: SimpleNamespace(available=False, detail="bwrap is missing: apt-get install bubblewrap"))
    check = doctor.check_sandbox()
    assert (check.status, check.message) == (doctor.WARN, "bwrap is missing: apt-get install bubblewrap")


def test_without_a_sandbox_module_the_check_says_it_cannot_tell(monkeypatch):
    monkeypatch.setitem(sys.modules, "workflows.permissions.sandbox", None)
    assert doctor.check_sandbox().status == doctor.WARN


@pytest.mark.parametrize("host, local", [("localhost", True), ("127.0.0.1", True), ("::1", True),
                                         ("10.0.0.5", False), ("redis", False), ("db.example.com", False)])
def test_is_local(host, local):
    assert doctor.is_local(host) is local


def test_a_remote_redis_without_a_password_is_a_warning(settings):
    check = doctor.check_auth("redis://10.0.0.5:6379/0", settings)
    assert check.status == doctor.WARN
    assert "Redis at 10.0.0.5 accepts clients without a password" in check.message
    assert "MAINSAIL_REDIS_PASSWORD" in check.message
    assert doctor.check_auth("redis://127.0.0.1:6379/0", settings).status == doctor.OK
