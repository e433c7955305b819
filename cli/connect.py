"""Finding Redis and a worker, so that a newcomer's first command just works.

Redis, in order: ``MAINSAIL_REDIS_URL`` (must answer), a Redis on
``MAINSAIL_LOCAL_REDIS_URL`` when it is set, the embedded server
this machine started before (its URL, with its password, is kept under the
data dir, readable by this user only), a new private ``redis-server`` (AOF on,
a random password, bound to 127.0.0.1, data under the data dir), and, without
the binary, an in-process fakeredis server, with a warning that nothing survives.
Whatever answers on localhost:6379 is not tried unless named: it is some other application's
Redis, often without a password. A command using a Redis other than ``MAINSAIL_REDIS_URL``
says which on stderr (:func:`say_which`).

Any URL may carry credentials (``redis://user:pass@host:port/db``,
``redis://:pass@...``) or ask for TLS (``rediss://``); a URL shown in a message
never shows its password (:func:`mask_url`).

Workers: if no registered worker serves the queues a session needs, now or at any
moment while the command waits, one runs inside the CLI's process (cli/standby.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from tasks.runtime import redis_client
from workflows.engine import Engine
from workflows.exceptions import ConfigurationError, MainsailError, StoreUnavailable
from workflows.settings import Settings
from workflows.store import Store


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (``redis://alice:***@host:6379/0``)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<an invalid URL>"
    if password is not None:
        userinfo, _, host = parts.netloc.rpartition("@")
        parts = parts._replace(netloc=f"{userinfo.partition(':')[0]}:***@{host}")
    query = [(k, "***" if "password" in k.lower() else v) for k, v in parse_qsl(parts.query)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="*/")))


@dataclass(frozen=True)
class RedisProblem:
    """Why a Redis URL did not answer a PING.

    Attributes:
        kind: ``unreachable``, ``auth`` (credentials missing or refused), ``tls``
            (handshake or certificate) or ``invalid`` (the URL itself).
        detail: the client's own words, with any password masked.
    """

    kind: str
    detail: str


def probe(url: str, ca_file: str | os.PathLike | None = None, timeout: float = 0.5) -> RedisProblem | None:
    """PING ``url``: None when it answers, else what went wrong."""
    try:
        client = redis_client(url, ca_file, socket_connect_timeout=timeout, socket_timeout=timeout)
    except ValueError as exc:
        return RedisProblem("invalid", _scrub(str(exc), url))
    try:
        client.ping()
        return None
    except (redis.RedisError, OSError) as exc:
        return RedisProblem(_kind(exc, url), _scrub(str(exc), url))
    finally:
        client.close()


def _kind(exc: BaseException, url: str) -> str:
    text = str(exc)
    if isinstance(exc, redis.AuthenticationError) or text.startswith(("NOAUTH", "WRONGPASS", "NOPERM")):
        return "auth"
    if _is_tls(url) and ("SSL" in text or "certificate" in text.lower()):
        return "tls"
    return "unreachable"


def _scrub(text: str, url: str) -> str:
    """``text`` without the password of ``url`` (a client error might quote its arguments)."""
    password = _password(url)
    return text.replace(password, "***") if password else text


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _is_tls(url: str) -> bool:
    return url.startswith("rediss://")


def redis_error(url: str, problem: RedisProblem, setting: str = "MAINSAIL_REDIS_URL") -> MainsailError:
    """The error a user sees for ``problem``: the URL (masked), what happened and what to set."""
    shown = mask_url(url)
    if problem.kind == "auth":
        fix = "check the user and password in it" if _password(url) else "this server requires a password"
        return ConfigurationError(
            f"Redis at {shown} refused the connection: authentication failed ({problem.detail}). "
            f"Set {setting} with the right credentials ({fix}): redis://:PASSWORD@HOST:PORT/DB for a "
            "requirepass password, redis://USER:PASSWORD@HOST:PORT/DB for an ACL user."
        )
    if problem.kind == "tls":
        return StoreUnavailable(
            f"Could not open a TLS connection to Redis at {shown} ({problem.detail}). If a private CA signed "
            "the server's certificate, set MAINSAIL_REDIS_CA_FILE to its PEM file; if the server does not "
            f"speak TLS on that port, use redis:// in {setting}."
        )
    if problem.kind == "invalid":
        return ConfigurationError(f"{setting} is not a usable Redis URL ({problem.detail}): use "
                                  "redis://[[USER]:PASSWORD@]HOST:PORT/DB, or rediss://... for TLS.")
    return _unreachable(shown, problem, setting)


def _unreachable(shown: str, problem: RedisProblem, setting: str) -> StoreUnavailable:
    tls = " Does that port speak TLS (rediss://)?" if _is_tls(shown) else ""
    fallback = " (unset it to use a local or embedded one)" if setting == "MAINSAIL_REDIS_URL" else ""
    return StoreUnavailable(f"Could not connect to Redis at {shown}: is it running? ({problem.detail}){tls} "
                            f"Start it, or set {setting} to a reachable server{fallback}.")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _note(msg: str) -> None:
    print(msg, file=sys.stderr)


def configured_url(settings: Settings) -> str:
    """MAINSAIL_REDIS_URL, once it answers.

    Raises:
        StoreUnavailable: it does not answer.
        ConfigurationError: it is invalid, or Redis refused its credentials.
    """
    problem = probe(settings.redis_url, settings.redis_ca_file, timeout=2.0)
    if problem:
        raise redis_error(settings.redis_url, problem)
    return settings.redis_url


def resolve_redis_url(settings: Settings) -> str:
    """The Redis URL to use, starting an embedded server when nothing else answers.

    Raises:
        StoreUnavailable: MAINSAIL_REDIS_URL is set but does not answer.
        ConfigurationError: MAINSAIL_REDIS_URL is invalid, or Redis refused its credentials.
    """
    if settings.redis_url:
        return configured_url(settings)
    why = None
    if settings.local_redis_url:
        problem = probe(settings.local_redis_url, settings.redis_ca_file, timeout=0.3)
        if problem is None:
            return say_which(settings.local_redis_url, "MAINSAIL_LOCAL_REDIS_URL")
        # Something answers there but refuses us: say why, in case that Redis was meant.
        why = None if problem.kind == "unreachable" else str(redis_error(settings.local_redis_url, problem,
                                                                         "MAINSAIL_REDIS_URL"))
    return _embedded(settings, why)


def say_which(url: str, what: str) -> str:
    """Say on stderr which Redis a command uses when it is not ``MAINSAIL_REDIS_URL``; ``url``."""
    _note(f"mainsail: using {what} at {mask_url(url)}; MAINSAIL_REDIS_URL is unset (set it to use another Redis).")
    return url


_fake_server = None
_threads_started = False


def in_process_threads_started() -> bool:
    """True once this process runs a worker or a fakeredis server of its own."""
    return _threads_started


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


def _embedded(settings: Settings, why: str | None = None) -> str:
    url_file = embedded_url_file(settings)
    url_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        url_file.parent.chmod(0o700)  # the AOF and the URL file hold everything Mainsail stores
    except OSError:
        pass  # not ours to change; the URL file itself is still made private
    url = _reuse_embedded(url_file)
    if url:
        return say_which(url, f"the embedded Redis (data in {url_file.parent})")
    binary = shutil.which(settings.redis_server_bin) if settings.redis_server_bin else None
    if binary:
        if why:
            _note(f"note: {why} Starting an embedded Redis instead.")
        return _start_embedded(binary, url_file)
    return _fakeredis_server()


def _reuse_embedded(url_file: Path) -> str | None:
    """The running embedded server's URL; one an earlier version started without a password gets one."""
    url = _read_url(url_file)
    if not url or probe(url) is not None:
        return None
    if _password(url) is None:
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
    client = redis.Redis.from_url(url, socket_timeout=2.0)
    try:
        if client.config_get("dir").get("dir") != os.path.realpath(data):
            return None
        password = secrets.token_urlsafe(32)
        client.config_set("requirepass", password)
    except redis.RedisError:
        return None
    finally:
        client.close()
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
    port = _free_port()
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


