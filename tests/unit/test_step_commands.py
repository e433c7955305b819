"""What an agent step costs in Redis commands, and the fences that let it cost so few (fakeredis).

Issue 15 aims at 25 commands per agent step. Each saving below keeps the step protocol's promise
(exactly-once recording): a commit fenced on a running step reads no step (the revision covers it,
since only a commit changes a running step), the record is swapped in with SET ... GET and put back
when the commit is refused, a claim brings the transcript delta in the same snapshot as the record,
a chained step takes over its predecessor's hold in one HSET, the ``sessions`` listing is touched
only when a session comes to rest or every few seconds, and one script renews every lease a
process holds.
"""

from __future__ import annotations

import time

from demo.scripted import Script, ToolUse, Turn
from tests.inline import scripted_model
from workflows.commit.committer import LIST_SECONDS
from workflows.models import ResultEntry, StepKind, SystemEntry
from workflows.models.options import SessionOptions
from workflows.steps.run import owner_token, run_one
from workflows.store import keys
from workflows.store.fenced import Recorder, coalesced
from workflows.store.redis_store import stream_entries


def _session(engine, ws, turns):
    return engine.create_session(str(ws), SessionOptions(model=scripted_model(Script(turns=turns)), permission_mode="bypassPermissions", no_memory=True))


def _read_loop(engine, ws, n=2):
    (ws / "a.txt").write_text("a\n")
    read = ToolUse(name="Read", input={"file_path": str(ws / "a.txt")})
    return _session(engine, ws, [Turn(tool_uses=[read]) for _ in range(n)] + [Turn(text="done")])


class Counting:
    """Counts the script calls and plain reads of a store's client (fakeredis has no commandstats)."""

    def __init__(self, monkeypatch, store) -> None:
        self.calls: list[str] = []
        for name in ("_commit", "_claim", "_heartbeat"):
            script = getattr(store.scripts, name)
            monkeypatch.setattr(store.scripts, name, self._wrap(name.strip("_"), script))
        for name in ("xrange", "get", "hget"):
            monkeypatch.setattr(store.r, name, self._wrap(name, getattr(store.r, name)))

    def _wrap(self, name, fn):
        def call(*a, **kw):
            self.calls.append(name)
            return fn(*a, **kw)
        return call


# ---------------------------------------------------------------------------- the commit script


