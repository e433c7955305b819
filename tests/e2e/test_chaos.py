"""Chaos, small: a few sessions of Bash commands on two workers while workers are SIGKILLed every few
seconds, ``mainsail watch`` processes are killed, and Redis restarts once on its AOF. Every session must
finish with no entry recorded twice, no command run twice and nothing lost (bench/chaos.py is the long
version: 50 sessions, 3 workers, a kill every 5 s)."""

from __future__ import annotations

import pytest

from bench.chaos import Chaos, ChaosConfig
from bench.chaos_report import pct, render
from tests.e2e.conftest import MAINSAIL

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]


def test_sessions_survive_killed_workers_and_a_redis_restart(tmp_path, capsys):
    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed (pip install -e .)")
    # Long enough for several kills around the Redis restart (no kill from 7 s to 11 s).
    cfg = ChaosConfig(sessions=6, workers=2, turns=8, kill_every=3.0, redis_restart_at=8.0, redis_down=2.0,
                      calm_before=1.0, calm_after=1.0, ramp=4.0, watchers=2, timeout=150.0, seed=7,
                      # Two workers killed every 4 s: a step may well lose its worker three times, which the
                      # default attempt cap (there against steps that kill their worker) would call a failure.
                      worker_env={"MAINSAIL_MAX_ATTEMPTS": "6"})
    report = Chaos(cfg, tmp_path).run()
    with capsys.disabled():
        print("\n" + render(report))
    assert report.ok, render(report)
    assert report.kills >= 2
    assert report.recoveries, "no killed worker held a step: nothing was recovered"
    assert pct(report.recoveries, 90) <= 10.0, render(report)  # seconds, not the 30 s lease
