"""The embedded Redis: a private ``redis-server`` this machine starts once and reuses.

It listens on 127.0.0.1 only, keeps its data (AOF on) under the data dir, and has a random
password; its URL, with that password, is kept in a file readable by this user only
(:func:`embedded_url_file`). Without the binary, an in-process fakeredis server stands in
(cli/in_process.py), with a warning that nothing survives.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from cli.in_process import fakeredis_server, free_port
from cli.redis_probe import answer, mask_url, password_of, probe, say_which
from workflows.exceptions import StoreUnavailable
from workflows.settings import Settings
from workflows.store.resilience import RedisError
from workflows.store.server import RedisServer


def _note(msg: str) -> None:
    print(msg, file=sys.stderr)


def embedded_url_file(settings: Settings) -> Path:
    """Where the embedded server's URL (with its password) is kept: mode 0600."""
    return settings.data_dir / "redis" / "url"


def read_embedded_url(settings: Settings) -> str | None:
    """The URL of the embedded server this machine started last, if any (it may have stopped)."""
    return _read_url(embedded_url_file(settings))


def _read_url(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def embedded(settings: Settings, why: str | None = None) -> str:
    url_file = embedded_url_file(settings)
    url_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        url_file.parent.chmod(0o700)  # the AOF and the URL file hold everything Mainsail stores
    except OSError:
        pass  # not ours to change; the URL file itself is still made private
    url = _reuse_embedded(url_file, settings.redis_retry_seconds)
    if url:
        return say_which(url, f"the embedded Redis (data in {url_file.parent})")
    binary = shutil.which(settings.redis_server_bin) if settings.redis_server_bin else None
    if binary:
        if why:
            _note(f"note: {why} Starting an embedded Redis instead.")
        return _start_embedded(binary, url_file)
    return fakeredis_server()


def _reuse_embedded(url_file: Path, budget: float) -> str | None:
    """The running embedded server's URL; one an earlier version started without a password gets one. A
    paused one is waited for (up to ``budget`` seconds): a second server must never start on its data."""
    url = _read_url(url_file)
    if not url or answer(url, timeout=0.5, budget=budget) is not None:
        return None
    if password_of(url) is None:
        url = _add_password(url, url_file.parent)
        if url is None:
            return None
        _keep_url(url_file, url)
    elif url_file.stat().st_mode & 0o077:
        url_file.chmod(0o600)
    return url


def _add_password(url: str, data: Path) -> str | None:
    """Set a random password on a running embedded server, if it is ours (it keeps its data in
    ``data``; a server that took its port since is left alone). Returns its new URL."""
    server = RedisServer.at(url, socket_timeout=2.0)
    password = secrets.token_urlsafe(32)
    try:
        if not server.require_password(os.path.realpath(data), password):
            return None
    except RedisError:
        return None
    finally:
        server.close()
    _note("Set a password on the embedded Redis (an earlier version started it without one).")
    return _with_password(url, password)


def _with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f":{password}@{parts.netloc.rpartition('@')[2]}"))


def _keep_url(path: Path, url: str) -> None:
    """Write ``url`` to ``path``, readable and writable by this user only (it holds the password)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(url)
    os.replace(tmp, path)


def _start_embedded(binary: str, url_file: Path) -> str:
    """Start a private redis-server: 127.0.0.1 only, AOF on, a random password (given on stdin,
    so it never shows in the process list). Its URL is kept in ``url_file``."""
    data = url_file.parent
    port = free_port()
    password = secrets.token_urlsafe(32)
    log = data / "redis.log"
    try:
        subprocess.run(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--protected-mode", "yes", "--dir", str(data),
             "--appendonly", "yes", "--save", "", "--daemonize", "yes", "--pidfile", str(data / "redis.pid"),
             "--logfile", str(log), "-"],
            input=f"requirepass {password}\n", text=True, check=True, stdout=subprocess.DEVNULL,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise StoreUnavailable(f"Could not start the embedded redis-server ({binary}): {exc}; see {log}") from None
    url = f"redis://:{password}@127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while probe(url) is not None:
        if time.monotonic() > deadline:
            raise StoreUnavailable(f"The embedded redis-server did not start; see {log}")
        time.sleep(0.05)
    _keep_url(url_file, url)
    _note(f"Started an embedded Redis at {mask_url(url)} (data in {data}; AOF on; "
          f"its URL with the password is in {url_file}).")
    return url


