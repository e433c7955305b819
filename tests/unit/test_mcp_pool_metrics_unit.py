"""``/metrics`` figures of pooled MCP servers: counters from the workers' tallies, the running gauge summed from
live workers' registrations (an expired one counts nothing); and the pool key that decides sharing."""

from __future__ import annotations

from server.metrics import Collector
from workflows.mcp.pool import REUSED, STARTED, STOPPED, pool_key
from workflows.models.mcp import McpServerConfig
from workflows.store.metrics import Tally


def samples(store) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in Collector(store).collect() for s in family.samples}


def test_mcp_counts_and_the_running_servers_of_live_workers(engine):
    workers = engine.store.workers
    workers.register("w1#a", ["tools"], 30, {"mcp_servers": "2"})
    workers.register("w2#b", ["tools"], 30, {"mcp_servers": "1"})
    workers.register("old#c", ["tools"], 30)  # a worker of before: no figure, counted as none
    workers.register("gone#d", ["tools"], 30, {"mcp_servers": "5"})
    workers.retire("gone#d")  # its registration gone (dead), still listed
    tally = Tally()
    tally.add(STARTED, 4)
    tally.add(REUSED, 6)
    tally.add(STOPPED, reason="idle")
    tally.flush(engine.store.r)
    got = samples(engine.store)
    assert got[("mainsail_mcp_servers_running", ())] == 3, "the expired registration's 5 are not running"
    assert got[("mainsail_mcp_servers_started_total", ())] == 4
    assert got[("mainsail_mcp_servers_reused_total", ())] == 6
    assert got[("mainsail_mcp_servers_stopped_total", (("reason", "idle"),))] == 1


def test_the_pool_key_shares_only_the_same_process():
    srv = McpServerConfig(name="srv", command="node", args=["s.js"], source="project")
    key = pool_key(srv, "/ws", {"A": "1"})
    assert key == pool_key(srv.model_copy(update={"origin": "elsewhere"}), "/ws", {"A": "1"})
    assert key[0] == "/ws"
    for other in (pool_key(srv, "/other", {"A": "1"}), pool_key(srv, "/ws", {"A": "2"}),
                  pool_key(srv.model_copy(update={"args": ["t.js"]}), "/ws", {"A": "1"}),
                  pool_key(srv.model_copy(update={"source": "user"}), "/ws", {"A": "1"}),
                  pool_key(srv.model_copy(update={"name": "srv2"}), "/ws", {"A": "1"})):
        assert other != key
