"""One live connection to one MCP server, used from worker threads.

The MCP SDK is async (anyio): a client must be entered and left by the same task, and its
requests run on its event loop. So the process has one asyncio loop in a daemon thread
(:func:`run_soon`); each :class:`Connection` is a task on it that opens the client and holds it
open until :meth:`Connection.close`, and worker threads send it requests with
``run_coroutine_threadsafe``, waiting in short slices so a cancel or a deadline stops the wait.

A stdio server runs with the SDK's minimal environment (``HOME``, ``PATH``, ``USER``...), the
session's settings ``env`` and the server's own ``env``, in the session's workspace: none of the
worker's secrets (API key, Redis URL) reach it. Its stderr goes to a temporary file whose last lines
explain a server that fails to start.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import tempfile
import threading
import time
from contextlib import asynccontextmanager
from typing import Any, Callable

from workflows.exceptions import McpServerError
from workflows.models.mcp import McpServerConfig

__all__ = ["Connection", "Opener", "describe_error", "open_client", "run_soon"]

#: ``opener(config, cwd, env, errlog, on_end)``: an ``mcp.Client`` (an async context manager) for the server;
#: ``on_end()`` is to be called when its transport ends (the server exited or hung up).
Opener = Callable[[McpServerConfig, str, dict[str, str], Any, Callable[[], None]], Any]

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()
POLL = 0.1  # seconds between looks at a waiting call's cancel event and deadline
TOOL_PAGES = 100  # tools/list pages read at most (a server that paginates forever cannot hang discovery)


def run_soon(coro) -> concurrent.futures.Future:
    """Run ``coro`` on the process's MCP loop (started on first use, a daemon thread)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="mainsail-mcp", daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _loop)


def open_client(config: McpServerConfig, cwd: str, env: dict[str, str], errlog, on_end: Callable[[], None]):
    """The ``mcp.Client`` for ``config`` (not entered yet): stdio or streamable HTTP."""
    from mcp import Client, Implementation

    info = Implementation(name="mainsail", version="0.1.0")
    if config.type == "stdio":
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=config.command, args=list(config.args), env=env, cwd=cwd)
        return Client(_watched(stdio_client(params, errlog=errlog), on_end), client_info=info)
    return Client(_watched(_http_transport(config.url, dict(config.headers)), on_end), client_info=info)


