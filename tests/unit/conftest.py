"""Fixtures shared by the unit tests that run sessions through the engine (fakeredis, inline steps)."""

from __future__ import annotations

import pytest

from workflows.engine import Engine
from workflows.store.redis_store import Store


@pytest.fixture
def engine(fake_redis, settings):
    return Engine(Store(fake_redis, lock_wait=1.0), settings)


@pytest.fixture
def empty_ws(tmp_path):
    """An empty workspace folder, for the tool tests."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def tool_ctx(empty_ws):
    """A plain ToolContext on :func:`empty_ws` (no sandbox, no Redis)."""
    from workflows.tools import ToolContext

    return ToolContext(workspace=empty_ws)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """A workspace and a home folder (resolved), for the permission rule tests."""
    import os

    base = tmp_path_factory.mktemp("rules")
    ws, home = base / "ws", base / "home"
    ws.mkdir()
    home.mkdir()
    return os.path.realpath(ws), os.path.realpath(home)
