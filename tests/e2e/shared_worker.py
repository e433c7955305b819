"""One worker for a test module: a module's tests share a worker process, its private Redis and one routing
fake Messages API, instead of each starting its own (a worker start is seconds on a loaded machine).

A module opts in by giving its tests the per-test view as ``cluster`` (tests/e2e/conftest.py has the fixtures)::

    @pytest.fixture
    def cluster(shared_cluster):
        return shared_cluster

Each test keeps what a private cluster gave it: its own workspace and tmp directory, its own CLI environment
(``cluster.env`` is a copy), its own fake-model script (``cluster.serving(turn)``, whose requests and
``.requests`` are the test's only), and a store whose session lists hold only its own sessions (those whose
workspace is under its tmp directory). A request goes to the script of the test whose tmp directory it
names (the workspace is in every session's system prompt); a request naming none (a side call) goes to the
test running now. When a test ends, its CLIs are stopped and the shared worker is left with none of its
steps pending or running, so nothing it started reaches the next test.

Tests that kill, freeze or restart a worker, or that need a worker with another environment, keep their own
(``private_cluster``)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

from demo.scripted import ScriptedMessagesAPI
from demo.wire import Reply
from tests.e2e.conftest import Cluster, cluster_env, wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models.steps import StepStatus
from workflows.store import keys
from workflows.store.redis_store import Store

BUSY = (StepStatus.PENDING, StepStatus.RUNNING)


class Router(ScriptedMessagesAPI):
    """The fake model of a module: each request answered by the script of the test it belongs to."""

    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[bytes, ScriptedMessagesAPI] = {}  # a test's tmp directory -> its script
        self.current: ScriptedMessagesAPI | None = None
        self.guard = threading.Lock()

    def route(self, marker: str, api: ScriptedMessagesAPI) -> None:
        with self.guard:
            self.routes[marker.rstrip("/").encode() + b"/"] = api
            self.current = api

    def handle(self, method: str, path: str, raw_body: bytes) -> Reply:
        with self.guard:
            api = next((a for m, a in self.routes.items() if m in raw_body), self.current)
        if api is None:
            return self._error_reply(500, "api_error", "no test is running to answer this request", None, 0)
        return api.handle(method, path, raw_body)


class ScriptAPI(ScriptedMessagesAPI):
    """One test's part of the module's fake API: its script and the requests routed to it."""

    def __init__(self, turn, url: str) -> None:
        super().__init__(turn)
        self.url = url


class ScopedStore(Store):
    """The shared store, with session lists cut to one test's sessions (workspace under its directory)."""

    def __init__(self, client, root: Path) -> None:
        super().__init__(client)
        self.root = str(root).rstrip("/") + "/"

    def _mine(self, ids: list[str]) -> list[str]:
        out = []
        for sid in ids:
            if self.r.exists(keys.session(sid)) and (self.get_session(sid).workspace + "/").startswith(self.root):
                out.append(sid)
        return out

    def all_session_ids(self) -> list[str]:
        return self._mine(super().all_session_ids())

    def session_ids(self, limit: int = 100, start: int = 0) -> list[str]:
        return self.all_session_ids()[start:start + limit]


class SharedWorker:
    """A module's worker, Redis and routing fake API."""

    def __init__(self, redis_server, base: Path) -> None:
        self.redis = redis_server
        self.client = redis_server.client()
        self.router = Router()
        self.api = FakeMessagesServer(self.router)
        self.env = dict(cluster_env(redis_server.url, base / "data"), ANTHROPIC_BASE_URL=self.api.url)
        self.cluster = Cluster(self.env, Store(self.client), base)
        try:
            self.cluster.start_worker()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self.cluster.stop()
        self.api.stop()
        self.client.close()


class SharedCluster(Cluster):
    """One test's view of its module's :class:`SharedWorker` (the ``cluster`` API the tests use)."""

    def __init__(self, shared: SharedWorker, tmp: Path) -> None:
        super().__init__(dict(shared.env), ScopedStore(shared.client, tmp), tmp)
        self.shared = shared

    @contextmanager
    def serving(self, turn):
        """The module's fake API answering this test with ``turn``; the shared worker calls it."""
        api = ScriptAPI(turn, self.shared.api.url)
        self.shared.router.route(str(self.tmp), api)
        self.env["ANTHROPIC_BASE_URL"] = api.url
        yield api

    def start_worker(self, *args, **kw):
        raise AssertionError("a test of a shared worker starts none of its own: give it private_cluster")

    def settle(self, timeout: float = 60) -> None:
        """Until none of this test's steps is pending or running on the shared worker."""
        def quiet() -> bool:
            return not any(s.status in BUSY for sid in self.store.all_session_ids() for s in self.store.steps(sid))
        wait_for(quiet, timeout, 0.1, "the test's steps to finish on the shared worker")


__all__ = ["Router", "ScopedStore", "SharedCluster", "SharedWorker"]
