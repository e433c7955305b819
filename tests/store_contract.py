"""The Store contract, run against every backend (huey's StorageTests pattern).

``StoreContract`` is a plain class (pytest does not collect it by name): a test
module subclasses it as ``Test...`` and provides a ``store`` fixture, a
:class:`workflows.store.redis_store.Store` on an empty Redis (fakeredis or a real server).
"""

from __future__ import annotations

import threading
import time

import pytest

from statemachines import State
from workflows.exceptions import (
    AmbiguousSession,
    LockTimeout,
    SessionNotFound,
    StepNotFound,
)
from workflows.models import (
    AssistantEntry,
    AssistantMessage,
    Message,
    ResultEntry,
    SessionRecord,
    StateEntry,
    StepKind,
    StepRecord,
    StepStatus,
    SystemEntry,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UserEntry,
    entry_json,
    parse_entry,
)
from workflows.store import keys
from workflows.store.redis_store import LIVE_MAXLEN, LIVE_TTL_SECONDS, Store, stream_entries


def _id(stream_id) -> str:
    return stream_id.decode() if isinstance(stream_id, bytes) else stream_id


def make_session(sid: str, **kw) -> SessionRecord:
    kw.setdefault("model", "scripted:demo")
    kw.setdefault("workspace", "/tmp/mainsail-ws")
    return SessionRecord(id=sid, **kw)


def make_step(sid: str, step_id: str = "step-1", **kw) -> StepRecord:
    kw.setdefault("kind", StepKind.MODEL)
    kw.setdefault("epoch", 1)
    return StepRecord(id=step_id, session_id=sid, **kw)


def every_entry_type(sid: str) -> list:
    """One of each transcript entry type, chained by parentUuid."""
    user = UserEntry(sessionId=sid, cwd="/w", gitBranch="main", message=Message(role="user", content="list files"))
    assistant = AssistantEntry(
        sessionId=sid,
        parentUuid=user.uuid,
        step_id="step-1",
        message=AssistantMessage(
            id="msg_1",
            model="scripted:demo",
            stop_reason="tool_use",
            content=[
                TextBlock(text="Let me look."),
                ToolUseBlock(id="toolu_1", name="Bash", input={"command": "ls -la", "timeout": 5000}),
            ],
            usage=Usage(input_tokens=12, output_tokens=7, cache_read_input_tokens=3),
        ),
        cost_usd=0.0015,
        duration_ms=420,
    )
    tool_result = UserEntry(
        sessionId=sid,
        parentUuid=assistant.uuid,
        origin="tool_result",
        display="2 files",
        message=Message(
            role="user",
            content=[ToolResultBlock(tool_use_id="toolu_1", content="a.py\nb.py", is_error=False)],
        ),
    )
    state = StateEntry(
        sessionId=sid, parentUuid=tool_result.uuid, trigger="tools_finished",
        source=State.RUNNING_TOOLS, dest=State.QUERYING,
    )
    system = SystemEntry(sessionId=sid, parentUuid=state.uuid, subtype="warning", content="step retried")
    result = ResultEntry(
        sessionId=sid, parentUuid=system.uuid, subtype="success", result="Two files.", num_turns=2,
        duration_ms=900, duration_api_ms=800, usage=Usage(input_tokens=20, output_tokens=9), total_cost_usd=0.002,
    )
    return [user, assistant, tool_result, state, system, result]


def _id_key(stream_id: str) -> tuple[int, int]:
    ms, seq = stream_id.split("-")
    return int(ms), int(seq)


def append_now(store: Store, sid: str, entries: list) -> None:
    pipe = store.pipeline()
    store.append(sid, entries, pipe)
    pipe.execute()


