"""``mainsail doctor``: what Mainsail would use on this machine, and what to fix.

It only looks: it starts no Redis and no worker, and it never prints a password
or an API key. One line per check: ✓ fine, ! works but worth fixing, ✗ broken.
The exit code is 1 when any check is ✗.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit, urlunsplit

import click

from cli.embedded_redis import read_embedded_url
from cli.redis_probe import mask_url, probe, redis_error
from workflows.model.providers import is_local_model
from workflows.settings import Settings, load_settings
from workflows.store.resilience import ResponseError
from workflows.store.server import RedisServer

OK, WARN, FAIL = "✓", "!", "✗"
QUEUES = ("model", "tools", "memory")


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    status: str
    name: str
    message: str


@dataclass(frozen=True)
class Found:
    """The Redis a mainsail command would use now, and which setting named it."""

    url: str
    source: str


@click.command("doctor")
def doctor() -> None:
    """Check Redis, workers, the API key and the OS sandbox; say what to fix.

    With MAINSAIL_SERVER set: the server (reachable, version), the token (valid, scopes), and what the
    server reports about its Redis, workers and key (cli/remote/doctor.py); the local checks are skipped."""
    report(run_checks(load_settings()))


def report(checks: list[Check]) -> None:
    """Print one line per check and the tally; exit 1 when any check is ✗."""
    for check in checks:
        click.echo(f"{check.status} {check.name:<12} {check.message}")
    failed = sum(c.status == FAIL for c in checks)
    warned = sum(c.status == WARN for c in checks)
    if failed or warned:
        click.echo(f"\n{failed} to fix (✗), {warned} worth a look (!).")
    else:
        click.echo("\nEverything looks fine.")
    if failed:
        raise SystemExit(1)


def run_checks(settings: Settings) -> list[Check]:
    """Every check, in the order a user would fix them."""
    try:
        found, problem = find_redis(settings)
    except Exception as exc:  # noqa: BLE001 - a doctor reports, it does not crash
        found, problem = None, _broken("Redis", exc)
    if problem is not None:
        return [problem, *_other_checks(None, settings)]
    server = RedisServer.at(found.url, settings.redis_ca_file, socket_connect_timeout=2, socket_timeout=5)
    try:
        return [_safely("Redis", lambda: check_redis(found, server)),
                _safely("Redis auth", lambda: check_auth(found.url, settings)),
                _safely("Persistence", lambda: check_persistence(server)),
                _safely("Durability", lambda: check_durability(server)),
                *_other_checks(server, settings)]
    finally:
        server.close()


def _other_checks(server: RedisServer | None, settings: Settings) -> list[Check]:
    return [_safely("Workers", lambda: check_workers(server, settings)),
            _safely("API key", lambda: check_api_key(settings)),
            _safely("Sandbox", check_sandbox),
            _safely("Warm start", check_warm)]


def check_warm() -> Check:
    """Warm start (cli/warm/): on or off, and the server that runs this user's commands, if one runs."""
    from cli.warm import place
    from cli.warm_command import servers

    if not place.enabled():
        return Check(OK, "Warm start", "off (MAINSAIL_WARM): every command imports what it needs (~0.5 s more "
                                       "for `show`, `approve`, `-p`)")
    directory = place.warm_dir()
    if place.socket_path(directory) is None:
        return Check(WARN, "Warm start", f"the directory {directory} is too long a path for a Unix socket: "
                                         "set MAINSAIL_WARM_DIR to a shorter one")
    if os.path.lexists(directory) and not place.own_dir(directory, create=False):
        return Check(WARN, "Warm start", f"{directory} is not a directory of yours with mode 0700: no warm start "
                                         "(fix its mode, or set MAINSAIL_WARM_DIR)")
    live = [pid for _, pid in servers() if pid]
    if not live:
        return Check(OK, "Warm start", "on; no server runs now (the next `-p`, `show`, `approve`... starts one)")
    return Check(OK, "Warm start", f"on; server pid {', '.join(map(str, live))} in {directory} "
                                   "(`mainsail warm status`)")


