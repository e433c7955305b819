"""The background shells' Redis contract (:class:`workflows.shells.ShellStore`), run against fakeredis and
a real redis-server: a test module subclasses :class:`ShellStoreContract` and provides ``r``, a client of
an empty Redis."""

from __future__ import annotations

import pytest

from workflows.shells import ShellStore
from workflows.store import keys

SID, HOST = "sess-1", "worker-a~abc123"


class ShellStoreContract:
    @pytest.fixture
    def store(self, r) -> ShellStore:
        return ShellStore(r)

    @pytest.fixture
    def shell(self, store) -> str:
        shell_id = store.reserve_id(SID)
        store.register(SID, shell_id, {"command": "npm run dev", "worker": "worker-a"}, HOST, ttl=30)
        return shell_id

    def test_a_registered_shell_runs_on_its_host(self, store, shell, r):
        assert len(shell) == 6 and int(shell, 16) >= 0
        info = store.info(SID, shell)
        assert (info["status"], info["host"], info["command"], info["chars"]) == ("running", HOST, "npm run dev", "0")
        assert store.status(SID, shell) == "running"
        assert r.sismember(keys.shell_host(HOST), keys.shell_member(SID, shell))
        assert 0 < r.pttl(keys.shell_host(HOST)) <= 30_000
        assert r.smembers(keys.shells(SID)) == {shell.encode()}

    def test_reads_return_new_output_in_order_once(self, store, shell):
        assert store.append(SID, shell, [("o", 0, "one\n"), ("e", 4, "oops\n"), ("o", 9, "two\n")], 13, [])
        got = store.read(SID, shell)
        assert (got.status, got.stdout, got.stderr, got.dropped) == ("running", "one\ntwo\n", "oops\n", 0)
        assert got.chunks == [("o", "one\n"), ("e", "oops\n"), ("o", "two\n")]
        again = store.read(SID, shell)
        assert (again.stdout, again.stderr, again.dropped) == ("", "", 0)
        store.append(SID, shell, [("o", 13, "three\n")], 19, [])
        assert store.read(SID, shell).stdout == "three\n"

    def test_a_reader_is_told_exactly_what_was_dropped(self, store, shell):
        ids = store.append(SID, shell, [("o", 0, "a" * 10), ("o", 10, "b" * 10)], 20, [])
        store.append(SID, shell, [("o", 30, "c" * 5)], 35, ids)  # the first two chunks trimmed; 10 never stored
        got = store.read(SID, shell)
        assert (got.stdout, got.dropped) == ("c" * 5, 30)
        store.append(SID, shell, [], 50, [])  # 15 more characters read by the host, none stored
        assert store.read(SID, shell).dropped == 15
        assert store.read(SID, shell).dropped == 0

    def test_the_same_call_reading_again_gets_the_same_output(self, store, shell):
        store.append(SID, shell, [("o", 0, "x\n")], 2, [])
        assert store.read(SID, shell, "toolu_1").stdout == "x\n"
        store.append(SID, shell, [("o", 2, "y\n")], 4, [])
        assert store.read(SID, shell, "toolu_1").stdout == "x\ny\n", "a retry re-reads from where it started"
        assert store.read(SID, shell, "toolu_2").stdout == "", "the next call starts after the retry's read"

    def test_a_kill_request_turns_the_end_into_killed(self, store, shell):
        assert store.request_kill(SID, shell, "KillShell", "toolu_9") == "requested"
        assert store.request_kill(SID, shell, "the session was cancelled") == "requested"
        assert store.wanted_stopped(SID, shell) == "KillShell"
        assert store.finish(SID, shell, HOST, "completed", 143) == "killed"
        info = store.info(SID, shell)
        assert (info["status"], info["exit_code"], info["kill"], info["kill_call"]) == ("killed", "143", "KillShell",
                                                                                        "toolu_9")
        assert store.request_kill(SID, shell, "KillShell") == "killed"
        assert store.wanted_stopped(SID, shell) == "it is killed"

    def test_an_ending_shell_leaves_its_host(self, store, shell, r):
        assert store.finish(SID, shell, HOST, "completed", 0) == "completed"
        assert not r.sismember(keys.shell_host(HOST), keys.shell_member(SID, shell))
        assert store.status(SID, shell) == "completed", "a finished shell is not lost"
        assert store.read(SID, shell).exit_code == 0

    def test_a_running_shell_whose_host_lapsed_is_lost_for_good(self, store, shell, r):
        store.append(SID, shell, [("o", 0, "before\n")], 7, [])
        r.delete(keys.shell_host(HOST))
        got = store.read(SID, shell)
        assert (got.status, got.stdout) == ("lost", "before\n")
        store.renew(HOST, [keys.shell_member(SID, shell)], 30)  # the host comes back after an outage
        assert store.status(SID, shell) == "lost"
        assert store.wanted_stopped(SID, shell) == "it is lost"
        assert store.finish(SID, shell, HOST, "completed", 0) == "lost"
        assert store.request_kill(SID, shell, "KillShell") == "lost"

    def test_a_removed_session_is_never_written_again(self, store, shell, r):
        for key in list(r.scan_iter(match=keys.session_subkeys(SID))):
            r.delete(key)
        assert store.append(SID, shell, [("o", 0, "late\n")], 5, []) is None
        assert store.finish(SID, shell, HOST, "completed", 0) is None
        assert store.wanted_stopped(SID, shell) == "its session was removed"
        assert not list(r.scan_iter(match=keys.session_subkeys(SID)))

    def test_stopping_every_running_shell_of_a_session(self, store, shell):
        done = store.reserve_id(SID)
        store.register(SID, done, {"command": "true"}, HOST, ttl=30)
        store.finish(SID, done, HOST, "completed", 0)
        assert store.request_kill_all(SID, "the session ended") == [shell]
        assert store.info(SID, shell)["kill"] == "the session ended"

    @pytest.mark.parametrize("shell_id", ["nope00", "../x", "", "a" * 200])
    def test_unknown_shells(self, store, shell_id):
        assert store.info(SID, shell_id) == {}
        assert store.read(SID, shell_id) is None
        assert store.status(SID, shell_id) is None
        assert store.request_kill(SID, shell_id, "KillShell") is None
