"""MCP server processes and their memory for N sessions of one workspace on one worker process.

    python bench/mcp_pool.py [--sessions 3,10] [--servers 5]

Each session connects to ``--servers`` stdio servers (tests/mcp_server.py, a Python server on the official
``mcp`` package, under distinct names) through the process's pool, as a tools worker does, and calls one
tool on each. Then it counts the servers' processes (children of this process, from /proc) and sums their
resident memory (VmRSS), and stops the pool. Run it against another checkout's pool to compare:
``PYTHONPATH=/path/to/other/checkout python bench/mcp_pool.py`` (the pool's API is the same). Exit 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

SERVER = str(Path(__file__).resolve().parents[1] / "tests" / "mcp_server.py")


def children() -> dict[int, int]:
    """This process's live server children: pid -> VmRSS in kB."""
    me, out = os.getpid(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) != me or SERVER.encode() not in (entry / "cmdline").read_bytes():
                continue
            status = (entry / "status").read_text()
        except OSError:
            continue
        rss = next((int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("VmRSS:")), 0)
        out[int(entry.name)] = rss
    return out


def run(sessions: int, servers: int) -> tuple[int, float, float]:
    from workflows.mcp.pool import McpPool
    from workflows.models.mcp import McpServerConfig

    pool = McpPool(idle_seconds=600)
    configs = [McpServerConfig(name=f"s{i}", command=sys.executable, args=[SERVER]) for i in range(servers)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as ws:
        try:
            for n in range(sessions):
                for config in configs:
                    conn = pool.connection(f"session-{n}", config, cwd=ws, env={}, timeout=60)
                    conn.call_tool("pid", {}, 60, None)
            wall = time.monotonic() - started
            procs = children()
            return len(procs), sum(procs.values()) / 1024, wall
        finally:
            pool.close_all()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="3,10")
    ap.add_argument("--servers", type=int, default=5)
    args = ap.parse_args()
    import workflows.mcp.pool as pool_module

    print(f"pool: {pool_module.__file__}")
    print(f"{'sessions':>8} {'servers':>7} {'processes':>9} {'RSS MB':>8} {'wall s':>7}")
    for n in (int(x) for x in args.sessions.split(",")):
        procs, rss, wall = run(n, args.servers)
        print(f"{n:>8} {args.servers:>7} {procs:>9} {rss:>8.0f} {wall:>7.1f}")


if __name__ == "__main__":
    main()
