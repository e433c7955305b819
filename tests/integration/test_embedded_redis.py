"""The embedded Redis the CLI starts on a bare machine: 127.0.0.1 only, a random password
that never shows in the process list, its URL kept in a file only this user can read,
reused by the next command; one an earlier version started without a password gets one."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import time
from urllib.parse import urlsplit

import pytest
import redis

from cli import connect
from cli.redis_probe import probe
from tests.conftest import free_port
from workflows.settings import load_settings

pytestmark = pytest.mark.integration


@pytest.fixture
def data(tmp_path, monkeypatch):
    """The embedded server's directory; its server is stopped after the test."""
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    monkeypatch.delenv("MAINSAIL_REDIS_URL", raising=False)
    d = tmp_path / "data" / "redis"
    yield d
    pidfile = d / "redis.pid"
    if pidfile.exists():
        try:
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
        except ProcessLookupError:
            pass


def _settings(data):
    return load_settings(data_dir=data.parent, local_redis_url=f"redis://127.0.0.1:{free_port()}/0")


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_embedded_server_has_a_password_and_a_private_url_file(data):
    url = connect.resolve_redis_url(_settings(data))
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1" and len(parts.password) >= 32
    assert (data / "url").read_text() == url
    assert _mode(data / "url") == 0o600 and _mode(data) == 0o700
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=parts.port).ping()
    client = redis.Redis.from_url(url)
    assert client.config_get("bind")["bind"] == "127.0.0.1"
    assert client.config_get("appendonly")["appendonly"] == "yes"
    pid = int((data / "redis.pid").read_text())
    assert parts.password.encode() not in open(f"/proc/{pid}/cmdline", "rb").read()


def test_the_next_command_reuses_it(data, capsys):
    first = connect.resolve_redis_url(_settings(data))
    assert "Started an embedded Redis at redis://:***@127.0.0.1:" in capsys.readouterr().err
    assert connect.resolve_redis_url(_settings(data)) == first
    assert "Started" not in capsys.readouterr().err


def test_a_server_started_without_a_password_by_an_earlier_version_gets_one(data, capsys):
    data.mkdir(parents=True)
    port = free_port()
    subprocess.run(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data),
                    "--appendonly", "yes", "--save", "", "--daemonize", "yes", "--pidfile", str(data / "redis.pid"),
                    "--logfile", str(data / "redis.log")], check=True, stdout=subprocess.DEVNULL)
    old = f"redis://127.0.0.1:{port}/0"
    _wait(old)
    redis.Redis.from_url(old).set("mainsail:kept", "yes")
    (data / "url").write_text(old)
    (data / "url").chmod(0o644)

    url = connect.resolve_redis_url(_settings(data))

    assert urlsplit(url).port == port and urlsplit(url).password
    assert redis.Redis.from_url(url).get("mainsail:kept") == b"yes"
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(old).ping()
    assert (data / "url").read_text() == url and _mode(data / "url") == 0o600
    assert "Set a password on the embedded Redis" in capsys.readouterr().err


def test_a_foreign_server_on_the_remembered_port_is_left_alone(data, redis_server, real_redis):
    """The URL file names a port another Redis took since: not ours, so no password is set on it."""
    data.mkdir(parents=True)
    (data / "url").write_text(redis_server.url)
    url = connect.resolve_redis_url(_settings(data))
    assert url != redis_server.url and urlsplit(url).password
    assert real_redis.ping() and real_redis.config_get("requirepass")["requirepass"] == ""


def _wait(url: str) -> None:
    deadline = time.monotonic() + 10
    while probe(url) is not None:
        assert time.monotonic() < deadline, f"{url} did not start"
        time.sleep(0.05)


def test_a_local_redis_that_wants_a_password_is_named_before_starting_an_embedded_one(data, auth_redis_server,
                                                                                       capsys):
    anonymous = f"redis://127.0.0.1:{auth_redis_server.port}/0"
    settings = load_settings(data_dir=data.parent, local_redis_url=anonymous)
    url = connect.resolve_redis_url(settings)
    assert urlsplit(url).port != auth_redis_server.port
    err = capsys.readouterr().err
    assert f"note: Redis at {anonymous} refused the connection: authentication failed" in err
    assert "MAINSAIL_REDIS_URL" in err and "Starting an embedded Redis instead." in err


def test_a_redis_on_localhost_6379_is_never_used_unless_named(data, redis_server, capsys, monkeypatch):
    """Another application's Redis (here a passwordless one on a port of its own, as on 6379) is not
    Mainsail's: unset, nothing but the embedded server is used, and the command says which it uses."""
    monkeypatch.delenv("MAINSAIL_LOCAL_REDIS_URL", raising=False)
    settings = load_settings(data_dir=data.parent)
    assert settings.local_redis_url is None
    url = connect.resolve_redis_url(settings)
    assert urlsplit(url).port not in (6379, redis_server.port) and urlsplit(url).password
    assert "Started an embedded Redis at" in capsys.readouterr().err
    assert connect.resolve_redis_url(settings) == url  # reused, and said
    err = capsys.readouterr().err
    assert f"mainsail: using the embedded Redis (data in {data}) at redis://:***@127.0.0.1:" in err
    assert "MAINSAIL_REDIS_URL is unset (set it to use another Redis)" in err
    named = f"redis://127.0.0.1:{redis_server.port}/0"
    assert connect.resolve_redis_url(load_settings(data_dir=data.parent, local_redis_url=named)) == named
    assert f"mainsail: using MAINSAIL_LOCAL_REDIS_URL at {named}" in capsys.readouterr().err
