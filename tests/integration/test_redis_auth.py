"""Authenticated Redis everywhere: the CLI's connection, the store client and the Celery
broker, with a requirepass password, an ACL user and TLS (``rediss://``), against private
redis-servers started by the suite. A URL in a message never shows its password."""

from __future__ import annotations

import pytest
import redis
from click.testing import CliRunner

from cli.connect import resolve_redis_url
from cli.main import cli
from cli.redis_probe import probe
from tasks import runtime
from tasks.app import app, configure
from workflows.exceptions import ConfigurationError, StoreUnavailable
from workflows.settings import load_settings

pytestmark = pytest.mark.integration


def _with(url: str, password: str) -> str:
    return url.replace("s3cret-Pw_1", password)


@pytest.fixture(autouse=True)
def _fresh_runtime():
    """configure() sets process-wide state: leave none behind for the next test."""
    yield
    runtime.set_redis_url(None)
    app.conf.broker_use_ssl = None
    if app._pool is not None:
        app.pool.force_close_all()


@pytest.fixture
def env(monkeypatch, tmp_path):
    for var in ("MAINSAIL_REDIS_URL", "MAINSAIL_REDIS_CA_FILE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MAINSAIL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MAINSAIL_EMBEDDED_WORKER", "false")
    return monkeypatch


# ---------------------------------------------------------------------- password and ACL user


def test_the_cli_lists_sessions_through_a_password_url(env, auth_redis_server, auth_redis):
    env.setenv("MAINSAIL_REDIS_URL", auth_redis_server.url)
    result = CliRunner().invoke(cli, ["sessions"], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_the_cli_connects_as_an_acl_user(env, auth_redis_server, auth_redis):
    env.setenv("MAINSAIL_REDIS_URL", auth_redis_server.alice_url)
    result = CliRunner().invoke(cli, ["sessions"], catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("password", ["wrong-one", None])
def test_refused_credentials_say_authentication_failed_and_what_to_set(env, auth_redis_server, password):
    url = _with(auth_redis_server.url, password) if password else auth_redis_server.url.replace(":s3cret-Pw_1@", "")
    env.setenv("MAINSAIL_REDIS_URL", url)
    result = CliRunner().invoke(cli, ["sessions"], catch_exceptions=False)
    assert result.exit_code == 1
    out = result.output
    assert "authentication failed" in out and "MAINSAIL_REDIS_URL" in out
    assert "redis://USER:PASSWORD@HOST:PORT/DB" in out and "is it running" not in out
    if password:
        assert f"redis://:***@127.0.0.1:{auth_redis_server.port}/0" in out
        assert "check the user and password" in out and "wrong-one" not in out
    else:
        assert "requires a password" in out
    assert "Traceback" not in out


def test_a_wrong_acl_password_is_masked(env, auth_redis_server):
    url = auth_redis_server.alice_url.replace("alice-pw", "nope-pw")
    with pytest.raises(ConfigurationError) as err:
        resolve_redis_url(load_settings(redis_url=url))
    assert f"redis://alice:***@127.0.0.1:{auth_redis_server.port}/0" in str(err.value)
    assert "nope-pw" not in str(err.value)


def test_an_unreachable_url_is_masked_too(env):
    with pytest.raises(StoreUnavailable) as err:
        resolve_redis_url(load_settings(redis_url="redis://bob:hunter2@127.0.0.1:1/0"))
    assert "Could not connect to Redis at redis://bob:***@127.0.0.1:1/0: is it running?" in str(err.value)
    assert "hunter2" not in str(err.value)


def test_the_store_client_and_the_broker_use_the_credentials(env, auth_redis_server, auth_redis):
    configure(auth_redis_server.alice_url)
    engine = runtime.engine(load_settings(redis_url=auth_redis_server.alice_url))
    engine.store.ping()
    _send_a_task()
    assert auth_redis.llen("mainsail-celery:model") == 1


def _send_a_task() -> None:
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1)
        app.send_task("mainsail.test.nothing", queue="model", connection=conn)


# ---------------------------------------------------------------------- TLS


def test_tls_is_verified_against_the_ca_file(env, tls_redis_server, tls_files, tls_redis):
    url = tls_redis_server.url
    assert url.startswith("rediss://")
    assert probe(url, tls_files.ca) is None
    problem = probe(url)  # the test CA is not among the system's
    assert problem.kind == "tls" and "certificate verify failed" in problem.detail
    with pytest.raises(StoreUnavailable) as err:
        resolve_redis_url(load_settings(redis_url=url))
    assert "MAINSAIL_REDIS_CA_FILE" in str(err.value) and "tls-Pw_2" not in str(err.value)
    assert probe(url + "?ssl_cert_reqs=none") is None  # an explicit opt-out, in the URL
    assert probe(url + f"?ssl_ca_certs={tls_files.ca}") is None


def test_the_cli_and_the_broker_work_over_tls(env, tls_redis_server, tls_files, tls_redis):
    env.setenv("MAINSAIL_REDIS_URL", tls_redis_server.url)
    env.setenv("MAINSAIL_REDIS_CA_FILE", tls_files.ca)
    result = CliRunner().invoke(cli, ["sessions"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    configure(tls_redis_server.url, tls_files.ca)
    assert app.conf.broker_use_ssl["ssl_ca_certs"] == tls_files.ca
    _send_a_task()
    assert tls_redis.llen("mainsail-celery:model") == 1


def test_the_broker_verifies_the_server_certificate(env, tls_redis_server):
    """kombu alone would accept any certificate for rediss://; configure() makes it verify."""
    configure(tls_redis_server.url)
    with pytest.raises(Exception, match="certificate verify failed"):
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)


def test_an_unknown_ssl_cert_reqs_is_a_configuration_error(env, tls_redis_server):
    with pytest.raises(ConfigurationError, match="not a usable Redis URL.*ssl_cert_reqs='sometimes'"):
        resolve_redis_url(load_settings(redis_url=tls_redis_server.url + "?ssl_cert_reqs=sometimes"))


def test_redis_py_reports_a_refused_password_as_an_authentication_error(auth_redis_server):
    """What probe() relies on to tell "wrong password" from "not running"."""
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(_with(auth_redis_server.url, "x")).ping()


def test_the_team_acl_keeps_a_member_inside_mainsail_s_keys(auth_redis_server, auth_redis):
    alice = redis.Redis.from_url(auth_redis_server.alice_url)
    alice.set("mainsail:probe", "1")
    alice.rpush("mainsail-celery:probe", "1")
    assert alice.info("server")["redis_version"]
    for command in (("SET", "other:key", "1"), ("GET", "other:key"), ("FLUSHALL",), ("KEYS", "*"),
                    ("CONFIG", "GET", "requirepass"), ("ACL", "LIST"), ("PUBLISH", "mainsail-celery:x", "1")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            alice.execute_command(*command)
    alice.close()
