"""Removing sessions (``rm``, ``gc``, retention), run against fakeredis and a real Redis.

``RemovalContract`` is a plain class: a test module subclasses it as ``Test...`` and
provides an ``engine`` fixture on an empty Redis. Every test compares a SCAN of the whole
database before and after, so "removes exactly that session's keys and files, and not one
byte of anyone else's" is checked key by key.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from demo.scripted import DEMO_FILES, Script, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, scripted_model
from workflows.exceptions import SessionBusy
from workflows.memory.records import make_record
from workflows.models import StepRecord
from workflows.models.options import SessionOptions
from workflows.store import keys
from workflows.store.housekeeping import gc, remove_old, retention_due, retention_gc
from workflows.store.memory import ProjectMemory

SHARED_SETS = (keys.sessions(), keys.leases(), keys.approvals(), keys.awaiting())
DAY = 86400.0


def scan(r) -> dict[str, object]:
    """Every key and its value: a sorted set as a member -> score dict, anything else as its DUMP."""
    out = {}
    for k in r.scan_iter(match="*", count=1000):
        name = k.decode()
        if r.type(k) == b"zset":
            out[name] = {m.decode(): s for m, s in r.zrange(k, 0, -1, withscores=True)}
        else:
            out[name] = r.dump(k)
    return out


def without(snapshot: dict, sid: str) -> dict:
    """What a snapshot should be once session ``sid`` is gone: its keys and its set members removed."""
    out = {}
    for name, value in snapshot.items():
        if name == keys.session(sid) or name.startswith(keys.session(sid) + ":"):
            continue
        if name in SHARED_SETS:
            value = {m: s for m, s in value.items() if m != sid and not m.startswith(sid + "/")}
            if not value:
                continue
        out[name] = value
    return out


def script(tag: str) -> Script:
    """A Glob whose result is over its limit (so it is saved in the workspace), a Read, an answer.
    Tool-use ids are unique per session, as the API's are (the scripted default repeats them)."""
    return Script(turns=[Turn(tool_uses=[ToolUse(id=f"toolu_{tag}_glob", name="Glob", input={"pattern": "*"})]),
                         Turn(tool_uses=[ToolUse(id=f"toolu_{tag}_read", name="Read",
                                                 input={"file_path": "calc.py"})]),
                         Turn(text="done")])


def asking() -> Script:
    return Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={"command": "touch x.txt"})]),
                         Turn(text="done")])


@dataclass
class World:
    """Three sessions of one workspace (``a``, ``fork`` of it, ``b``) and ``c`` elsewhere, waiting for
    an approval with a message queued; every kind of key and shared-set member a session can have."""

    a: str
    fork: str
    b: str
    c: str
    ws: Path
    ws2: Path

    def saved(self, sid_store, sid: str) -> Path:
        from workflows.models import AssistantEntry

        (tid,) = [tu.id for e in sid_store.entries(sid) if isinstance(e, AssistantEntry)
                  for tu in e.message.tool_uses() if tu.name == "Glob"]
        return self.ws / ".mainsail" / "tool-results" / f"{tid}.txt"


