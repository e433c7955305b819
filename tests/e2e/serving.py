"""A real ``mainsail serve`` process for end-to-end tests, and a Server-Sent Events reader.

    srv = Serve(cluster).start()          # on a free port, with the cluster's environment
    api = srv.client(token)               # an httpx.Client with 'Authorization: Bearer <token>'
    for event in sse(api, f"/api/sessions/{sid}/events", params={"until_idle": "true"}): ...
    srv.kill(); srv.start()               # a crash and a restart, on the same port
    assert token not in srv.log()

The process is added to ``cluster.procs``, so the ``cluster`` fixture stops it whatever happens.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator

import httpx

from tests.conftest import free_port
from tests.e2e.conftest import MAINSAIL, Cluster, wait_for
from workflows.store import keys
from workflows.store.redis_store import stream_entries


class Serve:
    """One ``mainsail serve --no-worker`` process (workers are the cluster's), restartable."""

    def __init__(self, cluster: Cluster, port: int | None = None) -> None:
        self.cluster = cluster
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = cluster.tmp / f"serve-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> Serve:
        with open(self.log_path, "ab") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen([MAINSAIL, "serve", "--port", str(self.port), "--no-worker"],
                                         env=self.cluster.env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.cluster.procs.append(self.proc)
        wait_for(lambda: self._ready() or self.proc.poll() is not None, timeout, 0.2, "mainsail serve to listen")
        assert self.proc.poll() is None, self.log()
        return self

    def _ready(self) -> bool:
        try:
            return httpx.get(self.url + "/api/openapi.json", timeout=5).status_code == 401  # up: it asks for a token
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, token: str | None = None, **kw) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kw)


def sse(client: httpx.Client, path: str, *, params: dict | None = None, headers: dict | None = None
        ) -> Iterator[dict]:
    """The events of a Server-Sent Events answer (``{"event", "id", "data"}``; comments skipped).

    Leave the loop (or close the generator) to drop the connection."""
    with client.stream("GET", path, params=params, headers=headers, timeout=httpx.Timeout(120)) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        event: dict = {}
        for line in resp.iter_lines():
            if not line:
                if event:
                    yield event
                event = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            event[name] = event[name] + "\n" + value if name == "data" and name in event else value


def event_ids(r, sid: str) -> list[str]:
    """The SSE ids the server gives the session's transcript entries: the stream id, with ``.N`` for all
    but the last entry of one stream row."""
    out = []
    for row, fields in r.xrange(keys.log(sid)):
        row = row.decode() if isinstance(row, bytes) else row
        n = len(stream_entries(fields))
        out += [f"{row}.{i}" for i in range(n - 1)] + [row]
    return out


__all__ = ["Serve", "event_ids", "sse"]
