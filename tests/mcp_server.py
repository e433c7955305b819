"""An MCP server written for the tests, with the official ``mcp`` package.

``python tests/mcp_server.py`` serves it over stdio; ``--http PORT`` over streamable HTTP on
127.0.0.1. ``build()`` gives the server object itself, which tests also reach in-process.

Tools: ``add`` (structured output), ``echo``, ``count`` (appends a line to the file named by
``MCP_TEST_LOG`` and says how many lines it holds: a test counts how often a call really ran),
``slow`` (sleeps, then counts), ``crash`` (the process exits), ``pid`` and ``whoami`` (the
environment variable ``MCP_TEST_NAME``, and whether ``ANTHROPIC_API_KEY`` reached the server).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager


def _log(note: str) -> int:
    path = os.environ.get("MCP_TEST_LOG")
    if not path:
        return 0
    with open(path, "a") as fh:
        fh.write(note + "\n")
    with open(path) as fh:
        return sum(1 for _ in fh)


def build(name: str = "testsrv"):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool(structured_output=False)
    def count(note: str) -> str:
        """Record a note; say how many notes there are."""
        return f"notes: {_log(note)}"

    @server.tool(structured_output=False)
    def slow(seconds: float, note: str = "slow") -> str:
        """Sleep, then record a note."""
        time.sleep(seconds)
        return f"notes: {_log(note)}"

    @server.tool(structured_output=False)
    def crash() -> str:
        """Exit the server process at once."""
        os._exit(3)

    @server.tool(structured_output=False)
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    @server.tool(structured_output=False)
    def whoami() -> str:
        """MCP_TEST_NAME, and whether the worker's API key reached the server."""
        return f"{os.environ.get('MCP_TEST_NAME', '')} key={'ANTHROPIC_API_KEY' in os.environ}"

    @server.tool(structured_output=False)
    def environ() -> str:
        """The server's working directory and environment, as JSON (what reached it)."""
        return json.dumps({"cwd": os.getcwd(), "env": dict(os.environ)})

    return server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_http(name: str = "testsrv", timeout: float = 30.0):
    """This server over streamable HTTP in a child process on a free port of 127.0.0.1; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--http", str(port), "--name", name],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"the test MCP server did not listen on port {port}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio")
    parser.add_argument("--name", default="testsrv")
    args = parser.parse_args()
    server = build(args.name)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    sys.exit(main())
