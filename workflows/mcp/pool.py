"""The process's MCP servers, pooled by workspace and resolved configuration, shared by the sessions that
may share them, started on first use and stopped when idle.

A tools worker that runs an MCP call opens the server's connection then (a stdio server starts as a
child of this worker) and keeps it. The key is a digest of everything that makes the process what it
is (:func:`pool_key`): the workspace it runs in, the server's name, scope, transport, command,
arguments, URL, headers and its whole resolved environment (the session's settings ``env`` and the
server's own). Sessions of one workspace whose configuration resolves the same share one process; a
session of another workspace, or whose environment differs (another token in ``env``, another
``${VAR}``), gets its own. The server sees requests from several sessions by JSON-RPC id on one
connection, as an MCP server must handle them.

Before each reuse a connection whose transport ended (a stdio server that exited: crashed, or was
killed) is started again. A call cut off (cancel, timeout, a crash during it) *retires* its connection:
no new call is sent to it, and it is closed once the calls other sessions have in flight on it end.
Connections with no call in flight and unused for ``MAINSAIL_MCP_IDLE_SECONDS`` are stopped (by the
process pool's sweeper thread, and at each use), and all are stopped, waiting for their processes to
exit, when the worker stops. What happens is counted for ``/metrics`` (started, reused, stopped by
reason) and :meth:`McpPool.running` is reported in the worker's registration.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time

from workflows.mcp.connection import Connection, Opener
from workflows.models.mcp import McpServerConfig
from workflows.store.metrics import TALLY

__all__ = ["McpPool", "close_all", "install", "pool", "pool_key", "running"]

STARTED = "mainsail_mcp_servers_started_total"
REUSED = "mainsail_mcp_servers_reused_total"
STOPPED = "mainsail_mcp_servers_stopped_total"
DEFAULT_IDLE_SECONDS = 600.0
STOP_WAIT_SECONDS = 5.0  # how long close_all waits for the servers' processes to exit


def pool_key(config: McpServerConfig, cwd: str, env: dict[str, str]) -> tuple[str, str]:
    """(workspace, digest of the resolved server): equal only for servers that are the same process."""
    data = {**config.model_dump(include={"name", "type", "command", "args", "url", "headers", "source"}),
            "env": env, "cwd": cwd}
    return cwd, hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class _Entry:
    """One pooled connection and the sessions it served."""

    __slots__ = ("conn", "sessions", "retired")

    def __init__(self, conn: Connection, sid: str) -> None:
        self.conn = conn
        self.sessions = {sid}
        self.retired = False


class McpPool:
    """Connections by :func:`pool_key`; thread-safe."""

    def __init__(self, opener: Opener | None = None, idle_seconds: float = DEFAULT_IDLE_SECONDS) -> None:
        self.opener = opener
        self.idle_seconds = idle_seconds
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._retired: list[_Entry] = []  # cut-off connections waiting for their other calls to end
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()
        self._sweeper: threading.Thread | None = None

    def connection(self, sid: str, config: McpServerConfig, *, cwd: str, env: dict[str, str],
                   timeout: float) -> Connection:
        """A live connection to ``config``'s server for session ``sid``: the pool's, or started now.

        Raises:
            McpServerError: the server could not be started or reached.
        """
        key = pool_key(config, cwd, env)
        self.close_idle()
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            entry = self._entries.get(key)
            if entry is not None and not entry.conn.broken:
                entry.conn.last_used = time.monotonic()  # handed out: not idle before its call is sent
                with self._lock:
                    if sid not in entry.sessions:
                        entry.sessions.add(sid)
                        TALLY.add(REUSED)
                return entry.conn
            if entry is not None:
                self._drop(key, entry, "exited")
            conn = Connection(config, cwd=cwd, env=env, opener=self.opener)
            conn.start(timeout)
            TALLY.add(STARTED)
            with self._lock:
                self._entries[key] = _Entry(conn, sid)
            return conn

    def _drop(self, key: tuple[str, str], entry: _Entry, reason: str, wait: float = 0.0) -> None:
        with self._lock:
            if self._entries.get(key) is entry:
                del self._entries[key]
            elif entry in self._retired:
                self._retired.remove(entry)
            else:
                return  # another thread dropped it
        entry.conn.close(wait)
        TALLY.add(STOPPED, reason=reason)

    def retire(self, conn: Connection) -> None:
        """A call on ``conn`` was cut off (it may still run there): send it no new call, and close it once no
        other session's call is in flight on it (at once if none is)."""
        with self._lock:
            found = next(((k, e) for k, e in self._entries.items() if e.conn is conn), None)
            if found is None:
                return
            key, entry = found
            del self._entries[key]
            entry.retired = True
            self._retired.append(entry)
        self._close_retired()

    def _close_retired(self) -> None:
        with self._lock:
            done = [e for e in self._retired if e.conn.inflight == 0]
        for entry in done:
            self._drop(("", ""), entry, "exited" if entry.conn.broken else "cut_off")

    def close_idle(self, now: float | None = None) -> int:
        """Stop connections with no call in flight and unused for :attr:`idle_seconds`; how many."""
        now = time.monotonic() if now is None else now
        self._close_retired()
        with self._lock:
            exited = [(k, e) for k, e in self._entries.items() if e.conn.broken and e.conn.inflight == 0]
            idle = [(k, e) for k, e in self._entries.items() if not e.conn.broken and e.conn.inflight == 0
                    and now - e.conn.last_used > self.idle_seconds]
        for key, entry in exited:
            self._drop(key, entry, "exited")
        for key, entry in idle:
            self._drop(key, entry, "idle")
        return len(idle)

    def close_all(self, wait: float = STOP_WAIT_SECONDS) -> None:
        """Stop every server and wait (up to ``wait`` seconds in all) for their processes to exit."""
        with self._lock:
            entries = [(k, e) for k, e in self._entries.items()] + [(("", ""), e) for e in self._retired]
        deadline = time.monotonic() + wait
        for _, entry in entries:
            entry.conn.close()  # all asked to stop first, so they exit in parallel
        for key, entry in entries:
            self._drop(key, entry, "shutdown", max(0.0, deadline - time.monotonic()))

    def running(self) -> int:
        """Connections open (a stdio one is a process), retired ones included."""
        with self._lock:
            return sum(1 for e in [*self._entries.values(), *self._retired] if not e.conn.broken)

    def start_sweeper(self) -> None:
        """Stop idle servers from a daemon thread too (a worker whose sessions went quiet uses no pool)."""
        with self._lock:
            if self._sweeper is not None:
                return
            self._sweeper = threading.Thread(target=self._sweep, name="mainsail-mcp-idle", daemon=True)
        self._sweeper.start()

    def _sweep(self) -> None:
        while True:
            time.sleep(min(60.0, max(1.0, self.idle_seconds / 4)))
            self.close_idle()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


_pool: McpPool | None = None
_pool_lock = threading.Lock()


def pool(idle_seconds: float | None = None) -> McpPool:
    """This process's pool (created on first use, with its idle sweeper)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = McpPool(idle_seconds=idle_seconds or DEFAULT_IDLE_SECONDS)
            _pool.start_sweeper()
        elif idle_seconds:
            _pool.idle_seconds = idle_seconds
        return _pool


def running() -> int:
    """This process's open MCP connections (0 before any)."""
    with _pool_lock:
        current = _pool
    return current.running() if current is not None else 0


def close_all() -> None:
    """Stop this process's MCP servers, if it has any (the worker stops)."""
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
