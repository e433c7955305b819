"""Which servers' WAITAOF a durable claim trusts under ``everysec`` (workflows/store/durable.py): not one that
acknowledges before the fsync (Valkey, Redis 7.x: redis/redis#13793), nor one whose version it cannot read;
and a claim wait that is turned off waits for nothing and says so."""

from __future__ import annotations

import fakeredis
import pytest
import redis

from workflows.store.durable import UNSAFE, Durability, early_waitaof


class Info:
    """A client whose ``INFO server`` answers ``fields`` (or is refused, for None)."""

    def __init__(self, fields: dict | None) -> None:
        self.fields = fields

    def info(self, section: str) -> dict:
        assert section == "server"
        if self.fields is None:
            raise redis.ResponseError("NOPERM this user has no permissions to run the 'info' command")
        return self.fields


@pytest.mark.parametrize("fields, flawed", [
    ({"redis_version": "7.2.4", "server_name": "valkey", "valkey_version": "8.1.8"}, "Valkey 8.1.8"),
    ({"redis_version": "7.4.2"}, "Redis 7.4.2"),
    ({"redis_version": "7.2.5"}, "Redis 7.2.5"),
    ({"redis_version": "8.0.0"}, None),
    ({"redis_version": "255.255.255"}, None),
    (None, "A Redis whose INFO is refused (its version unknown)"),
])
def test_only_a_waitaof_that_waits_for_the_fsync_is_trusted(fields, flawed):
    assert early_waitaof(Info(fields)) == flawed


def test_claims_made_durable_can_be_turned_off_and_say_so(caplog):
    client = fakeredis.FakeRedis()
    durability = Durability(client, enabled=False)
    assert "MAINSAIL_DURABLE_CLAIMS is off" in caplog.text
    assert durability.wait() == UNSAFE
    assert client.hget("mainsail:metrics", "durable_waits_total") is None  # (no WAITAOF was sent)
