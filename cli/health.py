"""Container health checks (the Dockerfile's HEALTHCHECK and docker-compose.yml's, one kind per service).

    python -m cli.health worker        a worker of this container (its host name) has a live registration
    python -m cli.health redis         MAINSAIL_REDIS_URL answers (the beat: its state is all in Redis)
    python -m cli.health http URL      URL answers 200 (the team server's sign-in page, Flower's /healthcheck)

Exit code 0 when healthy, 1 with one line on stderr saying what is wrong. Nothing here needs the API key,
and no password is printed.
"""

from __future__ import annotations

import socket
import sys
import urllib.error
import urllib.request

TIMEOUT = 5.0


def _redis():
    from tasks.runtime import redis_client
    from workflows.settings import load_settings

    settings = load_settings()
    if not settings.redis_url:
        raise RuntimeError("MAINSAIL_REDIS_URL is not set in this container")
    return redis_client(settings.redis_url, settings.redis_ca_file, socket_timeout=TIMEOUT,
                        socket_connect_timeout=TIMEOUT)


def check_worker(host: str | None = None) -> str | None:
    """None when a worker of ``host`` (default: this container's host name) is registered and live."""
    from workflows.store.registry import Workers

    host = host or socket.gethostname()
    live = Workers(_redis()).live()
    if any(info.get("host") == host for info in live.values()):
        return None
    return f"no live worker registration from host {host} ({len(live)} live worker(s) in all)"


def check_redis() -> str | None:
    """None when Redis answers PING."""
    _redis().ping()
    return None


def check_http(url: str) -> str | None:
    """None when ``url`` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:  # noqa: S310 (a URL of our own)
            return None if response.status == 200 else f"{url} answered {response.status}"
    except urllib.error.HTTPError as exc:
        return f"{url} answered {exc.code}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    checks = {"worker": lambda: check_worker(), "redis": check_redis}
    try:
        if args[:1] == ["http"] and len(args) == 2:
            problem = check_http(args[1])
        elif len(args) == 1 and args[0] in checks:
            problem = checks[args[0]]()
        else:
            print("usage: python -m cli.health worker | redis | http URL", file=sys.stderr)
            return 2
    except Exception as exc:  # a health check says what is wrong in one line, never a traceback
        problem = f"{type(exc).__name__}: {exc}"
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
