"""The Store contract on fakeredis (with Lua, for redis-py's lock scripts)."""

from __future__ import annotations

import pytest

from tests.store_contract import StoreContract
from workflows.store.redis_store import Store


class TestStoreFakeRedis(StoreContract):
    @pytest.fixture
    def store(self, fake_redis):
        return Store(fake_redis, lock_timeout=10.0, lock_wait=1.0)
