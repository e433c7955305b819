"""One bad schedule never takes the others down (issue 26, item 16): a cron that can never fire
('0 0 31 2 *') is refused before anything is saved, through the CLI and the API; a bad record already in
Redis (written straight into it here) is listed marked broken with its reason, skipped and logged by a
real `mainsail beat` while the other schedule fires, and can be removed."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from demo.scripted import Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.e2e.serving import Serve
from tests.fakeapi import FakeMessagesServer
from workflows.schedules import Schedule
from workflows.store import keys
from workflows.store.schedules import ScheduleStore

pytestmark = pytest.mark.e2e

BAD = "0 0 31 2 *"


def write_broken(r, ws) -> str:
    """A record as the old `schedule add` left it after its "Internal error": saved, with an impossible date."""
    sid = "0badbad0-0000-4000-8000-000000000000"
    r.set(keys.schedule(sid), json.dumps({"id": sid, "name": "feb-31", "cron": BAD, "workspace": str(ws),
                                          "prompt": "never", "created_at": time.time() - 60}))
    r.zadd(keys.schedules(), {sid: time.time() - 60})
    return sid


def test_an_impossible_cron_is_refused_and_a_broken_record_takes_nothing_down(cluster, workspace):
    store = ScheduleStore(cluster.store.r)
    # Refused before saving, naming the field; no traceback, no "Internal error".
    out = cluster.mainsail("schedule", "add", BAD, "--cwd", str(workspace), "never", cwd=workspace)
    assert out.returncode == 1 and "Internal error" not in out.stderr, out.stderr
    assert "can never fire" in out.stderr and "day-of-month field '31'" in out.stderr
    assert store.ids() == []

    bad = write_broken(cluster.store.r, workspace)
    # A good schedule whose run was missed while no beat ran: the beat fires it at once when it starts.
    good = store.add(Schedule(name="every-minute", cron="* * * * *", workspace=str(workspace), prompt="Summarise",
                              options={"no_memory": True}, last_fired_at=time.time() - 600))

    listed = cluster.mainsail("schedule", "list", cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert "BROKEN" in rows[bad[:8]] and BAD in rows[bad[:8]] and "every-minute" in rows[good.id[:8]]
    assert f"Schedule {bad[:8]} (feb-31) is stored broken" in listed.stderr and "can never fire" in listed.stderr
    assert f"mainsail schedule rm {bad[:8]}" in listed.stderr
    shown = cluster.mainsail("schedule", "show", bad[:8], cwd=workspace)
    assert shown.returncode == 1 and "is stored broken" in shown.stderr and "Internal error" not in shown.stderr

    with FakeMessagesServer(lambda body: Turn(text="Summary done.")) as model:
        cluster.env.update({"ANTHROPIC_BASE_URL": model.url, "MAINSAIL_BEAT_MAX_INTERVAL_SECONDS": "1"})
        cluster.start_worker()
        log = cluster.tmp / "beat.log"
        beat = subprocess.Popen([MAINSAIL, "beat"], env=cluster.env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                                start_new_session=True)
        cluster.procs.append(beat)
        # The good schedule fires; the broken one is skipped and said to be.
        run = wait_for(lambda: store.runs(good.id), 90, interval=0.2, what="the good schedule's run")[0]
        assert run.session_id and run.late
        assert store.runs(bad) == [] and beat.poll() is None
        text = log.read_text(errors="replace")
        assert f"beat: skipping it: Schedule {bad[:8]} (feb-31) is stored broken" in text, text
        assert "Traceback" not in text

    # Through the API: listed with the reason, refused on add, removable.
    srv = Serve(cluster).start()
    made = cluster.mainsail("token", "create", "--name", "ops", cwd=workspace)
    assert made.returncode == 0, made.stderr
    with srv.client(made.stdout.strip()) as api:
        views = {v["id"]: v for v in api.get("/api/schedules").raise_for_status().json()}
        assert views[good.id]["broken"] is None and views[good.id]["next_run"]
        assert "can never fire" in views[bad]["broken"] and views[bad]["cron"] == BAD
        assert views[bad]["enabled"] is False and views[bad]["next_run"] is None
        refused = api.post("/api/schedules", json={"cron": BAD, "workspace": str(workspace), "prompt": "x"})
        assert refused.status_code == 400 and "day-of-month field '31'" in refused.json()["detail"]
        enable = api.post(f"/api/schedules/{bad}/enable")
        assert enable.status_code == 400 and "is stored broken" in enable.json()["detail"]
        assert api.delete(f"/api/schedules/{bad[:8]}").status_code == 204
        assert [v["id"] for v in api.get("/api/schedules").json()] == [good.id]
    assert "Traceback" not in srv.log()
