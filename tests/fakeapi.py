"""A fake Anthropic Messages API over real HTTP, for tests.

Serves :class:`demo.scripted.ScriptedMessagesAPI` on 127.0.0.1 so the real
SDK in worker subprocesses can reach it through ``ANTHROPIC_BASE_URL``::

    with FakeMessagesServer(Script(turns=[...])) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        ...
        assert len(server.requests) == 3

Endpoints: ``POST /v1/messages`` (streaming SSE with chunked transfer encoding,
one flush per event, or JSON), ``POST /v1/messages/count_tokens``, and the
controls ``GET /_arrivals`` (when each API request arrived, ``{"path", "at"}`` with ``at`` from
``time.time()``: a client's latency from its own start), ``GET /_requests`` (JSON list of the bodies received; ``?all=1`` with the side calls': the
memory forks' and session titles', which a script answers with its ``session_memory``, ``extract`` and
``title`` turns, never with its ``turns``), ``POST /_script``
(replace the script with a JSON Script body) and ``POST /_reset`` (forget
requests and served errors).

Standalone: ``python -m tests.fakeapi --port 0 --script FILE.json`` prints
``LISTENING http://127.0.0.1:PORT`` and serves until killed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make `workflows` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from demo.scripted import Script, ScriptedMessagesAPI, Turn, get_api  # noqa: E402

ScriptLike = ScriptedMessagesAPI | Script | Callable[[dict], Turn] | dict | None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: headers and body (or SSE chunks) go out as separate small writes; with Nagle on, each
    # reply waits for the client's delayed ACK, ~40 ms a call, which is not what a real API costs.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- helpers ------------------------------------------------------------------

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # -- verbs ----------------------------------------------------------------------

    def do_GET(self) -> None:
        owner = self.server.owner
        path, _, query = self.path.partition("?")
        if path == "/_requests":  # ?all=1: the memory forks' requests too
            self._send_json(200, owner.all_requests if "all=1" in query else owner.requests)
        elif path == "/_arrivals":  # when each API request arrived (time.time()), in order
            self._send_json(200, owner.arrivals)
        elif path == "/_health":
            self._send_json(200, {"ok": True})
        else:
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

    def do_POST(self) -> None:
        arrived = time.time()  # (before the body is read: the moment the client's request came in)
        owner = self.server.owner
        raw = self._read_body()
        path = self.path.split("?", 1)[0]
        if path == "/_script":
            try:
                owner.api.set_script(Script.model_validate_json(raw or b"{}"))
            except ValueError as exc:
                self._send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}})
                return
            self._send_json(200, {"ok": True})
            return
        if path == "/_reset":
            owner.reset()
            self._send_json(200, {"ok": True})
            return

        owner._record_headers(self.path, dict(self.headers.items()), arrived)
        reply = owner.api.handle("POST", self.path, raw)
        if reply.head_delay:
            time.sleep(reply.head_delay)
        try:
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            if reply.headers.get("content-type", "").startswith("text/event-stream"):
                # Chunked: one HTTP chunk per SSE event, flushed, so the SDK reads
                # each event as it comes (and a stream_delay keeps it open).
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for chunk in reply.iter_chunks():
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            else:
                data = b"".join(reply.chunks)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # The client went away mid-response (e.g. a test killed the worker).
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FakeMessagesServer

    def process_request(self, request, client_address) -> None:
        with self.owner._headers_lock:
            self.owner.connections += 1
        super().process_request(request, client_address)

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):  # a killed worker's
            super().handle_error(request, client_address)


class FakeMessagesServer:
    """The scripted Messages API on a real socket, served by a daemon thread."""

    def __init__(self, script_or_api: ScriptLike = None, host: str = "127.0.0.1", port: int = 0) -> None:
        if isinstance(script_or_api, ScriptedMessagesAPI):
            self.api = script_or_api
        else:
            self.api = ScriptedMessagesAPI(script_or_api)
        self._headers_lock = threading.Lock()
        self._headers: list[dict] = []
        self.connections = 0  # TCP connections accepted: a client that reuses its pool opens one
        self._httpd = _Server((host, port), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None
        self.start()

    # -- life ---------------------------------------------------------------------

    def start(self) -> FakeMessagesServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fakeapi", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeMessagesServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- state --------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def requests(self) -> list[dict]:
        """Bodies of the sessions' ``/v1/messages`` requests received, retries included (no memory forks)."""
        return self.api.requests

    @property
    def all_requests(self) -> list[dict]:
        """Every request body, the memory forks' included."""
        return self.api.all_requests

    def fork_requests(self, kind: str) -> list[dict]:
        return self.api.fork_requests(kind)

    @property
    def request_headers(self) -> list[dict]:
        """``{"path", "headers", "at"}`` of each API request received (header names lower-case; ``at``: when
        it arrived, ``time.time()``)."""
        with self._headers_lock:
            return list(self._headers)

    @property
    def arrivals(self) -> list[dict]:
        """``{"path", "at"}`` of each API request received, in order of arrival (``GET /_arrivals``)."""
        return [{"path": h["path"], "at": h["at"]} for h in sorted(self.request_headers, key=lambda h: h["at"])]

    def set_script(self, script: Script | Callable[[dict], Turn] | dict) -> None:
        self.api.set_script(script)

    def reset(self) -> None:
        self.api.reset()
        with self._headers_lock:
            self._headers.clear()

    def _record_headers(self, path: str, headers: dict, at: float) -> None:
        with self._headers_lock:
            self._headers.append({"path": path, "headers": {k.lower(): v for k, v in headers.items()}, "at": at})


def first_prompt(body: dict) -> str:
    """A request's first prompt (after any context reminder blocks): which session, or sub-agent, asks."""
    content = body["messages"][0]["content"]
    texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
    return next((t for t in texts if not t.startswith("<system-reminder>")), "")


def assistant_turns(body: dict) -> int:
    """The model turns a request's conversation holds already."""
    return sum(m["role"] == "assistant" for m in body["messages"])


def last_prompt(body: dict) -> str:
    """The newest user text of a request (after a cancel it shares a message with the "interrupted"
    tool result)."""
    for m in reversed(body["messages"]):
        if m["role"] != "user":
            continue
        if isinstance(m["content"], str):
            return m["content"]
        texts = [b["text"] for b in m["content"] if b.get("type") == "text"]
        if texts:
            return texts[-1]
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakeapi", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--script", help="a JSON Script file")
    group.add_argument("--named", help="a named script of demo.scripted (e.g. demo, read_loop:5)")
    parser.add_argument("--keep-requests", type=int, metavar="N",
                        help="keep only the last N request bodies for GET /_requests (default 1000)")
    args = parser.parse_args(argv)

    if args.script:
        api = ScriptedMessagesAPI(Script.from_file(args.script))
    elif args.named:
        api = get_api(args.named)
    else:
        api = ScriptedMessagesAPI()
    if args.keep_requests:
        api.keep_requests(args.keep_requests)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = FakeMessagesServer(api, host=args.host, port=args.port)
    print(f"LISTENING {server.url}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
