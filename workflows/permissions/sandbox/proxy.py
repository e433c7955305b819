"""The network allow-list of sandboxed commands: an HTTP/HTTPS proxy inside the worker.

A sandboxed command has no network of its own (``bwrap --unshare-net``). With
``sandbox.network.allowedDomains`` naming hosts, it reaches them through this
proxy, which lets through only those hosts (``example.com`` exactly, or
``*.example.com`` for any subdomain) and answers everything else with a 403
whose body says how to allow it.

How the command reaches a proxy that lives outside its network namespace:

1. the worker makes a socketpair and passes one end into bwrap;
2. :data:`LAUNCHER`, run by the worker's Python as the sandbox's first program,
   opens a TCP listener on ``127.0.0.1:PROXY_PORT`` *inside* the sandbox's
   network namespace, sends that listening socket back over the socketpair
   (SCM_RIGHTS), and execs the command;
3. the worker accepts the command's connections on it and makes the outbound
   connections itself, in the host's network.

Why not a unix socket bind-mounted in, with a forwarder next to the command:
sandboxed commands may not create unix sockets at all (see
:mod:`~workflows.permissions.sandbox.seccomp`), and this way no helper process
runs beside the command and nothing is left to clean up in the sandbox.

The proxy speaks just enough HTTP/1.1: ``CONNECT host:port`` for HTTPS (then
bytes both ways), and absolute-form ``GET http://host/...`` for plain HTTP (the
request line is rewritten to origin form and ``Connection: close`` is forced,
so one proxied connection carries one request to one checked host).
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

__all__ = ["LAUNCHER", "PROXY_PORT", "DomainProxy", "host_allowed"]

PROXY_PORT = 3128  # inside the sandbox's own network namespace: it cannot collide with the host's
CONNECT_TIMEOUT = 10.0
HEAD_TIMEOUT = 30.0
MAX_HEAD = 64 * 1024
ACCEPT_POLL = 0.2

# Runs inside the sandbox as ``python -I -S -c LAUNCHER FD PORT ARGV...``: standard library only.
LAUNCHER = """\
import os, socket, sys
fd, port, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(128)
channel = socket.socket(fileno=fd)
socket.send_fds(channel, [b"L"], [listener.fileno()])
channel.close()
listener.close()
os.execv(argv[0], argv)
"""

_HOP_HEADERS = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}


def host_allowed(host: str, patterns: list[str]) -> bool:
    """Whether ``host`` matches one of ``patterns``: ``*``, ``example.com`` or ``*.example.com``.

    ``*.example.com`` matches any subdomain (``a.example.com``, ``a.b.example.com``)
    but not ``example.com`` itself, as in Claude Code. Case and a trailing dot are ignored.
    """
    host = host.strip().strip("[]").rstrip(".").lower()
    for pattern in patterns:
        p = pattern.strip().rstrip(".").lower()
        if p == "*" or p == host or (p.startswith("*.") and host.endswith(p[1:])):
            return True
    return False


def _response(code: int, reason: str, body: str) -> bytes:
    data = body.encode()
    head = (f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n")
    return head.encode() + data


def _read_head(conn: socket.socket) -> tuple[bytes, bytes] | None:
    """The request head (through the blank line) and any bytes read past it; None if it never came."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEAD:
            return None
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _split_authority(authority: str, default_port: int) -> tuple[str, int] | None:
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::(\d+))?|([^:\[\]]+)(?::(\d+))?", authority)
    if not m:
        return None
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4) or default_port)
    return (host, port) if 0 < port < 65536 else None


