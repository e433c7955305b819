"""A mutating command starts only while its step is ours and dies before its outcome may be said unknown
(workflows/steps/fence.py, workflows/shells/guard.py); a take-back kills it first or waits for its lease."""

from __future__ import annotations

import logging
import os
import subprocess
import time

import pytest

from tasks import reaper
from tests.unit.test_take_back import DEAD, bash_session, die
from workflows.models import StepStatus, UserEntry
from workflows.shells.groups import group_alive, guard_argv, kill_guards
from workflows.steps.fence import CommandFence, margin
from workflows.steps.run import Heartbeat, owner_token
from workflows.store import keys
from workflows.store import durable
from workflows.store.durable import UNSAFE


def guarded(tmp_path, script: str, tag: str = "t:1:x") -> tuple[subprocess.Popen, int]:
    """``script`` under the guard with a fence; the write end of its deadline pipe."""
    r, w = os.pipe()
    proc = subprocess.Popen(guard_argv(["bash", "-c", script], (), r, tag), cwd=tmp_path, pass_fds=(r,),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    os.close(r)
    return proc, w


def test_a_deadline_that_passes_kills_the_command_before_its_effect(tmp_path):
    proc, w = guarded(tmp_path, "echo started > started; sleep 2; echo effect > effect")
    os.write(w, f"{time.monotonic() + 0.5!r}\n".encode())  # then nothing more: its worker froze
    assert proc.wait(10) == -9
    assert (tmp_path / "started").exists() and not group_alive(proc.pid)
    assert "its worker stopped renewing" in proc.stderr.read().decode()
    assert not (tmp_path / "effect").exists()
    os.close(w)


def test_renewed_deadlines_let_the_command_finish(tmp_path):
    proc, w = guarded(tmp_path, "sleep 1.2; echo effect > effect")
    os.write(w, f"{time.monotonic() + 10!r}\n".encode())  # (however long the guard takes to start)
    for _ in range(40):  # then each deadline a second ahead: without the next one, the command would die
        time.sleep(0.1)
        if proc.poll() is not None:
            break
        os.write(w, f"{time.monotonic() + 1.0!r}\n".encode())
    assert proc.wait(10) == 0 and (tmp_path / "effect").exists()
    os.close(w)


@pytest.mark.parametrize("first", [b"", b"0.5\n"], ids=["refused", "already-past"])
def test_a_command_whose_fence_was_refused_never_starts(tmp_path, first):
    proc, w = guarded(tmp_path, "echo effect > effect")
    if first:
        os.write(w, first)  # a deadline long past (a worker that froze after passing the fence)
    else:
        os.close(w)  # the fence refused: the pipe closes with no deadline
    assert proc.wait(10) == 125
    assert "was not started" in proc.stderr.read().decode()
    assert not (tmp_path / "effect").exists()
    if first:
        os.close(w)


def test_a_worker_that_dies_takes_its_command_with_it(tmp_path):
    proc, w = guarded(tmp_path, "sleep 2; echo effect > effect")
    os.write(w, f"{time.monotonic() + 30!r}\n".encode())
    os.close(w)  # what the kernel does when the worker dies
    assert proc.wait(10) == -9 and not (tmp_path / "effect").exists()


def test_a_reaper_on_the_same_host_kills_the_guard_it_names(tmp_path):
    proc, w = guarded(tmp_path, "sleep 3; echo effect > effect", tag="host:1:abc")
    other, w2 = guarded(tmp_path, "sleep 0.2", tag="host:1:other")
    for fd in (w, w2):
        os.write(fd, f"{time.monotonic() + 30!r}\n".encode())
    assert kill_guards("host:1:nobody") == 0
    assert kill_guards("host:1:abc") == 1
    assert proc.wait(5) == -9 and not group_alive(proc.pid)
    assert other.wait(5) == 0  # another step's command is left alone
    for fd in (w, w2):
        os.close(fd)


def claimed(engine, ws, worker=DEAD):
    rec, tool_step, inline = bash_session(engine, ws)
    owner = owner_token()
    engine.store.workers.register(worker, ["tools"], ttl=30)
    assert engine.claim(rec.id, tool_step.id, owner, worker).step is not None
    return rec, tool_step, owner


def test_the_fence_passes_only_while_the_step_is_ours_and_no_reaper_takes_its_worker_back(engine, ws):
    rec, step, owner = claimed(engine, ws)
    fence = CommandFence(engine, rec.id, step.id, owner, DEAD)
    assert fence.margin == margin(engine.settings.lease_seconds)
    before = time.monotonic()
    deadline = fence.go()
    assert deadline is not None and before + engine.settings.lease_seconds - fence.margin <= deadline
    assert CommandFence(engine, rec.id, step.id, "someone:else:1", DEAD).go() is None
    engine.store.r.set(keys.worker_reaping(DEAD), "reaper")
    assert fence.go() is None
    engine.store.r.delete(keys.worker_reaping(DEAD))
    engine.store.set_deadline(step, time.time() + fence.margin / 2)  # about to lapse: never revived here
    assert fence.go() is None


def test_the_deadline_follows_the_lease_keepers_renewals(engine, ws):
    rec, step, owner = claimed(engine, ws)
    fence = CommandFence(engine, rec.id, step.id, owner, DEAD)
    beat = Heartbeat(engine, step, owner, __import__("threading").Event())
    beat.start()
    try:
        first = fence.go()
        beat._lease.renewed_at = time.monotonic() + 5
        assert fence.deadline() == beat._lease.renewed_at + engine.settings.lease_seconds - fence.margin > first
    finally:
        beat.stop()


def test_a_command_on_another_host_is_taken_back_only_once_its_lease_lapsed(engine, ws, monkeypatch):
    sent = []
    monkeypatch.setattr(reaper, "resend", lambda steps: sent.extend(steps))
    rec, step, _ = bash_session(engine, ws)
    die(engine)
    owner = "elsewhere:42:abcd"
    assert engine.claim(rec.id, step.id, owner, DEAD).step is not None
    engine.store.set_deadline(step, time.time() + 60)
    reaper.reap_dead(engine, "me")
    assert sent == [] and engine.store.get_step(rec.id, step.id).status is StepStatus.RUNNING
    engine.store.set_deadline(step, time.time() - 1)  # its guard killed it before this
    engine.reap(dispatch=sent.extend)
    assert engine.store.get_step(rec.id, step.id).status is StepStatus.DONE
    (result,) = [e for e in engine.store.entries(rec.id) if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert "outcome is unknown" in result.message.blocks()[0].text


def test_a_store_that_cannot_make_claims_durable_says_so_once(engine, caplog, monkeypatch):
    monkeypatch.setattr(durable, "_UNSAFE_LEVEL", logging.WARNING)  # (a mainsail worker's; the CLI's says INFO)
    assert engine.store.durability.wait() == UNSAFE  # fakeredis: no WAITAOF, no AOF
    assert "WAITAOF" in engine.store.durability.why
    assert engine.store.durability.wait() == UNSAFE
    assert sum("WAITAOF" in r.getMessage() for r in caplog.records) == 1
