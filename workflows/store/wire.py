"""A Redis client for a command that only reads, in the standard library alone: RESP2 over a socket.

``import redis`` costs a command ~90 ms here (redis-py's package loads its asyncio client, asyncio and the
OpenTelemetry SDK; bench/README.md), five times a bare interpreter's start. ``mainsail sessions`` needs a
handful of reads. This client makes them; anything it does not fully understand (a URL form, TLS, a reply
type, an error) raises :class:`WireUnsupported` or :class:`WireError`, and the caller falls back to the
full path (redis-py), which then reports what went wrong as it always has. It never writes.

``tests/integration/test_wire.py`` holds its replies to redis-py's parser's on a real Redis, over
generated values.
"""

from __future__ import annotations

import socket
from urllib.parse import unquote, urlsplit

__all__ = ["Wire", "WireError", "WireUnsupported"]

#: Commands this client may send: reads only (a typo or a new caller cannot make it write).
READS = frozenset({"PING", "AUTH", "SELECT", "GET", "MGET", "HGET", "HGETALL", "HMGET", "HVALS", "LLEN", "LRANGE",
                   "ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZCOUNT", "EXISTS", "XRANGE", "XREVRANGE", "XLEN"})


class WireError(Exception):
    """The server could not be reached or answered something unexpected."""


class WireUnsupported(WireError):
    """A URL or a reply this client does not handle: use redis-py."""


class ReplyError(WireError):
    """An error reply (``-ERR ...``) to one command."""


def _target(url: str) -> tuple[tuple[str, int] | str, str | None, str | None, int]:
    """(address or socket path, username, password, db) of a ``redis://`` or ``unix://`` URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "unix") or parts.fragment:
        raise WireUnsupported(f"scheme {parts.scheme!r}")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    query = dict(q.split("=", 1) if "=" in q else (q, "") for q in parts.query.split("&") if q)
    if set(query) - {"db"}:
        raise WireUnsupported(f"URL options {sorted(query)}")
    if parts.scheme == "unix":
        if not parts.path:
            raise WireUnsupported("unix URL without a path")
        db = query.get("db", "0")
        return parts.path, user, password, _db(db)
    path = parts.path.lstrip("/")
    if "db" in query and path:
        raise WireUnsupported("two databases in the URL")
    try:
        port = parts.port or 6379
    except ValueError:
        raise WireUnsupported("port") from None
    return (parts.hostname or "localhost", port), user, password, _db(query.get("db", path or "0"))


def _db(text: str) -> int:
    if not text.isdigit():
        raise WireUnsupported(f"database {text!r}")
    return int(text)


def _command(args: tuple) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode("utf-8")
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Wire:
    """One connection to the Redis ``url`` names (``redis://[user:password@]host:port/db``, ``unix://path?db=N``)."""

    def __init__(self, url: str, timeout: float = 2.0) -> None:
        address, user, password, db = _target(url)
        family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
        try:
            if family == socket.AF_UNIX:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(timeout)
                self.sock.connect(address)
            else:
                self.sock = socket.create_connection(address, timeout=timeout)
        except OSError as exc:
            raise WireError(f"cannot connect: {exc}") from None
        self.buf = bytearray()
        if password is not None:
            self.call("AUTH", *([user] if user else []), password)
        if db:
            self.call("SELECT", db)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Wire":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def call(self, *args):
        """One command's reply; an error reply raises :class:`ReplyError`."""
        (reply,) = self.pipeline([args])
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def pipeline(self, commands: list[tuple]) -> list:
        """The replies of ``commands``, sent in one write (an error reply is returned as :class:`ReplyError`)."""
        for args in commands:
            if str(args[0]).upper() not in READS:
                raise WireUnsupported(f"{args[0]} is not a read")
        try:
            self.sock.sendall(b"".join(_command(tuple(a)) for a in commands))
            return [self._reply() for _ in commands]
        except OSError as exc:
            raise WireError(f"connection lost: {exc}") from None

    # ---------------------------------------------------------------- RESP2 replies

    def _line(self) -> bytes:
        while True:
            end = self.buf.find(b"\r\n")
            if end >= 0:
                line = bytes(self.buf[:end])
                del self.buf[:end + 2]
                return line
            self._fill()

    def _exactly(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            self._fill()
        if self.buf[n:n + 2] != b"\r\n":
            raise WireUnsupported("a bulk string not ended by CRLF")
        data = bytes(self.buf[:n])
        del self.buf[:n + 2]
        return data

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise WireError("the server closed the connection")
        self.buf += chunk

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return ReplyError(rest.decode("utf-8", "replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exactly(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise WireUnsupported(f"reply type {kind!r}")
