"""The team server's HTTP API, as the CLI calls it (httpx).

httpx because it is already a dependency (the anthropic SDK's transport), speaks HTTP/1.1 with
TLS verification on by default, and streams responses line by line, which the live follow needs.

Every failure becomes a :class:`RemoteError` whose message names the server, what went wrong and
the fix (``MAINSAIL_SERVER``, ``MAINSAIL_TOKEN``), never a traceback. The token is sent only in
the ``Authorization`` header: it is never put in a URL or a message.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self
from urllib.parse import quote, urlsplit

import click
import httpx

from workflows.exceptions import ConfigurationError, MainsailError

#: Seconds to connect, and to wait for an answer to a plain request.
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0


class RemoteError(MainsailError):
    """The server could not be reached, or refused or failed a request. ``retry``: worth trying again
    later (the server unreachable or restarting), as opposed to a refusal (a bad token, no session)."""

    def __init__(self, message: str, *, status: int | None = None, retry: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retry = retry


def check_server_url(url: str, allow_http: bool = False) -> str:
    """``url`` (MAINSAIL_SERVER) without a trailing slash, if it is usable.

    Raises:
        ConfigurationError: not an http(s) URL with a host, carries a user or password, or is plain
            http to another machine (the token would cross the network unencrypted) without
            MAINSAIL_ALLOW_HTTP.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"MAINSAIL_SERVER must be the server's address, like https://mainsail.example:8750 "
                                 f"(got {url!r}).")
    if parts.username or parts.password:
        raise ConfigurationError("MAINSAIL_SERVER must not hold a user or password: put the API token in "
                                 "MAINSAIL_TOKEN.")
    if parts.scheme == "http" and not allow_http and not _loopback(parts.hostname):
        raise ConfigurationError(f"MAINSAIL_SERVER is plain http:// to {parts.hostname}: the API token would cross "
                                 "the network unencrypted. Use https:// (TLS in front of `mainsail serve`, see "
                                 "docs/server.md), or set MAINSAIL_ALLOW_HTTP=1 on a network you trust.")
    return url.strip().rstrip("/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Client:
    """Calls to one server with one token; use as a context manager (it holds a connection pool)."""

    def __init__(self, url: str, token: str, *, transport: httpx.BaseTransport | None = None) -> None:
        self.display_url = url
        auth = {"Authorization": f"Bearer {token}"} if token else {}  # none: the server answers 401 (doctor)
        self._http = httpx.Client(base_url=url, transport=transport, follow_redirects=False,
                                  headers={**auth, "Accept": "application/json"},
                                  timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def get(self, path: str, **params: Any) -> Any:
        """The JSON of ``GET path`` (``None`` params are left out)."""
        return self._json(self._send("GET", path, params={k: v for k, v in params.items() if v is not None}))

    def get_text(self, path: str) -> str:
        """The body of ``GET path`` as text (an export)."""
        return self._send("GET", path).text

    def post(self, path: str, body: dict | None = None) -> Any:
        """The JSON of ``POST path`` with ``body``."""
        return self._json(self._send("POST", path, json=body or {}))

    def delete(self, path: str) -> None:
        """``DELETE path``."""
        self._send("DELETE", path)

    @contextmanager
    def stream(self, path: str, *, params: dict, headers: dict, read_timeout: float) -> Iterator[Iterator[str]]:
        """The lines of a streaming ``GET`` (an event stream), once the server has accepted it."""
        timeout = httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT)
        try:
            with self._http.stream("GET", path, params=params, timeout=timeout,
                                   headers={**headers, "Accept": "text/event-stream"}) as response:
                if response.status_code >= 400:
                    response.read()
                    raise self._refusal(response)
                yield response.iter_lines()
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._unreachable(exc) from None

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._unreachable(exc) from None
        except httpx.TimeoutException:
            raise RemoteError(f"The Mainsail server at {self.display_url} did not answer {method} {path} within "
                              f"{READ_TIMEOUT:.0f}s; it may be overloaded. Try again.", retry=True) from None
        except httpx.TransportError as exc:
            raise RemoteError(f"The connection to the Mainsail server at {self.display_url} failed during "
                              f"{method} {path} ({type(exc).__name__}: {exc}). Try again.", retry=True) from None
        if response.status_code >= 400:
            raise self._refusal(response)
        return response

    def _unreachable(self, exc: Exception) -> RemoteError:
        why = str(exc) or type(exc).__name__
        return RemoteError(f"Cannot reach the Mainsail server at {self.display_url}: {why}; check MAINSAIL_SERVER "
                           "(and that `mainsail serve` runs there).", retry=True)

    def _refusal(self, response: httpx.Response) -> RemoteError:
        """The error a refused or failed request becomes, in the server's own words (its ``detail``)."""
        status, detail = response.status_code, _detail(response)
        if status == 401:
            return RemoteError(f"The server refused MAINSAIL_TOKEN: {detail}", status=status)
        if status in (502, 503, 504):
            return RemoteError(f"The Mainsail server at {self.display_url} is unavailable ({status}): {detail}",
                               status=status, retry=True)
        if status >= 500:
            return RemoteError(f"The Mainsail server at {self.display_url} failed ({status}): {detail}", status=status)
        if detail == response.reason_phrase and status in (404, 405):
            return RemoteError(f"{self.display_url} answered {status} {detail} for {response.request.url.path}: is "
                               "MAINSAIL_SERVER the address of `mainsail serve` (of this version)?", status=status)
        return RemoteError(detail, status=status)

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type")
            raise RemoteError(f"{self.display_url} answered {response.request.url.path} with {kind}, not the Mainsail "
                              "API's JSON: is MAINSAIL_SERVER the address of `mainsail serve`?") from None


def session_path(session: str, *rest: str) -> str:
    """``/api/sessions/{session}/...`` with the id or prefix quoted (whatever a user typed stays one segment)."""
    return "/".join(["/api/sessions", quote(session, safe=""), *rest])


def server_path(value: str | None, flag: str) -> str | None:
    """A path given for the server's machine: sent as given, but it must be absolute (there is no
    "current directory" on the server to resolve a relative one against)."""
    if value is not None and not value.startswith("/"):
        raise click.UsageError(f"{flag} {value!r}: through MAINSAIL_SERVER, give an absolute path on the server's "
                               "machine.")
    return value


def open_client() -> Client:
    """A client of MAINSAIL_SERVER with MAINSAIL_TOKEN.

    Raises:
        ConfigurationError: the server's address is unusable, or no token is set.
    """
    from workflows.settings import load_settings

    settings = load_settings()
    url = check_server_url(settings.server or "", settings.allow_http)
    token = settings.token.get_secret_value().strip() if settings.token is not None else ""
    if not token:
        raise ConfigurationError(f"MAINSAIL_SERVER is set ({url}) but MAINSAIL_TOKEN is not: set it to your API token "
                                 "(the server's admin creates one with `mainsail token create --name NAME`).")
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise ConfigurationError("MAINSAIL_TOKEN holds characters no API token has (spaces, line breaks or non-ASCII "
                                 "characters): copy the token again.")
    return Client(url, token)


def _detail(response: httpx.Response) -> str:
    """The ``detail`` of an error body (FastAPI's ``{"detail": ...}``), else the status's reason."""
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase or str(response.status_code)
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str) and detail:
        return detail
    if isinstance(detail, list):  # FastAPI's own validation errors
        return "; ".join(f"{'.'.join(str(p) for p in d.get('loc', []))}: {d.get('msg')}" for d in detail
                         if isinstance(d, dict))
    return response.reason_phrase or str(response.status_code)


__all__ = ["CONNECT_TIMEOUT", "READ_TIMEOUT", "Client", "RemoteError", "check_server_url", "open_client",
           "server_path", "session_path"]