class StoreContract:
    """Behaviour every Store backend must share. Needs a ``store`` fixture."""

    # ------------------------------------------------------------------ plumbing

    def test_ping(self, store):
        assert store.ping() is None

    # ------------------------------------------------------------------ sessions

    def test_create_and_get_session(self, store):
        rec = make_session("s-create", title="hello", max_turns=5)
        store.create_session(rec)
        got = store.get_session("s-create")
        assert got == rec
        assert got.state is State.IDLE
        assert got.title == "hello"
        assert store.session_ids() == ["s-create"]

    def test_get_missing_session(self, store):
        with pytest.raises(SessionNotFound) as info:
            store.get_session("nope-123")
        assert "nope-123" in str(info.value)

    def test_create_twice_raises_and_keeps_the_first(self, store):
        store.create_session(make_session("dup", title="first"))
        with pytest.raises(ValueError) as info:
            store.create_session(make_session("dup", title="second"))
        assert "dup" in str(info.value)
        assert store.get_session("dup").title == "first"
        assert store.session_ids() == ["dup"]

    def test_save_session_updates_record_and_timestamp(self, store):
        rec = make_session("s-save", updated_at=1.0)
        store.create_session(rec)
        rec.state = State.QUERYING
        rec.epoch = 3
        rec.turns = 2
        before = time.time()
        store.save_session(rec)
        got = store.get_session("s-save")
        assert got.state is State.QUERYING
        assert got.epoch == 3
        assert got.turns == 2
        assert got.updated_at >= before
        assert store.r.zscore(keys.sessions(), "s-save") == pytest.approx(got.updated_at)

    def test_save_session_in_a_pipeline_is_invisible_until_execute(self, store):
        rec = make_session("s-pipe")
        store.create_session(rec)
        rec.state = State.COMPACTING
        pipe = store.pipeline()
        store.save_session(rec, pipe)
        store.append("s-pipe", [SystemEntry(sessionId="s-pipe", content="x")], pipe)
        store.put_step(make_step("s-pipe"), pipe)
        assert store.get_session("s-pipe").state is State.IDLE
        assert store.log_length("s-pipe") == 0
        assert store.steps("s-pipe") == []
        pipe.execute()
        assert store.get_session("s-pipe").state is State.COMPACTING
        assert store.log_length("s-pipe") == 1
        assert [s.id for s in store.steps("s-pipe")] == ["step-1"]

    def test_session_ids_newest_first(self, store):
        store.create_session(make_session("old", updated_at=100.0))
        store.create_session(make_session("mid", updated_at=200.0))
        store.create_session(make_session("new", updated_at=300.0))
        assert store.session_ids() == ["new", "mid", "old"]
        assert store.session_ids(limit=2) == ["new", "mid"]
        # Saving touches updated_at: the saved one becomes the newest.
        store.save_session(store.get_session("old"))
        assert store.session_ids() == ["old", "new", "mid"]

    def test_session_ids_empty(self, store):
        assert store.session_ids() == []

    def test_resolve_session(self, store):
        for sid in ("abc", "abcd", "abd9", "xyz-1"):
            store.create_session(make_session(sid))
        # Exact id wins even when it is also a prefix of another.
        assert store.resolve_session("abc") == "abc"
        assert store.resolve_session("abcd") == "abcd"
        # Unique prefix.
        assert store.resolve_session("x") == "xyz-1"
        assert store.resolve_session("abd") == "abd9"
        assert store.resolve_session("  xyz ") == "xyz-1"

    def test_resolve_session_ambiguous_lists_candidates(self, store):
        for sid in ("abc1", "abc2", "abc3", "zzz"):
            store.create_session(make_session(sid))
        with pytest.raises(AmbiguousSession) as info:
            store.resolve_session("abc")
        msg = str(info.value)
        for sid in ("abc1", "abc2", "abc3"):
            assert sid in msg
        assert "zzz" not in msg
        assert "3" in msg

    def test_resolve_session_unknown(self, store):
        store.create_session(make_session("abc1"))
        with pytest.raises(SessionNotFound) as info:
            store.resolve_session("qq")
        assert "qq" in str(info.value)
        with pytest.raises(SessionNotFound):
            store.resolve_session("   ")
        with pytest.raises(SessionNotFound):
            store.resolve_session("abc1-longer")

    # ------------------------------------------------------------------ transcript

    def test_append_and_read_log_round_trip_every_entry_type(self, store):
        sid = "s-log"
        entries = every_entry_type(sid)
        append_now(store, sid, entries)
        rows = store.read_log(sid)
        assert len(rows) == len(entries)
        ids = [i for i, _ in rows]
        assert ids == sorted(ids, key=_id_key)
        assert len(set(ids)) == len(ids)
        for (_, got), want in zip(rows, entries):
            assert type(got) is type(want)
            assert got == want
            assert got.dump() == want.dump()
        assistant = rows[1][1]
        assert assistant.message.tool_uses()[0].input == {"command": "ls -la", "timeout": 5000}
        assert assistant.parent_uuid == entries[0].uuid
        assert rows[2][1].message.blocks()[0].text == "a.py\nb.py"
        assert rows[3][1].source is State.RUNNING_TOOLS
        assert store.entries(sid) == entries
        assert store.log_length(sid) == len(entries)

    def test_a_commits_entries_share_one_stream_entry_and_a_result_closes_it(self, store):
        sid = "s-together"
        entries = [SystemEntry(sessionId=sid, content="a"), SystemEntry(sessionId=sid, content="b"),
                   ResultEntry(sessionId=sid, subtype="success", result="r"), SystemEntry(sessionId=sid, content="c")]
        pipe = store.pipeline()
        store.append(sid, entries, pipe, together=True)
        pipe.execute()
        assert store.log_length(sid) == 2
        rows = store.read_log(sid)
        assert [e for _, e in rows] == entries
        assert rows[0][0] == rows[1][0] == rows[2][0] != rows[3][0]
        assert [e for _, e in store.read_log(sid, after=rows[2][0])] == entries[3:]  # after a run's result
        got = store.tail({keys.log(sid): "0-0"}, block_ms=100)
        assert [parse_entry(raw) for _, f in got[0][1] for raw in stream_entries(f)] == entries

    def test_read_log_after_is_exclusive(self, store):
        sid = "s-after"
        entries = [SystemEntry(sessionId=sid, content=f"n{i}") for i in range(5)]
        append_now(store, sid, entries)
        rows = store.read_log(sid)
        after = store.read_log(sid, after=rows[1][0])
        assert [e.content for _, e in after] == ["n2", "n3", "n4"]
        assert after[0][0] == rows[2][0]
        assert store.read_log(sid, after=rows[-1][0]) == []
        assert [e.content for _, e in store.read_log(sid, count=2)] == ["n0", "n1"]
        assert [e.content for _, e in store.read_log(sid, after=rows[0][0], count=2)] == ["n1", "n2"]

    def test_read_log_of_unknown_session_is_empty(self, store):
        assert store.read_log("never-written") == []
        assert store.log_length("never-written") == 0

    def test_logs_are_per_session(self, store):
        append_now(store, "s-a", [SystemEntry(sessionId="s-a", content="a")])
        append_now(store, "s-b", [SystemEntry(sessionId="s-b", content="b")])
        assert [e.content for e in store.entries("s-a")] == ["a"]
        assert [e.content for e in store.entries("s-b")] == ["b"]

    def test_append_rejects_a_bad_session_id(self, store):
        pipe = store.pipeline()
        with pytest.raises(ValueError):
            store.append("bad:id", [SystemEntry(sessionId="x", content="x")], pipe)

    def test_log_is_never_trimmed(self, store):
        sid = "s-long"
        n = 3000
        entries = [SystemEntry(sessionId=sid, content=str(i)) for i in range(n)]
        pipe = store.pipeline()
        store.append(sid, entries, pipe)
        pipe.execute()
        assert store.log_length(sid) == n
        rows = store.read_log(sid)
        assert len(rows) == n
        assert [e.content for _, e in rows] == [str(i) for i in range(n)]
        # Past the live stream's cap, appending more still keeps everything.
        append_now(store, sid, [SystemEntry(sessionId=sid, content="last")])
        assert store.log_length(sid) == n + 1
        assert store.read_log(sid)[0][1].content == "0"

    # ------------------------------------------------------------------ live deltas

    def test_publish_is_capped_and_expires(self, store):
        sid = "s-live"
        assert store.last_live_id(sid) == "0-0"
        n = 5000
        for i in range(n):
            store.publish(sid, {"type": "text_delta", "i": i})
        length = store.r.xlen(keys.live(sid))
        assert 0 < length < n
        assert length <= LIVE_MAXLEN + 200  # approximate trimming may keep a node's worth more
        ttl = store.r.ttl(keys.live(sid))
        assert 0 < ttl <= LIVE_TTL_SECONDS
        # The newest delta is kept, with its fields as strings.
        last = store.r.xrevrange(keys.live(sid), count=1)[0]
        assert store.last_live_id(sid) == last[0].decode()
        assert last[1][b"i"] == str(n - 1).encode()
        assert last[1][b"type"] == b"text_delta"
        # The transcript is untouched by deltas.
        assert store.log_length(sid) == 0

    # ------------------------------------------------------------------ tail

    def test_tail_returns_entries_written_between_read_and_tail(self, store):
        sid = "s-tail"
        append_now(store, sid, [SystemEntry(sessionId=sid, content="old")])
        rows = store.read_log(sid)
        last_id = rows[-1][0]
        # Written after the read, before the tail starts: a '$' tail would lose it.
        append_now(store, sid, [SystemEntry(sessionId=sid, content="between")])
        t0 = time.monotonic()
        got = store.tail({keys.log(sid): last_id}, block_ms=2000)
        assert time.monotonic() - t0 < 1.5  # already there: no blocking
        assert len(got) == 1
        key, items = got[0]
        assert key == keys.log(sid)
        assert len(items) == 1
        entry_id, fields = items[0]
        assert _id_key(entry_id) > _id_key(last_id)
        assert parse_entry(fields["entry"]).content == "between"
        assert entry_id == store.read_log(sid)[-1][0]

    def test_tail_blocks_until_another_thread_writes(self, store):
        sid = "s-block"
        append_now(store, sid, [SystemEntry(sessionId=sid, content="first")])
        last_id = store.read_log(sid)[-1][0]

        def writer():
            time.sleep(0.3)
            append_now(store, sid, [SystemEntry(sessionId=sid, content="late")])

        th = threading.Thread(target=writer)
        t0 = time.monotonic()
        th.start()
        try:
            got = store.tail({keys.log(sid): last_id}, block_ms=5000)
        finally:
            th.join(5)
        waited = time.monotonic() - t0
        assert 0.2 <= waited < 4.0
        assert len(got) == 1
        (key, items), = got
        assert key == keys.log(sid)
        assert [f["entry"] for _, f in items]
        assert [parse_entry(f["entry"]).content for _, f in items] == ["late"]

    def test_tail_several_streams(self, store):
        sid = "s-multi"
        store.publish(sid, {"delta": "hel"})
        append_now(store, sid, [SystemEntry(sessionId=sid, content="x")])
        got = dict(store.tail({keys.log(sid): "0-0", keys.live(sid): "0-0"}, block_ms=100))
        assert set(got) == {keys.log(sid), keys.live(sid)}
        assert got[keys.live(sid)][0][1] == {"delta": "hel"}
        assert len(got[keys.log(sid)]) == 1

    def test_tail_times_out_empty(self, store):
        sid = "s-quiet"
        append_now(store, sid, [SystemEntry(sessionId=sid, content="x")])
        last_id = store.read_log(sid)[-1][0]
        t0 = time.monotonic()
        assert store.tail({keys.log(sid): last_id}, block_ms=150) == []
        assert time.monotonic() - t0 >= 0.1

    # ------------------------------------------------------------------ steps

    def test_put_get_steps(self, store):
        sid = "s-steps"
        a = make_step(sid, "step-a", updated_at=0.0)
        b = make_step(sid, "step-b", kind=StepKind.TOOL, tool_use_id="toolu_9", queue="tools")
        store.put_step(a)
        store.put_step(b)
        got = store.get_step(sid, "step-a")
        assert got.id == "step-a"
        assert got.kind is StepKind.MODEL
        assert got.updated_at > 0.0  # put_step stamps it
        assert store.get_step(sid, "step-b").tool_use_id == "toolu_9"
        assert sorted(s.id for s in store.steps(sid)) == ["step-a", "step-b"]
        # Overwrite in place.
        a.status = StepStatus.RUNNING
        a.attempt = 2
        a.owner = "w1"
        store.put_step(a)
        got = store.get_step(sid, "step-a")
        assert (got.status, got.attempt, got.owner) == (StepStatus.RUNNING, 2, "w1")
        assert len(store.steps(sid)) == 2
        assert store.steps("other-session") == []

    def test_missing_step(self, store):
        store.put_step(make_step("s-ns", "step-a"))
        with pytest.raises(StepNotFound) as info:
            store.get_step("s-ns", "step-zz")
        assert "step-zz" in str(info.value)
        assert "s-ns" in str(info.value)
        with pytest.raises(StepNotFound):
            store.get_step("s-other", "step-a")

    # ------------------------------------------------------------------ deadlines

    def test_deadlines(self, store):
        a = make_step("s-dl", "step-a")
        b = make_step("s-dl", "step-b")
        c = make_step("s-dl2", "step-c")
        assert store.deadline(a) is None
        store.set_deadline(a, 100.0)
        store.set_deadline(b, 200.0)
        store.set_deadline(c, 300.0)
        assert store.deadline(a) == 100.0
        assert store.due(50.0) == []
        assert store.due(100.0) == [("s-dl", "step-a")]
        assert store.due(250.0) == [("s-dl", "step-a"), ("s-dl", "step-b")]
        assert store.due(1000.0, limit=1) == [("s-dl", "step-a")]
        assert len(store.due(1000.0)) == 3
        # Moving a deadline.
        store.set_deadline(a, 400.0, only_existing=True)
        assert store.deadline(a) == 400.0
        assert store.due(250.0) == [("s-dl", "step-b")]
        store.clear_deadline(a)
        assert store.deadline(a) is None
        assert ("s-dl", "step-a") not in store.due(1e12)

    def test_only_existing_does_not_create(self, store):
        step = make_step("s-xx", "step-a")
        store.set_deadline(step, 100.0, only_existing=True)
        assert store.deadline(step) is None
        assert store.due(1e12) == []
        assert store.r.zcard(keys.leases()) == 0

    def test_deadline_in_a_pipeline(self, store):
        step = make_step("s-dp", "step-a")
        pipe = store.pipeline()
        store.set_deadline(step, 5.0, pipe)
        assert store.deadline(step) is None
        pipe.execute()
        assert store.deadline(step) == 5.0
        pipe = store.pipeline()
        store.clear_deadline(step, pipe)
        pipe.execute()
        assert store.deadline(step) is None

    # ------------------------------------------------------------------ inbox

    def test_commands_are_replaced_whole_and_read_by_name(self, store):
        from workflows.commands import CommandDefinition

        sid = "s-commands"
        assert store.commands(sid) == {} and store.command(sid, "review") is None
        review = CommandDefinition(name="review", body="Review $ARGUMENTS ✓\n", allowed_tools=["Bash(git diff:*)"])
        store.put_commands(sid, {"review": review, "fe:test": CommandDefinition(name="fe:test", body="t")})
        assert store.command(sid, "review") == review
        assert list(store.commands(sid)) == ["fe:test", "review"]
        store.put_commands(sid, {"fe:test": CommandDefinition(name="fe:test", body="new")})
        assert store.command(sid, "review") is None and store.commands(sid)["fe:test"].body == "new"
        store.put_commands(sid, {})
        assert store.commands(sid) == {} and keys.commands(sid) not in store.session_keys(sid)

    def test_inbox_is_fifo(self, store):
        sid = "s-inbox"
        assert store.pop_inbox(sid) is None
        store.push_inbox(sid, "first")
        pipe = store.pipeline()
        store.push_inbox(sid, "second", pipe)
        store.push_inbox(sid, "thïrd ✓", pipe)
        pipe.execute()
        assert store.inbox(sid) == ["first", "second", "thïrd ✓"]
        assert store.pop_inbox(sid) == "first"
        assert store.pop_inbox(sid) == "second"
        assert store.inbox(sid) == ["thïrd ✓"]
        assert store.pop_inbox(sid) == "thïrd ✓"
        assert store.pop_inbox(sid) is None
        assert store.inbox(sid) == []

    # ------------------------------------------------------------------ files tracker

    def test_files_tracker(self, store):
        t = store.files_tracker("s-files")
        assert t.get("/w/a.py") is None
        mtime = 1712345678.123456789
        t.set("/w/a.py", mtime)
        assert t.get("/w/a.py") == mtime  # exact float round trip
        # Shared by every worker: a new tracker on the same session sees it.
        assert store.files_tracker("s-files").get("/w/a.py") == mtime
        # But not another session's.
        assert store.files_tracker("s-other").get("/w/a.py") is None
        t.set("/w/a.py", 5.0)
        assert t.get("/w/a.py") == 5.0
        assert t.get("/w/b.py") is None

    def test_files_tracker_validates_the_session(self, store):
        with pytest.raises(ValueError):
            store.files_tracker("bad id")

    # ------------------------------------------------------------------ workers

    def test_workers(self, store):
        assert store.live_queues() == set()
        store.register_worker("w1@host", ["model", "tools"], ttl=30, info={"pid": 123})
        store.register_worker("w2@host", ["tools", "tools-ws2"], ttl=30)
        assert store.live_queues() == {"model", "tools", "tools-ws2"}
        assert store.r.hget(keys.worker("w1@host"), "pid") == b"123"
        store.unregister_worker("w1@host")
        assert store.live_queues() == {"tools", "tools-ws2"}
        assert not store.r.exists(keys.worker("w1@host"))
        store.unregister_worker("w2@host")
        assert store.live_queues() == set()

    def test_expired_worker_does_not_count(self, store):
        store.register_worker("stale", ["stale-q"], ttl=-1)
        assert store.live_queues() == set()
        store.register_worker("short", ["short-q"], ttl=0.2)
        store.register_worker("long", ["long-q"], ttl=30)
        assert store.live_queues() == {"short-q", "long-q"}
        time.sleep(0.3)
        assert store.live_queues() == {"long-q"}

    def test_reregistering_refreshes(self, store):
        store.register_worker("w", ["q1"], ttl=-1)
        assert store.live_queues() == set()
        store.register_worker("w", ["q1", "q2"], ttl=30)
        assert store.live_queues() == {"q1", "q2"}

    # ------------------------------------------------------------------ lock

    def test_lock_excludes_another_writer(self, store):
        other = Store(store.r, lock_timeout=10.0, lock_wait=0.2)
        with store.lock("s-lock"):
            t0 = time.monotonic()
            with pytest.raises(LockTimeout) as info:
                with other.lock("s-lock"):
                    pytest.fail("two writers held the same session lock")
            # redis-py retries every 0.1s and gives up before a retry would pass lock_wait.
            assert 0.05 <= time.monotonic() - t0 < 1.0
            msg = str(info.value)
            assert "s-lock" in msg
            assert "0.2s" in msg
            # A different session is not blocked.
            with other.lock("s-free"):
                pass
        # Released: the other writer can take it now.
        entered = False
        with other.lock("s-lock"):
            entered = True
            assert store.r.exists(keys.lock("s-lock"))
        assert entered
        assert not store.r.exists(keys.lock("s-lock"))

    def test_lock_is_released_on_error(self, store):
        with pytest.raises(RuntimeError):
            with store.lock("s-err"):
                raise RuntimeError("boom")
        assert not store.r.exists(keys.lock("s-err"))
        other = Store(store.r, lock_wait=0.2)
        with other.lock("s-err"):
            pass

    def test_lock_that_expired_under_us_does_not_raise(self, store):
        short = Store(store.r, lock_timeout=0.1, lock_wait=0.2)
        with short.lock("s-exp"):
            time.sleep(0.25)
            assert not store.r.exists(keys.lock("s-exp"))
            # Someone else may take it meanwhile; our release must not free theirs.
            other = Store(store.r, lock_timeout=10.0, lock_wait=0.2)
            cm = other.lock("s-exp")
            cm.__enter__()
        assert store.r.exists(keys.lock("s-exp")), "the expired holder released the new holder's lock"
        cm.__exit__(None, None, None)
        assert not store.r.exists(keys.lock("s-exp"))

    def test_lock_validates_the_session(self, store):
        with pytest.raises(ValueError):
            with store.lock("a:b"):
                pass

    # ------------------------------------------------------------------ valid text (workflows/models/valid_text.py)

    def test_text_utf8_cannot_encode_is_stored_repaired_and_noted(self, store):
        sid = "s-surrogate"
        bad = AssistantEntry(sessionId=sid, message=AssistantMessage(content=[
            TextBlock(text="Writing \udc80 now."),
            ToolUseBlock(id="t1", name="Write", input={"file_path": "a.txt", "content": "caf\udc80"}),
            ToolUseBlock(id="t2", name="Bash", input={"command": "echo \ud800"})]))
        append_now(store, sid, [bad])
        (got,) = store.entries(sid)
        assert got.message.text() == "Writing \ufffd now."
        assert [tu.input for tu in got.message.tool_uses()] == [{"file_path": "a.txt", "content": "caf\ufffd"},
                                                              {"command": "echo \ufffd"}]
        assert got.repaired == ["message.content.0.text", "message.content.1.input.content",
                                "message.content.2.input.command"]
        assert got.uuid == bad.uuid
        # The session record and a step record holding such text are stored repaired too.
        rec = make_session(sid, title="t\udc80")
        store.create_session(rec)
        assert store.get_session(sid).title == "t\ufffd"
        rec.title = "u\udcff"
        store.save_session(rec)
        assert store.get_session(sid).title == "u\ufffd"
        step = make_step(sid, error="e\udc80")
        store.put_step(step)
        assert store.get_step(sid, step.id).error == "e\ufffd"

    def test_live_deltas_and_queued_messages_are_stored_repaired(self, store):
        sid = "s-surrogate-live"
        store.publish(sid, {"type": "text", "text": "a\udc80b"})
        got = store.tail({keys.live(sid): "0-0"}, block_ms=100)
        assert got[0][1][0][1]["text"] == "a\ufffdb"
        store.push_inbox(sid, "queued \udc80")
        assert store.inbox(sid) == ["queued \ufffd"]

    # ------------------------------------------------------------------ unreadable entries (workflows/store/entry_read.py)

    def test_an_entry_that_cannot_be_read_is_a_marker_and_the_rest_reads(self, store):
        sid = "s-bad-entry"
        before, after = SystemEntry(sessionId=sid, content="before"), SystemEntry(sessionId=sid, content="after")
        append_now(store, sid, [before])
        bad_ids = [_id(store.r.xadd(keys.log(sid), {"entry": raw})) for raw in (
            b'{"type":"system","sessionId":"s-bad-entry","content":"\xff\xfe"}',  # not UTF-8
            b'{"type":"system","sessionId":',  # not JSON
            b'{"type":"no-such-type","sessionId":"s-bad-entry"}',  # not an entry this version knows
            b'{"type":"system","sessionId":"s-bad-entry","content":"\\udc80"}',  # an escaped lone surrogate
        )]
        # One stream entry of a commit with a bad second part: the first part still reads.
        mixed = _id(store.r.xadd(keys.log(sid), {"entry": entry_json(after), "entry.2": b"[1,"}))
        rows = store.read_log(sid)
        assert [i for i, _ in rows][1:] == [*bad_ids, mixed, mixed]
        assert rows[0][1] == before and rows[5][1] == after
        markers = [e for i, e in rows if e.type == "system" and e.subtype == "unreadable"]
        assert len(markers) == 5
        for marker, where in zip(markers, [*bad_ids, f"{mixed} (part 2)"]):
            assert marker.content.startswith(f"Entry {where} could not be read: "), marker.content
            assert marker.session_id == sid
        assert "\xff" not in markers[0].content and "\ufffd" not in markers[0].content  # the reason, not the bytes
        assert len({m.uuid for m in markers}) == 5
        assert [e.uuid for e in store.entries(sid)] == [e.uuid for _, e in rows]  # the same markers each read
        assert [e.uuid for e in store.cached_entries(sid)] == [e.uuid for _, e in rows]
        # A live reader gets the same: its field values stay text, and the entry reads as its marker.
        got = store.tail({keys.log(sid): "0-0"}, block_ms=100)
        raws = [raw for _, f in got[0][1] for raw in stream_entries(f)]
        assert all(isinstance(raw, str) for raw in raws)

    def test_a_live_delta_that_is_not_utf8_is_read_as_text(self, store):
        sid = "s-bad-delta"
        store.r.xadd(keys.live(sid), {"type": "text", "text": b"a\xffb"})
        got = store.tail({keys.live(sid): "0-0"}, block_ms=100)
        assert got[0][1][0][1] == {"type": "text", "text": "a\ufffdb"}