def _safely(name: str, check: Callable[[], Check]) -> Check:
    """Run one check; a failure of the check itself is a ✗ line, never a traceback."""
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - a doctor reports, it does not crash
        return _broken(name, exc)


def _broken(name: str, exc: Exception) -> Check:
    return Check(FAIL, name, f"could not check: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------- Redis


def find_redis(settings: Settings) -> tuple[Found | None, Check | None]:
    """The Redis a command would use, found without starting one; or the line saying why there is none."""
    if settings.redis_url:
        problem = probe(settings.redis_url, settings.redis_ca_file, timeout=2.0)
        if problem:
            return None, Check(FAIL, "Redis", str(redis_error(settings.redis_url, problem)))
        return Found(settings.redis_url, "MAINSAIL_REDIS_URL"), None
    if settings.local_redis_url and probe(settings.local_redis_url, settings.redis_ca_file, timeout=0.3) is None:
        return Found(settings.local_redis_url, "MAINSAIL_LOCAL_REDIS_URL"), None
    embedded = read_embedded_url(settings)
    if embedded and probe(embedded, timeout=0.5) is None:
        return Found(embedded, f"the embedded Redis, {settings.data_dir / 'redis'}"), None
    return None, Check(WARN, "Redis", _nothing_answers(settings))


def check_redis(found: Found, server: RedisServer) -> Check:
    """Which Redis (URL masked), where its URL came from, and its version."""
    try:
        version = f"Redis {server.version()}"
    except ResponseError:
        version = "version unknown (this user may not run INFO)"
    return Check(OK, "Redis", f"{mask_url(found.url)} ({found.source}) answers: {version}")


def _nothing_answers(settings: Settings) -> str:
    where = (f"nothing answers at {mask_url(settings.local_redis_url)} and no embedded Redis is running"
             if settings.local_redis_url else "MAINSAIL_REDIS_URL is unset and no embedded Redis is running")
    shared = "For a shared server, set MAINSAIL_REDIS_URL=redis://:PASSWORD@HOST:6379/0."
    binary = shutil.which(settings.redis_server_bin) if settings.redis_server_bin else None
    if binary:
        return f"{where}: the next mainsail command starts an embedded one ({binary}). {shared}"
    return (f"{where}, and there is no redis-server binary: the next command would use an in-memory Redis "
            f"that keeps nothing. Install Redis (apt-get install redis-server, brew install redis). {shared}")


def check_auth(url: str, settings: Settings) -> Check:
    """Whether the URL carries credentials, and whether the server would let anyone in without them."""
    parts = urlsplit(url)
    tls = " over TLS" if parts.scheme == "rediss" else ""
    if parts.password is not None or parts.username:
        anonymous = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        if probe(anonymous, settings.redis_ca_file, timeout=2.0) is None:
            return Check(WARN, "Redis auth", "this Redis also accepts clients without a password, so the one in "
                         "the URL protects nothing: set requirepass (or ACL users) on the server.")
        return Check(OK, "Redis auth", f"authenticated as {parts.username or 'default'}{tls}")
    if is_local(parts.hostname):
        return Check(OK, "Redis auth", f"no password{tls} (fine for a Redis only this machine reaches)")
    return Check(WARN, "Redis auth", (
        f"Redis at {parts.hostname} accepts clients without a password: anyone who reaches it can read every "
        "session and run commands through the workers. Set requirepass on the server (docker-compose.yml: "
        "MAINSAIL_REDIS_PASSWORD) and put it in MAINSAIL_REDIS_URL=redis://:PASSWORD@HOST:PORT/DB."))


def is_local(host: str | None) -> bool:
    """True for localhost and loopback addresses."""
    if not host or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_persistence(server: RedisServer) -> Check:
    """AOF on, so sessions survive a Redis restart."""
    try:
        aof = server.aof_enabled()
    except ResponseError:
        return Check(WARN, "Persistence", "cannot tell whether AOF is on: this user may not run INFO.")
    if aof:
        return Check(OK, "Persistence", "AOF is on: sessions survive a Redis restart")
    return Check(WARN, "Persistence", "AOF is off: a Redis restart loses sessions and queued steps. Run "
                 "redis-server with --appendonly yes (or CONFIG SET appendonly yes, and keep it in redis.conf).")


def check_durability(server: RedisServer) -> Check:
    """A mutating call's claim is on disk before the call runs (workflows/store/durable.py)."""
    from workflows.store.durable import UNSAFE, WAITAOF, Durability

    durability = Durability(server.r, say=False)
    mode = durability.wait()
    if mode == UNSAFE:
        return Check(WARN, "Durability", durability.why)
    how = ("WAITAOF: a Bash or Edit call's claim is fsynced before it runs" if mode == WAITAOF else
           "appendfsync always: every write is on disk before Redis answers")
    return Check(OK, "Durability", f"{how}, so a host crash cannot make a command run twice")


# ---------------------------------------------------------------------- workers, key, sandbox


def check_workers(server: RedisServer | None, settings: Settings) -> Check:
    """Registered workers and the queues nobody serves."""
    if server is None:
        return Check(WARN, "Workers", "cannot tell without a Redis (see above).")
    workers = server.registered_workers()
    served = {q for queues in workers.values() for q in queues}
    missing = [q for q in QUEUES if q not in served]
    listed = ", ".join(f"{name} ({','.join(queues)})" for name, queues in sorted(workers.items())[:6])
    if len(workers) > 6:
        listed += f" and {len(workers) - 6} more"
    if not missing:
        return Check(OK, "Workers", f"{len(workers)} registered: {listed}")
    status = WARN if settings.embedded_worker else FAIL
    fallback = ("each command runs one in its own process while it runs"
                if settings.embedded_worker else "and MAINSAIL_EMBEDDED_WORKER is off, so those steps wait")
    have = f"{len(workers)} registered: {listed}; " if workers else "none registered; "
    start = "mainsail worker" + (f" -Q {','.join(missing)}" if workers else "")
    return Check(status, "Workers", f"{have}no worker serves {', '.join(missing)}: {fallback}. Start "
                 f"`{start}` (or `docker compose up`) for sessions that outlive a command.")


def check_api_key(settings: Settings) -> Check:
    """Whether this process sees an API key or a base URL (the key itself is never shown)."""
    if settings.anthropic_api_key:
        key = settings.anthropic_api_key
        tail = f" (…{key[-4:]})" if len(key) >= 12 else ""
        return Check(OK, "API key", f"ANTHROPIC_API_KEY is set{tail}; workers elsewhere need their own")
    if settings.anthropic_base_url:
        return Check(OK, "API key", f"ANTHROPIC_BASE_URL is {mask_url(settings.anthropic_base_url)} "
                     "(no ANTHROPIC_API_KEY)")
    if is_local_model(settings.model):
        return Check(OK, "API key", f"none needed: the model is {settings.model}")
    return Check(FAIL, "API key", "neither ANTHROPIC_API_KEY nor ANTHROPIC_BASE_URL is set, so `mainsail run` "
                 "refuses to start a session: export ANTHROPIC_API_KEY=sk-ant-... (`mainsail demo` needs none).")


def check_sandbox() -> Check:
    """Whether Bash commands on this machine would run in the OS sandbox (bubblewrap)."""
    try:
        from workflows.permissions.sandbox import sandbox_status
    except ImportError:
        return Check(WARN, "Sandbox", "this version of Mainsail cannot check the OS sandbox.")
    status = sandbox_status()
    return Check(OK if status.available else WARN, "Sandbox", status.detail)