def _origin_form(head: bytes, path: str) -> bytes:
    """The request head for the origin server: origin-form target, no proxy headers, one request."""
    lines = head.decode("latin-1").split("\r\n")
    method, _target, version = lines[0].split(" ", 2)
    kept = [ln for ln in lines[1:] if ln and ln.split(":", 1)[0].strip().lower() not in _HOP_HEADERS]
    return "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode("latin-1")


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class DomainProxy:
    """One command's proxy: created before bwrap starts, closed when the command ends.

    Usage::

        proxy = DomainProxy(["pypi.org", "*.pythonhosted.org"])
        Popen(argv, pass_fds=[proxy.child_fd])   # argv runs LAUNCHER with child_fd
        proxy.start()                            # after Popen: waits for the listener, then serves
        ...
        proxy.close()
    """

    def __init__(self, allowed: list[str], connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.allowed = list(allowed)
        self.connect_timeout = connect_timeout
        self._ours, self._theirs = socket.socketpair()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._run, name="mainsail-sandbox-proxy", daemon=True)

    @property
    def child_fd(self) -> int:
        """The descriptor to pass into the sandbox (LAUNCHER's first argument)."""
        return self._theirs.fileno()

    def start(self) -> None:
        """Serve, once the command has been started with :attr:`child_fd`."""
        self._theirs.close()  # ours is then the only other end: EOF when the sandbox exits
        self._thread.start()

    def close(self) -> None:
        """Stop accepting and cut every open connection."""
        self._stop.set()
        for sock in [self._ours, self._theirs]:
            sock.close()
        with self._lock:
            for sock in list(self._open):
                _close(sock)
            self._open.clear()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    # ------------------------------------------------------------------ serving

    def _run(self) -> None:
        try:
            _msg, fds, _flags, _addr = socket.recv_fds(self._ours, 16, 1)
        except OSError:
            return
        if not fds:
            return  # the sandbox ended (or failed) before the launcher sent its listener
        listener = socket.socket(fileno=fds[0])
        listener.settimeout(ACCEPT_POLL)
        try:
            self._track(listener)
            while not self._stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                conn.settimeout(HEAD_TIMEOUT)
                self._track(conn)
                threading.Thread(target=self._serve, args=(conn,), name="mainsail-sandbox-proxy-conn",
                                 daemon=True).start()
        except OSError:
            pass  # closed: the command ended
        finally:
            self._untrack(listener)

    def _serve(self, conn: socket.socket) -> None:
        upstream = None
        try:
            got = _read_head(conn)
            if got is None:
                return
            head, rest = got
            upstream, first = self._open_upstream(conn, head)
            if upstream is None:
                return
            conn.settimeout(None)
            upstream.settimeout(None)
            self._track(upstream)
            upstream.sendall(first + rest)
            back = threading.Thread(target=_pipe, args=(upstream, conn), daemon=True)
            back.start()
            _pipe(conn, upstream)
            back.join()
        except OSError:
            pass
        finally:
            for sock in (conn, upstream):
                if sock is not None:
                    self._untrack(sock)

    def _open_upstream(self, conn: socket.socket, head: bytes) -> tuple[socket.socket | None, bytes]:
        """Check the request and connect to its host; on refusal, answer the client and return None."""
        try:
            method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        except ValueError:
            conn.sendall(_response(400, "Bad Request", "Mainsail sandbox proxy: malformed request line.\n"))
            return None, b""
        if method.upper() == "CONNECT":
            where, path = _split_authority(target, 443), None
        else:
            url = urlsplit(target)
            where = _split_authority(url.netloc.rpartition("@")[2], 80) if url.scheme == "http" else None
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        if where is None:
            conn.sendall(_response(400, "Bad Request", (
                f"Mainsail sandbox proxy: cannot forward {method} {target}: it forwards CONNECT host:port "
                "(HTTPS) and absolute http:// URLs only.\n")))
            return None, b""
        host, port = where
        if not host_allowed(host, self.allowed):
            conn.sendall(_response(403, "Forbidden", (
                f"Mainsail sandbox: connections to {host} are not allowed. The allowed domains are "
                f"{', '.join(self.allowed)} (sandbox.network.allowedDomains). To allow it, add {host!r} to "
                "sandbox.network.allowedDomains in .claude/settings.json or .mainsail/settings.json.\n")))
            log.info("sandbox proxy refused %s:%s (not in allowedDomains)", host, port)
            return None, b""
        try:
            upstream = socket.create_connection((host, port), timeout=self.connect_timeout)
        except OSError as exc:
            conn.sendall(_response(502, "Bad Gateway",
                                   f"Mainsail sandbox proxy: cannot connect to {host}:{port}: {exc}.\n"))
            return None, b""
        if path is None:
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            return upstream, b""
        return upstream, _origin_form(head, path)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            if self._stop.is_set():
                _close(sock)
                raise OSError("proxy closed")
            self._open.add(sock)

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        _close(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