def test_a_refused_commit_leaves_the_record_byte_for_byte(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    store = engine.store
    before = store.r.get(keys.session(rec.id))
    ops = Recorder()
    ops.set("mainsail:test:a", "1")
    reply = store.commit(rec.id, 7, "t1", ops, record='{"revision":8,"commit":"t1","epoch":0,"id":"x"}')
    assert reply.status == "conflict" and reply.session == before
    assert store.r.get(keys.session(rec.id)) == before  # swapped in with SET GET, put back
    assert store.r.get("mainsail:test:a") is None


def test_a_commit_to_a_removed_session_creates_nothing(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    engine.store.r.delete(keys.session(rec.id))
    reply = engine.store.commit(rec.id, 0, "t1", Recorder(), record='{"revision":1,"commit":"t1","epoch":0}')
    assert reply.status == "gone" and not engine.store.r.exists(keys.session(rec.id))


def test_a_commit_fenced_on_a_running_step_reads_no_step(engine, ws):
    """Only a commit changes a running step, and every commit bumps the revision: the revision check
    covers the step. (Shown by changing the step behind the protocol's back: the commit does not see it.)"""
    rec = _session(engine, ws, [Turn(text="hi")])
    [step] = engine.submit(rec.id, "go")
    owner = owner_token()
    claim = engine.claim(rec.id, step.id, owner)
    store = engine.store
    raw = store.r.hget(keys.steps(rec.id), step.id)
    store.r.hset(keys.steps(rec.id), step.id, raw.replace(b'"status":"running"', b'"status":"done"'))
    rec = claim.session
    rec.revision, rec.commit = rec.revision + 1, "t1"
    landed = store.commit(rec.id, rec.revision - 1, "t1", Recorder(), fence=(step.id, "running", owner),
                          record=rec.model_dump_json())
    assert landed.status == "ok"
    stale = store.commit(rec.id, rec.revision - 1, "t2", Recorder(), fence=(step.id, "running", owner))
    assert stale.status == "conflict" and stale.step is not None  # a refusal reads it, for the re-apply


def test_a_commit_expecting_a_pending_step_is_refused_once_a_claim_took_it(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    [step] = engine.submit(rec.id, "go")
    store = engine.store
    read = store.get_session(rec.id)
    assert engine.claim(rec.id, step.id, owner_token()).step  # a claim changes the step, not the revision
    assert store.get_session(rec.id).revision == read.revision
    reply = store.commit(rec.id, read.revision, "t9", Recorder(), fence=(step.id, "pending", ""))
    assert reply.status == "fenced" and b'"status":"running"' in reply.step


def test_a_running_step_whose_lease_expired_is_taken_over_only_through_a_commit(engine, ws):
    """The claim script never changes a running step: a take-over bumps the revision, so the first
    owner's commit, fenced on the running step without reading it, is refused."""
    rec = _session(engine, ws, [Turn(text="hi")])
    [step] = engine.submit(rec.id, "go")
    first = owner_token()
    claim = engine.claim(rec.id, step.id, first)
    engine.store.r.zadd(keys.leases(), {keys.lease_member(rec.id, step.id): time.time() - 1})  # expired
    second = engine.claim(rec.id, step.id, owner_token())
    assert second.step is not None and second.step.attempt == 2
    assert engine.store.get_session(rec.id).revision == claim.session.revision + 1
    late = engine.store.commit(rec.id, claim.session.revision, "late", Recorder(), fence=(step.id, "running", first))
    assert late.status == "conflict"


def test_a_running_step_of_a_live_worker_is_never_claimed_again_even_past_its_lease(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    [step] = engine.submit(rec.id, "go")
    engine.store.workers.register("w#1", ["model"], ttl=30)
    owner = owner_token()
    assert engine.claim(rec.id, step.id, owner, worker="w#1").step.worker == "w#1"
    engine.store.r.zadd(keys.leases(), {keys.lease_member(rec.id, step.id): time.time() - 1})  # expired
    assert engine.claim(rec.id, step.id, owner_token(), worker="w#2").step is None  # its model call is alive
    now = time.time()
    reply = engine.store.claim_step(rec.id, step.id, owner_token(), now, now + 30, 3, "w#2")
    assert reply.status == "busy"  # decided by the claim script itself, in one round trip
    assert engine.store.get_step(rec.id, step.id).owner == owner
    engine.store.workers.retire("w#1")  # now its worker is gone: the step may run again
    assert engine.claim(rec.id, step.id, owner_token(), worker="w#2").step.attempt == 2


# ---------------------------------------------------------------------------- writes folded together


def test_hsets_of_one_hash_fold_into_one_command_unless_something_touches_it_between():
    ops = Recorder()
    ops.hset("h", "a", "1")
    ops.zadd("z", {"m": 1})
    ops.hset("h", "b", "2")
    ops.hset("other", "c", "3")
    assert coalesced(ops.ops) == [("HSET", "h", "a", "1", "b", "2"), ("ZADD", "z", 1, "m"), ("HSET", "other", "c", "3")]
    ops = Recorder()
    ops.hset("h", "a", "1")
    ops.hdel("h", "a")
    ops.hset("h", "a", "2")
    assert len(coalesced(ops.ops)) == 3  # an HDEL between: order kept


def test_a_commits_entries_are_one_stream_entry_and_a_result_ends_one(engine, ws):
    rec = _session(engine, ws, [Turn(text="hi")])
    store = engine.store
    sid = rec.id
    entries = [SystemEntry(sessionId=sid, content="a"), SystemEntry(sessionId=sid, content="b"),
               ResultEntry(sessionId=sid, subtype="success", result="r"), SystemEntry(sessionId=sid, content="c")]
    ops = Recorder()
    store.append(sid, entries, ops, together=True)
    assert [op[0] for op in ops.ops] == ["XADD", "XADD"]
    before = store.log_length(sid)
    store.commit(sid, 0, "t", ops)
    rows = store.r.xrange(keys.log(sid))[before:]
    assert [len(stream_entries(f)) for _, f in rows] == [3, 1]
    got = store.read_log(sid)[-4:]
    assert [getattr(e, "content", None) or e.result for _, e in got] == ["a", "b", "r", "c"]
    assert got[0][0] == got[2][0] != got[3][0]


def test_a_turns_steps_list_the_session_only_when_it_comes_to_rest(engine, ws):
    rec = _read_loop(engine, ws, 2)
    store = engine.store
    [step] = engine.submit(rec.id, "read")
    listed = store.r.zscore(keys.sessions(), rec.id)
    sent: list = []
    result, claimed = run_one(engine, rec.id, step.id, sent.extend, worker="w1", keep=lambda s: True)
    while claimed is not None:
        assert store.r.zscore(keys.sessions(), rec.id) == listed  # mid-turn: the listing is not touched
        result, claimed = run_one(engine, rec.id, claimed[0].id, sent.extend, worker="w1", keep=lambda s: True,
                                  claimed=claimed)
    final = store.get_session(rec.id)
    assert str(final.state.value) == "idle" and store.r.zscore(keys.sessions(), rec.id) == final.listed_at > listed


def test_a_long_turn_lists_the_session_every_few_seconds(engine, ws, monkeypatch):
    rec = _read_loop(engine, ws, 1)
    [step] = engine.submit(rec.id, "read")
    listed = engine.store.r.zscore(keys.sessions(), rec.id)
    later = time.time() + LIST_SECONDS + 1
    monkeypatch.setattr(time, "time", lambda: later)
    run_one(engine, rec.id, step.id, [].extend)
    assert listed < later - LIST_SECONDS and engine.store.r.zscore(keys.sessions(), rec.id) == later


# ---------------------------------------------------------------------------- the transcript a step reads


def test_a_claimed_model_step_reads_the_transcript_in_its_claim(engine, ws, monkeypatch):
    rec = _read_loop(engine, ws, 1)
    store = engine.store
    [step] = engine.submit(rec.id, "read")
    store.cached_entries(rec.id)  # this process read the transcript once ...
    counting = Counting(monkeypatch, store)
    owner = owner_token()
    claim = engine.claim(rec.id, step.id, owner)
    entries = store.cached_entries(rec.id, claim.session.revision)
    assert counting.calls == ["claim"]  # ... then the claim brought what is new, in the same snapshot
    assert entries == store.entries(rec.id)


def test_a_chained_step_reads_nothing_its_own_commit_did_not_write(engine, ws, monkeypatch):
    rec = _read_loop(engine, ws, 2)
    store = engine.store
    [step] = engine.submit(rec.id, "read")
    sent: list = []
    keep = lambda s: True  # noqa: E731
    result, claimed = run_one(engine, rec.id, step.id, sent.extend, worker="w1", keep=keep)  # model -> Read
    counting = Counting(monkeypatch, store)
    result, claimed = run_one(engine, rec.id, claimed[0].id, sent.extend, worker="w1", keep=keep, claimed=claimed)
    assert claimed[0].kind is StepKind.MODEL
    result, claimed = run_one(engine, rec.id, claimed[0].id, sent.extend, worker="w1", keep=keep, claimed=claimed)
    assert "xrange" not in counting.calls and "get" not in counting.calls and "hget" not in counting.calls
    assert counting.calls.count("commit") == 2 and "claim" not in counting.calls
    assert store.cached_entries(rec.id) == store.entries(rec.id)


def test_another_processs_commit_between_is_read_not_missed(engine, ws):
    """A commit this process did not make leaves its cache behind the revision: the next read asks Redis."""
    rec = _read_loop(engine, ws, 1)
    store = engine.store
    [step] = engine.submit(rec.id, "read")
    owner = owner_token()
    claim = engine.claim(rec.id, step.id, owner)
    other = type(store)(store.r)  # another process's store: its commits do not reach this cache
    ops = Recorder()
    read = other.get_session(rec.id)
    read.revision, read.commit = read.revision + 1, "other"
    other.append(rec.id, [SystemEntry(sessionId=rec.id, content="from elsewhere")], ops, together=True)
    assert other.commit(rec.id, claim.session.revision, "other", ops, record=read.model_dump_json()).status == "ok"
    assert store.cached_entries(rec.id, read.revision)[-1].content == "from elsewhere"


# ---------------------------------------------------------------------------- holds and heartbeats


def test_a_chain_keeps_one_held_steps_field_overwritten_at_each_step(engine, ws):
    rec = _read_loop(engine, ws, 2)
    store = engine.store
    [step] = engine.submit(rec.id, "read")
    first = keys.lease_member(rec.id, step.id)
    sent: list = []
    keep = lambda s: True  # noqa: E731
    result, claimed = run_one(engine, rec.id, step.id, sent.extend, worker="w1", keep=keep)
    while claimed is not None:
        raw = store.r.hgetall(keys.worker_steps("w1"))
        assert list(raw) == [first.encode()]  # the task's slot, taken over by each step it runs
        assert store.workers.held("w1") == {keys.lease_member(rec.id, claimed[0].id): claimed[1]}
        result, claimed = run_one(engine, rec.id, claimed[0].id, sent.extend, worker="w1", keep=keep,
                                  claimed=claimed)
    assert store.workers.held("w1") == {} and sent == []


def test_a_finished_step_stays_held_until_its_other_follow_ups_are_sent(engine, ws):
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    rec = _session(engine, ws, [
        Turn(tool_uses=[ToolUse(name="Glob", input={"pattern": "a.txt"}),  # (not quick: run on tool steps)
                        ToolUse(name="Glob", input={"pattern": "b.txt"})]),
        Turn(text="done"),
    ])
    [step] = engine.submit(rec.id, "find both")
    held_when_sent = []
    store = engine.store

    def dispatch(steps):
        held_when_sent.append(dict(store.workers.held("w1")))

    result, claimed = run_one(engine, rec.id, step.id, dispatch, worker="w1", keep=lambda s: True)
    model = keys.lease_member(rec.id, step.id)
    (held,) = held_when_sent
    assert held[model] and held[keys.lease_member(rec.id, claimed[0].id)] == claimed[1]  # both, while sending
    assert store.workers.held("w1") == {keys.lease_member(rec.id, claimed[0].id): claimed[1]}  # then the kept one


def test_one_script_call_renews_every_lease_a_process_holds(engine, ws, monkeypatch):
    rec = _read_loop(engine, ws, 1)
    steps = []
    for _ in range(3):
        r = engine.create_session(str(ws), SessionOptions(model=rec.model, permission_mode="bypassPermissions", no_memory=True))
        [s] = engine.submit(r.id, "go")
        owner = owner_token()
        engine.claim(r.id, s.id, owner)
        steps.append((r.id, s, owner))
    engine.cancel(steps[1][0])  # its step is no longer ours
    store = engine.store
    before = [store.r.zscore(keys.leases(), keys.lease_member(sid, s.id)) for sid, s, _ in steps]
    counting = Counting(monkeypatch, store)
    time.sleep(0.01)
    answers = engine.heartbeat_many([(sid, s.id, owner, True) for sid, s, owner in steps]
                                    + [(steps[0][0], steps[0][1].id, "someone-else", True)])
    assert counting.calls == ["heartbeat"]
    assert answers == [True, False, True, False]
    after = [store.r.zscore(keys.leases(), keys.lease_member(sid, s.id)) for sid, s, _ in steps]
    assert after[0] > before[0] and after[2] > before[2]
    assert engine.heartbeat_many([(steps[0][0], steps[0][1].id, steps[0][2], False)]) == [True]  # check only


def test_the_redis_clients_skip_client_setinfo():
    from tasks import runtime

    for client in (runtime.redis_client("redis://127.0.0.1:1/0"),
                   runtime.redis_client("redis://127.0.0.1:1/0", max_connections=4)):
        kwargs = client.connection_pool.connection_kwargs
        assert kwargs.get("driver_info", "unset") is None or (kwargs.get("lib_name", "unset") is None
                                                              and kwargs.get("lib_version", "unset") is None)


def test_a_tool_output_commit_still_counts_once_when_sent_twice(engine, ws):
    """SET ... GET with the token check: a commit re-sent after a lost reply is recognised as landed."""
    rec = _read_loop(engine, ws, 1)
    [step] = engine.submit(rec.id, "read")
    owner = owner_token()
    engine.claim(rec.id, step.id, owner)
    store = engine.store
    cur = store.get_session(rec.id)
    cur.revision, cur.commit = cur.revision + 1, "tok-1"
    ops = Recorder()
    ops.rpush("mainsail:test:once", "x")
    data = cur.model_dump_json()
    assert store.commit(rec.id, cur.revision - 1, "tok-1", ops, record=data).status == "ok"
    assert store.commit(rec.id, cur.revision - 1, "tok-1", ops, record=data).status == "landed"
    assert store.r.lrange("mainsail:test:once", 0, -1) == [b"x"] and store.get_session(rec.id).commit == "tok-1"


def test_a_calls_live_deltas_set_the_streams_expiry_once_not_per_delta(engine, ws):
    from workflows.steps.model_call import LiveDeltas

    rec = _session(engine, ws, [Turn(text="hi")])
    [step] = engine.submit(rec.id, "go")
    sent = []

    class Recording:
        def publish(self, sid, data, *, expire=True):
            sent.append(expire)
            engine.store.publish(sid, data, expire=expire)

    deltas = LiveDeltas(Recording(), step)
    for text in ("a", "b", "c"):
        deltas.publish(text)
    assert sent == [True, False, False]
    assert engine.store.r.xlen(keys.live(rec.id)) == 3 and 0 < engine.store.r.ttl(keys.live(rec.id))
