"""The Agent SDK's programs of tests/e2e/test_agent_sdk.py again, with warm start on (cli/warm/): the SDK
spawns ``mainsail``, which hands its argv, environment, directory and pipes to a warm server; the stream-json
control protocol (can_use_tool, interrupt, a multi-turn client) runs over the very pipes the SDK made. The
same assertions hold, and the server's log shows it ran the commands."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import _STARTED_DIRS
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.e2e.test_agent_sdk import (  # noqa: F401  (collected here again, with this module's `cluster`)
    test_a_multi_turn_client_keeps_one_session,
    test_can_use_tool_settles_the_durable_request,
    test_interrupt_stops_a_slow_command,
    test_query_streams_claude_codes_messages_and_runs_the_command,
)

pytest.importorskip("claude_agent_sdk")
pytestmark = pytest.mark.e2e


class WarmCluster:
    """The shared cluster, its CLI runs with warm start on and a warm directory of their own."""

    def __init__(self, base, directory: Path) -> None:
        self._base = base
        self.dir = directory
        self.env = {**base.env, "MAINSAIL_WARM": "true", "MAINSAIL_WARM_DIR": str(directory)}

    def __getattr__(self, name):
        return getattr(self._base, name)

    def ran(self) -> int:
        return sum(p.read_text(errors="replace").count("] running ") for p in self.dir.glob("*.log"))


@pytest.fixture(scope="module")
def warm_dir():
    directory = Path(tempfile.mkdtemp(prefix="msw-", dir="/tmp"))  # (short: AF_UNIX paths are 107 bytes at most)
    _STARTED_DIRS.append(str(directory))
    yield directory / "w"
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def cluster(shared_cluster, warm_dir):
    c = WarmCluster(shared_cluster, warm_dir)
    if not list(warm_dir.glob("*.pid")):  # (the module's first test: start the server, wait until it listens)
        subprocess.run([MAINSAIL, "sessions"], env=c.env, capture_output=True, timeout=120)
        wait_for(lambda: list(warm_dir.glob("*.pid")), 120, what="the warm server to listen")
    before = c.ran()
    yield c
    assert c.ran() > before, "the warm server ran none of the test's commands"


@pytest.fixture(scope="module", autouse=True)
def _stop_the_server(warm_dir):
    yield
    env = {**os.environ, "MAINSAIL_WARM_DIR": str(warm_dir)}
    subprocess.run([MAINSAIL, "warm", "stop"], env=env, capture_output=True, timeout=60)
