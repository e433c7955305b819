"""The Store contract on a real redis-server (the suite's private one)."""

from __future__ import annotations

import socket

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.store_contract import StoreContract
from workflows.exceptions import StoreUnavailable
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration


class TestStoreRealRedis(StoreContract):
    @pytest.fixture
    def store(self, real_redis):
        return Store(real_redis, lock_timeout=10.0, lock_wait=1.0)


def test_ping_unreachable_redis_raises_store_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on the port once the socket is closed.
    client = redis.Redis(
        host="127.0.0.1", port=port, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0)
    )
    with pytest.raises(StoreUnavailable) as info:
        Store(client).ping()
    assert "Could not connect to Redis" in str(info.value)