@asynccontextmanager
async def _watched(transport, on_end: Callable[[], None]):
    """``transport``, telling ``on_end`` as soon as its read side ends: a stdio server that exited between
    calls is then known dead before the next call is sent (so it is started again, not sent a call)."""
    import anyio

    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream(0)

        async def pump() -> None:
            try:
                async with send:
                    async for message in read:
                        await send.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                on_end()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pump)
            try:
                yield receive, write
            finally:
                tasks.cancel_scope.cancel()


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # The SDK's own timeouts (30 s, 300 s to read a response stream), with the configured headers.
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def describe_error(exc: BaseException) -> str:
    """One line for an exception, looking inside the exception groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}{': ' + str(exc.filename) if exc.filename else ''}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Connection:
    """A connected client of one server, opened by :meth:`start` and held until :meth:`close`."""

    def __init__(self, config: McpServerConfig, *, cwd: str, env: dict[str, str],
                 opener: Opener | None = None) -> None:
        self.config = config
        self.cwd = cwd
        self.env = env
        self._opener = opener or open_client
        self.client = None
        self.broken = False  # the connection ended (the server exited, or a call saw it close)
        self.last_used = time.monotonic()
        self.inflight = 0  # requests sent and not answered (a shared server serves several sessions at once)
        self._inflight_lock = threading.Lock()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._task: concurrent.futures.Future | None = None
        self._error: BaseException | None = None
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") \
            if config.type == "stdio" else None

    # ------------------------------------------------------------------ life

    def start(self, timeout: float) -> None:
        """Start (or reach) the server and wait until it answered the handshake.

        Raises:
            McpServerError: it could not start, did not answer within ``timeout`` seconds, or refused.
        """
        self._task = run_soon(self._main())
        if not self._ready.wait(timeout):
            self.close()
            raise McpServerError(f"MCP server {self.config.name!r} did not answer within {timeout:g}s "
                                 f"({self.config.describe()}){self._stderr()}. Check that it speaks MCP over "
                                 f"{self.config.type}, or raise MAINSAIL_MCP_TIMEOUT_SECONDS.")
        if self.client is None:
            why = describe_error(self._error) if self._error else "it closed the connection"
            raise McpServerError(f"MCP server {self.config.name!r} could not be started "
                                 f"({self.config.describe()}): {why}{self._stderr()}")

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with self._opener(self.config, self.cwd, self.env, self._errlog, self._ended) as client:
                self.client = client
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # (the task's own end: nothing above it to raise to)
            self._error = exc
        finally:
            self.client = None
            self.broken = True
            self._ready.set()

    def _ended(self) -> None:
        self.broken = True

    def close(self, wait: float = 0.0) -> None:
        """Stop the server (stdio: stdin closed, then the process tree killed) or end the HTTP session;
        ``wait``: seconds to wait for that to be done (the process gone)."""
        self.broken = True
        loop = _loop
        if loop is not None and self._stop is not None and self.client is not None:
            loop.call_soon_threadsafe(self._stop.set)
        elif self._task is not None:
            self._task.cancel()
        if wait > 0 and self._task is not None:
            try:
                self._task.result(wait)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                pass
        if self._errlog is not None:
            try:
                self._errlog.close()
            except OSError:
                pass

    # ------------------------------------------------------------------ requests

    def list_tools(self, timeout: float) -> list:
        """Every tool the server lists (all pages).

        Raises:
            McpServerError: the request failed or timed out.
        """

        async def every() -> list:
            tools, cursor = [], None
            for _ in range(TOOL_PAGES):
                page = await self._live().list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            return tools

        return self._wait(every(), timeout, None, "listing its tools")

    def call_tool(self, tool: str, arguments: dict, timeout: float, cancel: threading.Event | None):
        """``tools/call``: the server's ``CallToolResult``.

        Raises:
            McpServerError: the connection closed during the call, it timed out, or it was cancelled
                (``cancel`` set); the message says which (the call's outcome is then unknown).
        """
        return self._wait(self._live().call_tool(tool, arguments), timeout, cancel, f"running {tool}")

    def _live(self):
        client = self.client
        if client is None or self.broken:
            raise McpServerError(f"MCP server {self.config.name!r} is not connected.")
        return client

    def _wait(self, coro, timeout: float, cancel: threading.Event | None, doing: str):
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        self.last_used = time.monotonic()
        with self._inflight_lock:
            self.inflight += 1
        future = run_soon(coro)
        deadline = time.monotonic() + timeout
        name = self.config.name
        try:
            while True:
                try:
                    return future.result(POLL)
                except concurrent.futures.TimeoutError:
                    if cancel is not None and cancel.is_set():
                        future.cancel()
                        raise McpServerError(f"Cancelled while MCP server {name!r} was {doing}.") from None
                    if time.monotonic() > deadline:
                        future.cancel()
                        raise McpServerError(f"MCP server {name!r} did not finish {doing} within {timeout:g}s "
                                             "(MAINSAIL_MCP_TOOL_TIMEOUT_SECONDS); the call was abandoned.") from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.broken = True
                raise McpServerError(f"MCP server {name!r} closed the connection while {doing} (it may have "
                                     f"crashed){self._stderr()}, so the outcome is unknown; it is started again "
                                     "on the next call.") from None
            raise McpServerError(f"MCP server {name!r} refused the request while {doing}: "
                                 f"{exc.error.message if exc.error else exc}") from None
        except McpServerError:
            raise
        except Exception as exc:  # a malformed reply, a transport error: the server's fault, said plainly
            raise McpServerError(f"MCP server {name!r} failed while {doing}: {describe_error(exc)}") from None
        finally:
            with self._inflight_lock:
                self.inflight -= 1
            self.last_used = time.monotonic()

    def _stderr(self) -> str:
        """`` (stderr: ...)`` with the server's last stderr lines, when it wrote any."""
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            log.seek(0)
            lines = [ln for ln in log.read().splitlines() if ln.strip()][-5:]
        except (OSError, ValueError):
            return ""
        return f" (stderr: {' | '.join(lines)[-600:]})" if lines else ""
