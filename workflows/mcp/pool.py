"""The process's MCP connections, one per (session, server), started on first use and kept.

A tools worker that runs a session's MCP call opens the server's connection then (a stdio server
starts as a child of this worker), and keeps it for the session's next calls. Before each reuse a
connection whose transport ended (a stdio server that exited: crashed, or was killed) is started
again, so a crash between calls costs nothing. A crash *during* a call is that call's error (its outcome
is unknown); the next call starts the server again. Connections unused for
``MAINSAIL_MCP_IDLE_SECONDS`` are closed, and all are closed when the worker stops.
"""

from __future__ import annotations

import threading
import time

from workflows.mcp.connection import Connection, Opener
from workflows.models.mcp import McpServerConfig

__all__ = ["McpPool", "close_all", "install", "pool"]

class McpPool:
    """Connections by (session id, server name); thread-safe."""

    def __init__(self, opener: Opener | None = None, idle_seconds: float = 600.0) -> None:
        self.opener = opener
        self.idle_seconds = idle_seconds
        self._conns: dict[tuple[str, str], Connection] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()

    def connection(self, sid: str, config: McpServerConfig, *, cwd: str, env: dict[str, str],
                   timeout: float) -> Connection:
        """The session's live connection to ``config``'s server: reused while it lives, or started.

        Raises:
            McpServerError: the server could not be started or reached.
        """
        key = (sid, config.name)
        self.close_idle()
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            conn = self._conns.get(key)
            if conn is not None and self._usable(conn, config):
                return conn
            if conn is not None:
                self._drop(key, conn)
            conn = Connection(config, cwd=cwd, env=env, opener=self.opener)
            conn.start(timeout)
            with self._lock:
                self._conns[key] = conn
            return conn

    def _usable(self, conn: Connection, config: McpServerConfig) -> bool:
        return not conn.broken and conn.config.fingerprint() == config.fingerprint()

    def _drop(self, key: tuple[str, str], conn: Connection) -> None:
        with self._lock:
            if self._conns.get(key) is conn:
                del self._conns[key]
        conn.close()

    def forget(self, sid: str, name: str) -> None:
        """Close the session's connection to server ``name`` (a call left it in an unknown state)."""
        conn = self._conns.get((sid, name))
        if conn is not None:
            self._drop((sid, name), conn)

    def close_idle(self, now: float | None = None) -> int:
        """Close connections unused for :attr:`idle_seconds`; how many were closed."""
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [(k, c) for k, c in self._conns.items() if now - c.last_used > self.idle_seconds]
        for key, conn in idle:
            self._drop(key, conn)
        return len(idle)

    def close_all(self) -> None:
        """Close every connection (the worker stops)."""
        with self._lock:
            conns = list(self._conns.items())
        for key, conn in conns:
            self._drop(key, conn)

    def __len__(self) -> int:
        return len(self._conns)


_pool: McpPool | None = None
_pool_lock = threading.Lock()


def pool(idle_seconds: float | None = None) -> McpPool:
    """This process's pool (created on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = McpPool(idle_seconds=idle_seconds or 600.0)
        elif idle_seconds:
            _pool.idle_seconds = idle_seconds
        return _pool


def close_all() -> None:
    """Close this process's MCP connections, if it has any (the worker stops)."""
    with _pool_lock:
        current = _pool
    if current is not None:
        current.close_all()


def install(new: McpPool | None) -> McpPool | None:
    """Replace this process's pool (tests give one whose opener reaches in-process servers); the old one."""
    global _pool
    with _pool_lock:
        old, _pool = _pool, new
    return old