def _workspace(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir()
    for fname, content in DEMO_FILES.items():
        (d / fname).write_text(content)
    return d


class RemovalContract:
    @pytest.fixture
    def world(self, engine, tmp_path) -> World:
        st = engine.settings
        st.tool_result_limits = {"Glob": 5}
        st.session_memory_init_tokens, st.session_memory_update_tokens = 100, 100  # notes at the answer
        st.approval_timeout_seconds = 600
        ws, ws2 = _workspace(tmp_path, "ws"), _workspace(tmp_path, "ws2")
        inline = Inline(engine)
        ids = []
        for tag in ("a", "b"):
            rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(script(tag)), permission_mode="bypassPermissions"))
            inline.dispatch(engine.submit(rec.id, "look around"))
            inline.drain()
            ids.append(rec.id)
        a, b = ids
        fork = engine.fork_session(a).id
        c = engine.create_session(str(ws2), SessionOptions(model=scripted_model(asking()), permission_mode="default")).id
        inline.dispatch(engine.submit(c, "make x"))
        inline.drain()
        assert engine.store.get_session(c).state is State.AWAITING_PERMISSION
        assert engine.submit(c, "and then y") == []
        store = engine.store
        for sid in (a, b, c):
            store.save_fork_checkpoint(sid, "ckpt-1", "{}")
            store.publish(sid, {"type": "text", "text": "x"})
            store.set_deadline(StepRecord(id="late-1", session_id=sid, kind="model", epoch=0), time.time() + 60)
        ProjectMemory.for_workspace(store.r, str(ws)).put(make_record("keep-me", "project fact", "project", "b"))
        w = World(a=a, fork=fork, b=b, c=c, ws=ws, ws2=ws2)
        assert w.saved(store, a).exists() and w.saved(store, b).exists()
        assert store.session_memory(a) and store.r.hlen(keys.files_read(a))
        return w

    # ------------------------------------------------------------------ rm

    def test_removing_a_session_deletes_its_keys_and_members_and_nothing_else(self, engine, world):
        r = engine.store.r
        before = scan(r)
        mine = [k for k in before if k.startswith(keys.session(world.a))]
        assert {keys.session(world.a), keys.log(world.a), keys.live(world.a), keys.steps(world.a),
                keys.files_read(world.a), keys.session_memory(world.a),
                keys.fork_checkpoint(world.a, "ckpt-1")} <= set(mine)
        removal = engine.delete_session(world.a)
        assert set(removal.keys) == set(mine)
        assert sorted(removal.members) == sorted([(keys.sessions(), world.a),
                                                  (keys.leases(), keys.lease_member(world.a, "late-1"))])
        assert removal.redis_bytes > 0
        assert scan(r) == without(before, world.a)

    def test_a_saved_result_stays_while_another_session_refers_to_it(self, engine, world):
        store = engine.store
        a_file, b_file = world.saved(store, world.a), world.saved(store, world.b)
        removal = engine.delete_session(world.a)
        assert removal.files == [] and removal.kept_files == 1, "the fork holds a copy of the call"
        assert a_file.exists() and b_file.exists()
        removal = engine.delete_session(world.fork)
        assert [f.path for f in removal.files] == [str(a_file)], "the last session referring to it"
        assert not a_file.exists() and b_file.exists()
        before = scan(store.r)
        removal = engine.delete_session(world.b)
        assert [f.path for f in removal.files] == [str(b_file)] and removal.file_bytes > 0
        assert not b_file.exists()
        assert sorted(os.listdir(world.ws / ".mainsail" / "tool-results")) == [".gitignore"]
        assert scan(store.r) == without(before, world.b)
        assert ProjectMemory.for_workspace(store.r, str(world.ws)).get("keep-me"), "project memory is not a session's"

    def test_a_symlinked_results_folder_is_never_followed(self, engine, world, tmp_path):
        store = engine.store
        outside = tmp_path / "outside"
        (world.ws / ".mainsail").rename(outside)
        (world.ws / ".mainsail").symlink_to(outside)
        engine.delete_session(world.fork)
        removal = engine.delete_session(world.a)
        assert removal.files == [] and all(p.exists() for p in (outside / "tool-results").iterdir())
        assert store.session_ids() and world.a not in store.session_ids()

    def test_a_busy_session_is_refused_unless_forced(self, engine, world):
        r = engine.store.r
        before = scan(r)
        with pytest.raises(SessionBusy, match=rf"Cannot remove session {world.c[:8]}: it is awaiting_permission\. "
                                              rf".*mainsail rm --force {world.c[:8]}"):
            engine.delete_session(world.c)
        assert scan(r) == before
        removal = engine.delete_session(world.c, force=True)
        members = {k for k, _ in removal.members}
        assert members == {keys.sessions(), keys.awaiting(), keys.approvals(), keys.leases()}
        assert keys.inbox(world.c) in removal.keys
        assert scan(r) == without(before, world.c)

    # ------------------------------------------------------------------ gc

    def _age(self, engine, sid: str, days: float) -> None:
        """Make ``sid`` look inactive for ``days`` (its record and its score in the sessions set)."""
        rec = engine.store.get_session(sid)
        rec.updated_at = time.time() - days * DAY
        engine.store.r.set(keys.session(sid), rec.model_dump_json())
        engine.store.r.zadd(keys.sessions(), {sid: rec.updated_at})

    def test_gc_removes_only_idle_sessions_older_than_the_age(self, engine, world):
        for sid in (world.a, world.fork, world.c):
            self._age(engine, sid, 40)
        r = engine.store.r
        before = scan(r)
        dry = remove_old(engine, 30 * DAY, dry_run=True)
        assert sorted(x.sid for x in dry.removed) == sorted([world.a, world.fork])
        assert [(rec.id, why) for rec, why in dry.skipped] == [(world.c, "it is awaiting_permission")]
        assert scan(r) == before, "a dry run changes nothing"
        report = remove_old(engine, 30 * DAY)
        assert sorted(x.sid for x in report.removed) == sorted([world.a, world.fork])
        assert scan(r) == without(without(before, world.a), world.fork)
        assert not world.saved(engine.store, world.b).parent.joinpath("gone").exists()
        assert world.saved(engine.store, world.b).exists()

    def test_gc_can_take_sessions_nobody_answered_and_never_a_busy_one(self, engine, world):
        self._age(engine, world.c, 40)
        self._age(engine, world.b, 40)
        rec = engine.store.get_session(world.b)
        rec.memory_step = "still-running"  # a memory fork runs: busy although idle
        engine.store.r.set(keys.session(world.b), rec.model_dump_json())
        report = remove_old(engine, 30 * DAY, states=("idle", "awaiting_permission"))
        assert [x.sid for x in report.removed] == [world.c]
        assert [(x.id, why) for x, why in report.skipped] == [(world.b, "it is saving memory (a background fork runs)")]
        assert world.b in engine.store.session_ids()

    def test_gc_rechecks_under_the_lock_a_session_active_since_it_was_listed(self, engine, world):
        self._age(engine, world.b, 40)
        seen = []

        def remove(sid, check):
            engine.store.get_session(sid)
            self._age(engine, sid, 0)  # it was used between the listing and the removal
            seen.append(sid)
            return engine.delete_session(sid, force=True, check=check)

        report = gc(engine.store, 30 * DAY, remove=remove)
        assert seen == [world.b] and report.removed == [] and world.b in engine.store.session_ids()

    def test_gc_forgets_old_finished_steps_of_the_sessions_it_keeps(self, engine, world):
        store = engine.store
        old = [s for s in store.steps(world.b) if s.finished][:2]
        for s in old:
            s.updated_at = time.time() - 40 * DAY
            store.r.hset(keys.steps(world.b), s.id, s.model_dump_json())
        n = len(store.steps(world.b))
        log = store.log_length(world.b)
        report = remove_old(engine, 30 * DAY)
        assert report.removed == []
        assert [(p.sid, sorted(p.step_ids)) for p in report.pruned] == [(world.b, sorted(s.id for s in old))]
        assert len(store.steps(world.b)) == n - 2 and store.log_length(world.b) == log

    def test_retention_runs_at_most_once_an_hour_across_workers(self, engine, world):
        engine.settings.retention_days = 30
        assert retention_due(engine.store, "w1") and not retention_due(engine.store, "w2")
        assert 3500 < engine.store.r.ttl(keys.retention_lock()) <= 3600
        self._age(engine, world.b, 31)
        report = retention_gc(engine)
        assert [x.sid for x in report.removed] == [world.b]
        engine.settings.retention_days = None
        assert retention_gc(engine) is None
