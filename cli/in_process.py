"""What a command runs inside its own process, and how it leaves.

Without a Redis server and without the ``redis-server`` binary, Redis is an in-memory fakeredis
server on a thread of this process (:func:`fakeredis_server`). A command that waits on sessions may
run a worker here too (cli/standby.py); it leaves by handing over (:func:`hand_over`). A process
that started threads of its own leaves with ``os._exit`` (:func:`in_process_threads_started`).
"""

from __future__ import annotations

import socket
import sys
import threading

import click

from workflows.store.server import RedisServer

_fake_server = None
_threads_started = False


def in_process_threads_started() -> bool:
    """True once this process runs a worker or a fakeredis server of its own."""
    return _threads_started


def in_process_redis() -> bool:
    """True when Redis is this process's own fakeredis server."""
    return _fake_server is not None


def mark_threads_started() -> None:
    """This process now runs threads of its own (a worker): it leaves with ``os._exit``."""
    global _threads_started
    _threads_started = True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fakeredis_server() -> str:
    """Start an in-memory Redis server on a thread of this process; its URL."""
    global _fake_server, _threads_started
    from fakeredis import TcpFakeServer

    _log_fakeredis_errors()
    port = free_port()
    _fake_server = TcpFakeServer(("127.0.0.1", port), server_type="redis")
    _threads_started = True
    threading.Thread(target=_fake_server.serve_forever, daemon=True, name="fakeredis").start()
    url = f"redis://127.0.0.1:{port}/0"
    # fakeredis's TCP server drops the connection after any error reply, including the
    # NOSCRIPT that redis-py's Lock gets on its first EVALSHA: load the scripts up front.
    server = RedisServer.at(url)
    server.load_lock_scripts()
    server.close()
    print("warning: no Redis server and no redis-server binary found; using an in-memory Redis in this "
          "process. Nothing survives this command: install Redis or set MAINSAIL_REDIS_URL.", file=sys.stderr)
    return url


def _log_fakeredis_errors() -> None:
    """Send the in-process server's command errors (it drops the connection on one) to stderr."""
    import logging

    class _Errors(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return str(record.msg).startswith("!!!")

    logger = logging.getLogger("fakeredis")
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Errors())
    handler.setFormatter(logging.Formatter("fakeredis: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False


def hand_over(worker) -> None:
    """Stop this command's in-process worker: it takes no new step and lets the steps it runs finish
    (saying so if that takes over a second; Ctrl-C leaves at once, and they go to another worker)."""

    def finishing(running: dict[str, float]) -> None:
        sessions = sorted({m.partition("/")[0][:8] for m in running})
        n = len(running)
        click.echo(click.style(
            f"Finishing {n} step{'s' if n != 1 else ''} on this command's worker before leaving (session "
            f"{', '.join(sessions)}); Ctrl-C leaves now, and {'they go' if n != 1 else 'it goes'} to another "
            "worker.", dim=True), err=True)

    worker.stop(on_wait=finishing)
