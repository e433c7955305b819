"""Removing sessions on fakeredis: ``rm``, ``gc`` and the retention setting (the contract)."""

from __future__ import annotations

import pytest

from tests.housekeeping_contract import RemovalContract
from workflows.engine import Engine
from workflows.models.options import SessionOptions
from workflows.store.redis_store import Store


class TestRemovalFakeRedis(RemovalContract):
    @pytest.fixture
    def engine(self, fake_redis, settings):
        return Engine(Store(fake_redis, lock_wait=1.0), settings)


def test_the_housekeeper_starts_the_retention_gc_at_most_hourly(fake_redis, settings, ws):
    from tasks.reaper import start_retention

    engine = Engine(Store(fake_redis, lock_wait=1.0), settings)
    assert start_retention(engine, "w1") is None, "no retention set: never"
    settings.retention_days = 30
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", no_memory=True))
    engine.store.r.zadd("mainsail:sessions", {rec.id: 1.0})  # inactive since 1970
    rec.updated_at = 1.0
    engine.store.r.set(f"mainsail:session:{rec.id}", rec.model_dump_json())
    thread = start_retention(engine, "w1")
    thread.join(10)
    assert engine.store.session_ids() == []
    assert start_retention(engine, "w2") is None, "another worker within the hour: not again"