def _fakeredis_server() -> str:
    global _fake_server, _threads_started
    from fakeredis import TcpFakeServer

    _log_fakeredis_errors()
    port = _free_port()
    _fake_server = TcpFakeServer(("127.0.0.1", port), server_type="redis")
    _threads_started = True
    threading.Thread(target=_fake_server.serve_forever, daemon=True, name="fakeredis").start()
    url = f"redis://127.0.0.1:{port}/0"
    # fakeredis's TCP server drops the connection after any error reply, including the
    # NOSCRIPT that redis-py's Lock gets on its first EVALSHA: load the scripts up front.
    from redis.lock import Lock

    client = redis.Redis.from_url(url)
    for script in (Lock.LUA_RELEASE_SCRIPT, Lock.LUA_EXTEND_SCRIPT, Lock.LUA_REACQUIRE_SCRIPT):
        client.script_load(script)
    client.close()
    _note("warning: no Redis server and no redis-server binary found; using an in-memory Redis in this "
          "process. Nothing survives this command: install Redis or set MAINSAIL_REDIS_URL.")
    return url


def _log_fakeredis_errors() -> None:
    """Send the in-process server's command errors (it drops the connection on one) to stderr."""
    import logging

    class _Errors(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return str(record.msg).startswith("!!!")

    logger = logging.getLogger("fakeredis")
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Errors())
    handler.setFormatter(logging.Formatter("fakeredis: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False


@dataclass
class Runtime:
    url: str
    engine: Engine
    worker: object | None = None  # this command's in-process worker (tasks.worker.InProcessWorker)
    standby: object | None = None  # cli.standby.Standby, once a command waits on sessions

    @property
    def masked_url(self) -> str:
        """The URL to show: its password, if any, masked."""
        return mask_url(self.url)

    @property
    def store(self) -> Store:
        return self.engine.store

    def close(self) -> None:
        """Stop checking for workers; an in-process worker hands over (cli.standby.hand_over)."""
        if self.standby is not None:
            self.standby.stop()
            self.standby = None
        if self.worker is not None:
            from cli.standby import hand_over

            worker, self.worker = self.worker, None
            hand_over(worker)


def connect(settings: Settings, dispatching: bool = False) -> Runtime:
    """Resolve Redis, configure Celery and the task runtime, and return the engine.

    ``dispatching``: the command will send steps; the first send's set-up starts now, in the background
    (:func:`tasks.dispatch.prepare`), so that it is done by the time the prompt is committed.
    """
    from tasks import runtime
    from tasks.app import configure

    url = resolve_redis_url(settings)
    configure(url, settings.redis_ca_file)
    if dispatching:
        from tasks.dispatch import prepare

        prepare()
    engine = runtime.engine(settings)
    engine.store.ping()
    return Runtime(url=url, engine=engine)


def existing_redis_url(settings: Settings) -> str | None:
    """The Redis a Mainsail server here already uses, found without starting one (for read-only commands).

    Same order as :func:`resolve_redis_url`, minus the starting: MAINSAIL_REDIS_URL, the local URL,
    the embedded server started earlier if it still answers. None: nothing is running here.

    Raises:
        StoreUnavailable: MAINSAIL_REDIS_URL is set but does not answer.
        ConfigurationError: MAINSAIL_REDIS_URL is invalid, or Redis refused its credentials.
    """
    if settings.redis_url:
        return configured_url(settings)
    if settings.local_redis_url and probe(settings.local_redis_url, settings.redis_ca_file, timeout=0.3) is None:
        return say_which(settings.local_redis_url, "MAINSAIL_LOCAL_REDIS_URL")
    embedded = read_embedded_url(settings)
    if embedded and probe(embedded, timeout=0.5) is None:
        return say_which(embedded, f"the embedded Redis (data in {embedded_url_file(settings).parent})")
    return None


def connect_existing(settings: Settings) -> Runtime | None:
    """Like :func:`connect`, but never starts a Redis (nor a worker): None when no server runs here."""
    from tasks import runtime
    from tasks.app import configure

    url = existing_redis_url(settings)
    if url is None:
        return None
    configure(url, settings.redis_ca_file)
    engine = runtime.engine(settings)
    engine.store.ping()
    return Runtime(url=url, engine=engine)


def ensure_worker(rt: Runtime, settings: Settings, queues: tuple[str, ...] = ("model", "tools", "memory"),
                  quiet: bool = False, sid: str | None = None) -> None:
    """Run a worker in this process when no registered worker serves ``queues``, now or later while
    this command runs (it keeps checking; see cli/standby.py). ``sid``: a session it waits on."""
    from cli.standby import ensure

    ensure(rt, settings, queues, quiet=quiet, sid=sid)


def in_process_redis() -> bool:
    """True when Redis is this process's own fakeredis server."""
    return _fake_server is not None


def mark_threads_started() -> None:
    """This process now runs threads of its own (a worker): it leaves with ``os._exit``."""
    global _threads_started
    _threads_started = True


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
