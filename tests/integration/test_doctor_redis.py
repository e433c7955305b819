"""``mainsail doctor`` against real private Redis servers: a password, an ACL user, a
server that ignores the password it is given, AOF on and off, registered workers, and
the embedded server found through its URL file."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cli import doctor
from cli.main import cli
from tests.conftest import RedisServer, free_port
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration


@pytest.fixture
def env(monkeypatch, tmp_path):
    for var in ("MAINSAIL_REDIS_URL", "MAINSAIL_REDIS_CA_FILE", "ANTHROPIC_BASE_URL", "MAINSAIL_EMBEDDED_WORKER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MAINSAIL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MAINSAIL_LOCAL_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000")
    monkeypatch.setattr(doctor, "check_sandbox", lambda: doctor.Check(doctor.OK, "Sandbox", "bwrap works"))
    return monkeypatch


def run_doctor() -> tuple[int, dict[str, str], str]:
    result = CliRunner().invoke(cli, ["doctor"], catch_exceptions=False)
    assert "Traceback" not in result.output
    found = {line[2:14].strip(): line for line in result.output.splitlines() if line[:1] in "✓!✗"}
    return result.exit_code, found, result.output


def test_a_password_protected_redis(env, auth_redis_server, auth_redis):
    env.setenv("MAINSAIL_REDIS_URL", auth_redis_server.url)
    code, found, out = run_doctor()
    assert code == 0, out
    assert found["Redis"].startswith(f"✓ Redis        redis://:***@127.0.0.1:{auth_redis_server.port}/0 "
                                     "(MAINSAIL_REDIS_URL) answers: Redis ")
    assert found["Redis auth"] == "✓ Redis auth   authenticated as default"
    assert found["Persistence"].startswith("! Persistence  AOF is off")
    assert found["Workers"].startswith("! Workers      none registered; no worker serves model, tools, memory")
    assert "s3cret-Pw_1" not in out and "sk-ant-test-0000" not in out


def test_an_acl_user_with_the_recommended_rules_sees_everything(env, auth_redis_server, auth_redis):
    Store(auth_redis).register_worker("mainsail-1@host", ["model", "tools", "memory"], ttl=30)
    env.setenv("MAINSAIL_REDIS_URL", auth_redis_server.alice_url)
    code, found, out = run_doctor()
    assert code == 0, out
    assert "answers: Redis 7" in found["Redis"] or "answers: Redis 8" in found["Redis"]
    assert found["Redis auth"] == "✓ Redis auth   authenticated as alice"
    assert found["Workers"] == "✓ Workers      1 registered: mainsail-1@host (model,tools,memory)"


def test_a_wrong_password_is_a_failure_that_says_authentication_failed(env, auth_redis_server):
    env.setenv("MAINSAIL_REDIS_URL", auth_redis_server.url.replace("s3cret-Pw_1", "guess"))
    code, found, out = run_doctor()
    assert code == 1
    assert found["Redis"].startswith(f"✗ Redis        Redis at redis://:***@127.0.0.1:{auth_redis_server.port}/0 "
                                     "refused the connection: authentication failed")
    assert "guess" not in out


def test_a_password_the_server_does_not_check_is_a_warning(env, redis_server, real_redis):
    env.setenv("MAINSAIL_REDIS_URL", redis_server.url.replace("redis://", "redis://:ignored@"))
    code, found, out = run_doctor()
    assert code == 0
    assert found["Redis auth"].startswith("! Redis auth   this Redis also accepts clients without a password")


def test_aof_on_and_the_embedded_server_found_through_its_url_file(env, tmp_path):
    server = RedisServer(appendonly=True, password="emb-Pw_3")
    try:
        url_file = tmp_path / "data" / "redis" / "url"
        url_file.parent.mkdir(parents=True)
        url_file.write_text(server.url)
        code, found, out = run_doctor()
        assert code == 0, out
        assert f"(the embedded Redis, {url_file.parent})" in found["Redis"]
        assert found["Persistence"] == "✓ Persistence  AOF is on: sessions survive a Redis restart"
        assert "emb-Pw_3" not in out
    finally:
        server.stop()
