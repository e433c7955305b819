"""``mainsail sessions`` (and ``pending`` with nothing waiting) on the lean path (cli/lean_read.py: the standard library's Redis client, records as
stored JSON) prints what the full path prints, byte for byte, stdout and stderr and exit code; and it leaves
to the full path every case it does not take (a working session's note, a variable in another case, a team
server), never guessing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from statemachines import State
from workflows.models import SessionRecord, StepKind, StepRecord, StepStatus
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration

#: The command, then the modules it loaded (to PROBE_OUT).
PROBE = ("import json, os, sys\n"
         "sys.argv = ['mainsail', *sys.argv[2:]]\n"
         "try:\n"
         "    from cli.main import main\n"
         "    main()\n"
         "finally:\n"
         "    json.dump(sorted(sys.modules), open(os.environ['PROBE_OUT'], 'w'))\n")


@pytest.fixture
def env(redis_server, real_redis, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
    env.update(MAINSAIL_REDIS_URL=redis_server.url, MAINSAIL_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path),
               PROBE_OUT=str(tmp_path / "modules.json"))
    return env


def run(args: list[str], env: dict, cwd) -> tuple[int, str, str, set[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, "--", *args], env=env, capture_output=True, text=True,
                          timeout=60, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr, set(json.loads(open(env["PROBE_OUT"]).read()))


def both(args: list[str], env: dict, cwd) -> tuple[tuple, set[str]]:
    """(exit code, stdout, stderr) of the lean path, checked equal to the full path's; the lean run's modules."""
    code, out, err, modules = run(args, env, cwd)
    full = run(args, {**env, "MAINSAIL_LEAN_READ": "0"}, cwd)
    assert (code, out, err) == full[:3], args
    assert "Traceback" not in err
    return (code, out, err), modules


def lean(modules: set[str]) -> bool:
    return not {"redis", "pydantic", "pydantic_settings", "workflows.models"} & modules


DAY = 86400.0
_made = [0]


def record(store: Store, sid: str, ws: str, **fields) -> SessionRecord:
    """A stored record last active days ago (the ACTIVE column then shows a date: the same in both runs), each
    newer than the one before."""
    _made[0] += 1
    rec = SessionRecord(id=sid, workspace=ws, model=fields.pop("model", "claude-sonnet-4-6"), **fields)
    rec.updated_at = time.time() - 30 * DAY + _made[0] * DAY
    store.r.set(f"mainsail:session:{sid}", rec.model_dump_json())
    store.r.zadd("mainsail:sessions", {sid: rec.updated_at})
    return rec


def test_the_table_is_the_full_paths(real_redis, env, tmp_path):
    store = Store(real_redis)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert both(["sessions"], env, tmp_path)[0][1].startswith("No sessions yet")
    record(store, "s-idle", a, title="Fix the parser — ünïcode ✓ and a long title that is cut", turns=3,
           cost_usd=0.0123)
    record(store, "s-unpriced", b, title="", cost_usd=None, model="my-local-model-with-a-long-name")
    record(store, "s-waiting", a, state=State.AWAITING_PERMISSION, title="Asks", children=["s-child"])
    record(store, "s-child", a, parent_session_id="s-waiting", agent_type="Explore", title="child")
    record(store, "s-old", b, title="old")
    store.push_inbox("s-idle", "next, please")
    store.push_inbox("s-idle", "and then this")
    for args in (["sessions"], ["sessions", "--state", "idle"], ["sessions", "--state", "querying"],
                 ["sessions", "--workspace", a], ["sessions", "-n", "2"], ["sessions", "--workspace", str(tmp_path)]):
        (code, out, err), modules = both(args, env, tmp_path)
        assert code == 0 and lean(modules), (args, sorted(m for m in modules if m.startswith(("redis", "pyd"))))
    (code, out, err), _ = both(["sessions"], env, tmp_path)
    assert "s-child" not in out and "s-idle" in out and "$0.0123" in out and "?" in out


def test_the_embedded_redis_is_named_as_the_full_path_names_it(redis_server, real_redis, env, tmp_path):
    (tmp_path / "data" / "redis").mkdir(parents=True)
    (tmp_path / "data" / "redis" / "url").write_text(redis_server.url + "\n")
    del env["MAINSAIL_REDIS_URL"]
    (code, out, err), modules = both(["sessions"], env, tmp_path)
    assert code == 0 and "using the embedded Redis" in err and lean(modules)


def test_a_working_sessions_note_is_the_full_paths(real_redis, env, tmp_path):
    """A working session whose steps wait on a queue no live worker serves gets the note; once a worker serves
    it, none: on both paths alike (the lean one reads the steps and the registry itself)."""
    store = Store(real_redis)
    record(store, "s-working", str(tmp_path), state=State.QUERYING, title="busy", epoch=2)
    for step in (StepRecord(id="st-old", session_id="s-working", kind=StepKind.MODEL, epoch=1, queue="gone"),
                 StepRecord(id="st-1", session_id="s-working", kind=StepKind.TOOL, epoch=2, queue="tools.hostA"),
                 StepRecord(id="st-2", session_id="s-working", kind=StepKind.MEMORY, epoch=1, queue="memory"),
                 StepRecord(id="st-3", session_id="s-working", kind=StepKind.MODEL, epoch=2, queue="model",
                            status=StepStatus.DONE)):
        store.put_step(step)
    (code, out, err), modules = both(["sessions"], env, tmp_path)
    assert "no live worker consumes its queues memory, tools.hostA" in out and lean(modules), out
    store.workers.register("w1", ["memory", "tools.hostA"], ttl=600)
    (code, out, err), modules = both(["sessions"], env, tmp_path)
    assert "no live worker" not in out and lean(modules), out


def test_what_it_does_not_take_goes_to_the_full_path(real_redis, env, tmp_path):
    store = Store(real_redis)
    record(store, "s-working", str(tmp_path), title="done now")
    cases = [{"mainsail_redis_url": env["MAINSAIL_REDIS_URL"]},  # (the settings read names case-blind)
             {"MAINSAIL_REDIS_URL": env["MAINSAIL_REDIS_URL"] + "?socket_timeout=5"},
             {"MAINSAIL_REDIS_URL": "redis://127.0.0.1:1/0"}]  # (nothing there: the full path's error)
    for extra in cases:
        code, out, err, modules = run(["sessions"], {**env, **extra}, tmp_path)
        assert not lean(modules), extra
        assert "Traceback" not in err
    _, modules = both(["sessions", "--tree"], env, tmp_path)  # (--tree reads the family: the full path's)
    assert not lean(modules)


def test_pending_with_nothing_waiting_is_said_on_the_lean_path(real_redis, env, tmp_path):
    (code, out, err), modules = both(["pending"], env, tmp_path)
    assert (code, out) == (0, "No pending permission requests.\n") and lean(modules)
    record(Store(real_redis), "s-asks", str(tmp_path), state=State.AWAITING_PERMISSION, title="asks")
    real_redis.zadd("mainsail:awaiting", {"s-asks": time.time()})
    (code, out, err), modules = both(["pending"], env, tmp_path)  # (a session waits: the full path lists)
    assert code == 0 and not lean(modules)
