"""Schedules through the HTTP API of a real `mainsail serve` process (httpx, real Redis, a real worker):
add, list, get, run now, disable and enable, delete, and who may: no token, a read-only token, a token for another
workspace."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from demo.scripted import Turn
from tests.conftest import free_port
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e


def token(cluster, cwd, *args) -> str:
    out = cluster.mainsail("token", "create", *args, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture
def api(cluster, workspace):
    port = free_port()
    log = (cluster.tmp / "serve.log").open("wb")
    proc = subprocess.Popen([MAINSAIL, "serve", "--no-worker", "--port", str(port)], env=cluster.env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    cluster.procs.append(proc)
    url = f"http://127.0.0.1:{port}"

    def up():
        try:
            return httpx.get(f"{url}/api/schedules").status_code == 401
        except httpx.HTTPError:
            return proc.poll() is not None
    wait_for(up, 60, interval=0.2, what="mainsail serve")
    assert proc.poll() is None, (cluster.tmp / "serve.log").read_text()
    return url


def test_schedules_through_the_api_with_each_kind_of_token(cluster, workspace, tmp_path, api):
    other = tmp_path / "other"
    other.mkdir()
    writer = {"Authorization": f"Bearer {token(cluster, workspace, '--name', 'alice')}"}
    reader = {"Authorization": f"Bearer {token(cluster, workspace, '--name', 'bob', '--read-only')}"}
    elsewhere = {"Authorization": f"Bearer {token(cluster, workspace, '--name', 'carol', '--workspace', str(other))}"}
    body = {"cron": "0 3 * * *", "workspace": str(workspace), "prompt": "Summarise calc.py", "name": "nightly",
            "options": {"permission_mode": "acceptEdits", "max_turns": 4, "no_memory": True}}
    with httpx.Client(base_url=api, timeout=30) as http, \
            FakeMessagesServer(lambda req: Turn(text="Summary done.")) as model:
        cluster.env["ANTHROPIC_BASE_URL"] = model.url
        cluster.start_worker()
        # Who may.
        assert http.get("/api/schedules").status_code == 401
        assert http.get("/api/schedules", headers={"Authorization": "Bearer mst_wrong"}).status_code == 401
        assert http.post("/api/schedules", json=body, headers=reader).status_code == 403
        refused = http.post("/api/schedules", json=body, headers=elsewhere)
        assert refused.status_code == 403 and "outside them" in refused.json()["detail"]
        # Clear errors.
        bad = http.post("/api/schedules", json={**body, "cron": "0 25 * * *"}, headers=writer)
        assert bad.status_code == 400 and "hour field '25'" in bad.json()["detail"]
        gone = http.post("/api/schedules", json={**body, "workspace": str(tmp_path / "nope")}, headers=writer)
        assert gone.status_code == 400 and "is not an existing directory" in gone.json()["detail"]
        # Add, list, get.
        added = http.post("/api/schedules", json=body, headers=writer)
        assert added.status_code == 201, added.text
        s = added.json()
        assert (s["cron"], s["created_by"], s["options"]["max_turns"]) == ("0 3 * * *", "token:alice", 4)
        assert s["next_run"].endswith("03:00:00Z") and not s["overdue"]
        assert [x["id"] for x in http.get("/api/schedules", headers=reader).json()] == [s["id"]]
        assert http.get("/api/schedules", headers=elsewhere).json() == []
        assert http.get(f"/api/schedules/{s['id'][:8]}", headers=elsewhere).status_code == 404
        assert http.get("/api/schedules/nightly", headers=reader).json()["id"] == s["id"]
        # Run now: a normal session with the schedule's options, which the worker runs to its end.
        assert http.post(f"/api/schedules/{s['id']}/run", headers=reader).status_code == 403
        assert http.post(f"/api/schedules/{s['id']}/run", headers=elsewhere).status_code == 404
        started = http.post(f"/api/schedules/{s['id']}/run", headers=writer)
        assert started.status_code == 202, started.text
        sid = started.json()["session_id"]
        done = wait_for(lambda: (r := http.get(f"/api/sessions/{sid}", headers=reader).json())["state"] == "idle"
                        and r["turns"] == 1 and r, 60, interval=0.3, what="the session to finish")
        assert (done["permission_mode"], done["max_turns"]) == ("acceptEdits", 4)
        runs = http.get(f"/api/schedules/{s['id']}", headers=reader).json()["runs"]
        assert [(r["session_id"], r["manual"]) for r in runs] == [(sid, True)]
        # Disable and enable.
        assert http.post(f"/api/schedules/{s['id']}/disable", headers=reader).status_code == 403
        assert http.post(f"/api/schedules/{s['id']}/disable", headers=elsewhere).status_code == 404
        off = http.post(f"/api/schedules/{s['id']}/disable", headers=writer)
        assert off.status_code == 200 and (off.json()["enabled"], off.json()["next_run"]) == (False, None)
        on = http.post(f"/api/schedules/{s['id'][:8]}/enable", headers=writer).json()
        assert on["enabled"] and on["next_run"]
        # Remove.
        assert http.delete(f"/api/schedules/{s['id']}", headers=reader).status_code == 403
        assert http.delete(f"/api/schedules/{s['id']}", headers=elsewhere).status_code == 404
        assert http.delete(f"/api/schedules/{s['id']}", headers=writer).status_code == 204
        assert http.get("/api/schedules", headers=writer).json() == []
        missing = http.delete(f"/api/schedules/{s['id']}", headers=writer)
        assert missing.status_code == 404 and "No schedule" in missing.json()["detail"]
        assert not cluster.store.r.keys("mainsail-celery:redbeat:[0-9a-f]*")  # the beat's entry went too
