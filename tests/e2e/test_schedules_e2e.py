"""Scheduled sessions end to end: an every-minute schedule, real `mainsail beat` processes (Celery beat
with celery-redbeat), a real worker and the fake Messages API.

One test walks three minutes, because minutes are what a cron counts: with TWO beats running, the
first two runs fire once each (one message, one session per minute, sent by the leader only); then
every beat is down (the leader killed as in a crash, the follower stopped) over the third run's time;
a beat started 15 s after it fires that run once, late, and its session says so.
"""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import UTC, datetime

import pytest

from demo.scripted import Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models import SystemEntry
from workflows.store.schedules import ScheduleStore

pytestmark = pytest.mark.e2e

SENT = "Sending due task"


class Beat:
    """A `mainsail beat` process and its log."""

    def __init__(self, cluster, n: int) -> None:
        self.log = cluster.tmp / f"beat-{n}.log"
        self.proc = subprocess.Popen([MAINSAIL, "beat"], env=cluster.env, stdout=self.log.open("wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        cluster.procs.append(self.proc)
        wait_for(lambda: "beat: Starting" in self.text() or self.proc.poll() is not None, 60, what="beat start")
        assert self.proc.poll() is None, self.text()

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def leads(self) -> bool:
        return "beat: Acquired lock" in self.text()

    def sent(self) -> int:
        return self.text().count(SENT)


def wait_until(ts: float) -> None:
    while time.time() < ts:
        time.sleep(min(1.0, max(0.0, ts - time.time())))


def test_two_beats_fire_each_minute_once_and_a_missed_run_once_late(cluster, workspace):
    cluster.env.update({"MAINSAIL_BEAT_MAX_INTERVAL_SECONDS": "1", "MAINSAIL_BEAT_LOCK_TIMEOUT_SECONDS": "5",
                        "MAINSAIL_BEAT_LATE_SECONDS": "10"})
    store = ScheduleStore(cluster.store.r)
    with FakeMessagesServer(lambda body: Turn(text="Nightly summary done.")) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        beats = [Beat(cluster, 0), Beat(cluster, 1)]
        wait_for(lambda: any(b.leads() for b in beats), 30, what="a beat to take the lock")
        # Not in the last seconds of a minute: the schedule's first run is the next minute's.
        if datetime.now(UTC).second > 50:
            wait_until(time.time() + 12)
        out = cluster.mainsail("schedule", "add", "* * * * *", "--cwd", str(workspace), "--name", "every-minute",
                               "--no-memory", "Summarise calc.py", cwd=workspace)
        assert out.returncode == 0, out.stderr
        sid = out.stdout.strip()

        def runs(n: int):
            return lambda: len(store.runs(sid)) >= n and store.runs(sid)

        # Two minutes with both beats up: each run once.
        first = wait_for(runs(1), 90, interval=0.5, what="the first run")[0]
        wait_until(first.due_at + 60 + 8)  # past the second run's time, and a few beat ticks more
        two = wait_for(runs(2), 30, interval=0.5, what="the second run")
        assert len(two) == 2
        assert [r.due_at for r in reversed(two)] == [first.due_at, first.due_at + 60]
        assert all(r.session_id and not r.late for r in two)
        assert len({r.session_id for r in two}) == 2 and len(cluster.store.session_ids()) == 2
        leader, follower = (beats[0], beats[1]) if beats[0].leads() else (beats[1], beats[0])
        assert not follower.leads() and follower.proc.poll() is None  # it waited for the lock all along
        assert (leader.sent(), follower.sent()) == (2, 0)

        # Every beat down over the third run's time: the leader dies holding its lock, the follower stops.
        leader.proc.send_signal(signal.SIGKILL)
        follower.proc.send_signal(signal.SIGTERM)
        leader.proc.wait(10)
        follower.proc.wait(30)
        missed = first.due_at + 120
        wait_until(missed + 15)
        assert len(store.runs(sid)) == 2  # nothing fired it meanwhile
        late = Beat(cluster, 2)
        third = wait_for(runs(3), 60, interval=0.5, what="the missed run")[-3]
        assert (third.due_at, third.late, third.missed) == (missed, True, 1)
        assert missed + 15 <= third.fired_at < missed + 45  # at the beat's start, not at the next minute
        wait_until(time.time() + 5)  # several ticks: it is not sent again
        assert [r.due_at for r in store.runs(sid) if r.due_at <= missed] == [missed, missed - 60, missed - 120]
        assert late.sent() == len(store.runs(sid)) - 2
        assert len(cluster.store.session_ids()) == len(store.runs(sid))
        due = datetime.fromtimestamp(missed, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        (note,) = [e.content for e in cluster.store.entries(third.session_id)
                   if isinstance(e, SystemEntry) and e.subtype == "info"]
        assert f"scheduled for {due}, fired " in note and note.endswith("after downtime.")
        wait_for(lambda: cluster.store.get_session(third.session_id).state.value == "idle", 60,
                 what="the late session to finish")
        listed = cluster.mainsail("schedule", "list", cwd=workspace)
        assert listed.returncode == 0 and third.session_id[:8] in listed.stdout

