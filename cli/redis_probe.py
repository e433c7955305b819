"""Asking a Redis URL whether it answers, and saying why not, never showing its password.

:func:`probe` PINGs a URL and names what went wrong (:class:`RedisProblem`); :func:`answer` asks again
while the server is there but silent (a ``CLIENT PAUSE``, a ``DEBUG SLEEP``, a SIGSTOPped or loading
server), for up to ``MAINSAIL_REDIS_RETRY_SECONDS``, with the step path's backoff
(:func:`workflows.store.resilience.retrying`); :func:`redis_error` turns a problem into the error a user
sees, with the URL masked (:func:`mask_url`) and the setting to fix.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from urllib.parse import urlsplit

from workflows.exceptions import ConfigurationError, MainsailError, StoreUnavailable
from workflows.store.resilience import (
    AuthenticationError,
    BusyLoadingError,
    RedisConnectionError,
    RedisError,
    RedisTimeoutError,
    retrying,
)
from workflows.store.server import RedisServer
from workflows.store.urls import mask_url


@dataclass(frozen=True)
class RedisProblem:
    """Why a Redis URL did not answer a PING.

    Attributes:
        kind: ``unreachable``, ``auth`` (credentials missing or refused), ``tls``
            (handshake or certificate) or ``invalid`` (the URL itself).
        detail: the client's own words, with any password masked.
        silent: unreachable, but something took the connection and did not answer in time, or said it is
            still loading its data: a paused or stopped server, worth waiting for. A refused connection
            (nothing listens) is not: that server is gone.
    """

    kind: str
    detail: str
    silent: bool = False


def probe(url: str, ca_file: str | os.PathLike | None = None, timeout: float = 0.5) -> RedisProblem | None:
    """PING ``url``: None when it answers, else what went wrong."""
    try:
        server = RedisServer.at(url, ca_file, single_try=True, socket_connect_timeout=timeout, socket_timeout=timeout)
    except ValueError as exc:
        return RedisProblem("invalid", _scrub(str(exc), url))
    try:
        server.ping()
        return None
    except (RedisError, OSError) as exc:
        kind = _kind(exc, url)
        return RedisProblem(kind, _scrub(str(exc), url),
                            silent=kind == "unreachable" and isinstance(exc, (RedisTimeoutError, BusyLoadingError)))
    finally:
        server.close()


class NotAnswering(RedisConnectionError):
    """A probe met a silent server (a transient error for :func:`retrying`)."""

    def __init__(self, problem: RedisProblem) -> None:
        super().__init__(problem.detail)
        self.problem = problem


def answer(url: str, ca_file: str | os.PathLike | None = None, *, timeout: float, budget: float) -> RedisProblem | None:
    """:func:`probe` ``url``, asked again while the server is silent (paused, stopped, loading) for up to
    ``budget`` seconds, saying on stderr that it waits: None once it answers, else the last problem (at
    once for any other, e.g. a refused connection)."""

    def ping() -> RedisProblem | None:
        problem = probe(url, ca_file, timeout)
        if problem is not None and problem.silent:
            raise NotAnswering(problem)
        return problem

    try:
        return retrying(ping, what=f"Redis at {mask_url(url)}", budget=budget,
                        say=lambda text: print(f"mainsail: {text}", file=sys.stderr))
    except NotAnswering as exc:
        return exc.problem


def _kind(exc: BaseException, url: str) -> str:
    text = str(exc)
    if isinstance(exc, AuthenticationError) or text.startswith(("NOAUTH", "WRONGPASS", "NOPERM")):
        return "auth"
    if _is_tls(url) and ("SSL" in text or "certificate" in text.lower()):
        return "tls"
    return "unreachable"


def _scrub(text: str, url: str) -> str:
    """``text`` without the password of ``url`` (a client error might quote its arguments)."""
    password = password_of(url)
    return text.replace(password, "***") if password else text


def password_of(url: str) -> str | None:
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
        fix = "check the user and password in it" if password_of(url) else "this server requires a password"
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


def say_which(url: str, what: str) -> str:
    """Say on stderr which Redis a command uses when it is not ``MAINSAIL_REDIS_URL``; ``url``."""
    print(f"mainsail: using {what} at {mask_url(url)}; MAINSAIL_REDIS_URL is unset (set it to use another "
          "Redis).", file=sys.stderr)
    return url
