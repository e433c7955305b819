"""Fixtures shared by the unit tests that run sessions through the engine (fakeredis, inline steps)."""

from __future__ import annotations

import pytest

from workflows.engine import Engine
from workflows.store import Store


@pytest.fixture
def engine(fake_redis, settings):
    return Engine(Store(fake_redis, lock_wait=1.0), settings)
