"""Removing sessions on a real redis-server (the suite's private one): the same contract as on
fakeredis, plus what only a real server has (MEMORY USAGE sizes)."""

from __future__ import annotations

import pytest

from tests.housekeeping_contract import RemovalContract
from workflows.engine import Engine
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration


class TestRemovalRealRedis(RemovalContract):
    @pytest.fixture
    def engine(self, real_redis, settings):
        return Engine(Store(real_redis, lock_wait=1.0), settings)


def test_key_sizes_come_from_memory_usage(real_redis):
    real_redis.set("mainsail:session:x", "y" * 1000)
    sizes = Store(real_redis).key_sizes(["mainsail:session:x"])
    assert sizes["mainsail:session:x"] == real_redis.memory_usage("mainsail:session:x") >= 1000
