"""Supervised worker processes: ``mainsail worker --processes N`` runs N of them and keeps them running.

A model step spends its time waiting on the network, so a worker runs many on threads; but the
CPU part of each (the SDK parsing the stream, building the request, the commit) holds the GIL, so
one process uses one core at most. Several processes, each with its threads, use the box (numbers
and reasons: docs/concurrency.md).

Each child is a fork of the supervisor, which imported everything a worker needs before the first
fork (Celery, the step tasks, the SDK for model queues: over a second of CPU, several on a busy box):
a replacement for a child that died is consuming about 1.5 s after the death on a busy 2-core box,
where a fresh interpreter needed 9-17 s. The supervisor opens no connection a child could share (redis-py's
pools start afresh in a forked process) and runs no thread. Each child registers under its own name,
so a child that dies is found and its steps taken back like any worker's. The supervisor starts
another at once when a child is killed by a signal (SIGKILL, the OOM killer: not a start-up that keeps
failing) after ``MIN_RUN_SECONDS``, or exits after ``STABLE_SECONDS``; a child that exits sooner is
restarted after 1 s, doubling up to 30 s while it keeps doing so, and on SIGTERM or SIGINT passes one SIGTERM to each (Celery's warm
shutdown: the running steps finish), a second signal a SIGQUIT (cold shutdown: their steps are then
taken back by the other workers' reapers), and returns when all have stopped. The children run in
their own session, so a Ctrl-C reaches them through the supervisor only, once; and on Linux each gets
SIGTERM if the supervisor itself dies.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable

log = logging.getLogger(__name__)

#: The wait before restarting a child that keeps dying within ``STABLE_SECONDS`` (doubling each time).
RESTART_DELAY = 1.0
MAX_RESTART_DELAY = 30.0
#: A child that ran this long before it exited is restarted at once.
STABLE_SECONDS = 30.0
#: A child killed by a signal after running this long is restarted at once.
MIN_RUN_SECONDS = 1.0
POLL_SECONDS = 0.2
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child: SIGTERM when the supervisor dies (Linux; elsewhere nothing)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


@dataclass
class _Slot:
    index: int
    pid: int | None = None
    started: float = 0.0
    delay: float = 0.0
    next_start: float = 0.0


class Supervisor:
    """Runs ``processes`` forks calling ``work`` (see the module docstring).

    Args:
        work: what a child runs (a worker: blocks until it stops); its return value or ``SystemExit``
            code is the child's exit status.
        processes: how many children.
        say: tells the operator (a child that exited, a stop).
    """

    def __init__(self, work: Callable[[], int | None], processes: int,
                 say=lambda message: print(message, file=sys.stderr, flush=True)) -> None:
        self.work = work
        self.say = say
        self.slots = [_Slot(i) for i in range(processes)]
        self.signals = 0

    def _start(self, slot: _Slot) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()  # what the supervisor imported stays shared with its children (copy-on-write)
        pid = os.fork()
        if pid == 0:
            os._exit(self._child())
        slot.pid = pid
        slot.started = time.monotonic()

    def _child(self) -> int:
        code = 1
        try:
            os.setsid()
            for s in (signal.SIGTERM, signal.SIGINT):
                signal.signal(s, signal.SIG_DFL)
            if sys.platform.startswith("linux"):
                _die_with_parent()
            code = self.work() or 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        return code

    def _on_signal(self, signum, frame) -> None:
        self.signals += 1
        sig = signal.SIGTERM if self.signals == 1 else signal.SIGQUIT
        self.say(f"mainsail worker: {'stopping' if self.signals == 1 else 'stopping now'}: "
                 f"{'the running steps finish first' if self.signals == 1 else 'running steps go to other workers'}")
        for slot in self.slots:
            if slot.pid is not None:
                try:
                    os.kill(slot.pid, sig)
                except ProcessLookupError:
                    pass

    def run(self) -> int:
        """Start the children and supervise them until a signal stops them all. Returns the exit code."""
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            for slot in self.slots:
                self._start(slot)
            while True:
                alive = self._reap()
                if self.signals:
                    if not alive:
                        return 0
                else:
                    self._restart_due()
                time.sleep(POLL_SECONDS)
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)

    def _reap(self) -> int:
        """Note the children that exited; returns how many still run."""
        alive, now = 0, time.monotonic()
        for slot in self.slots:
            if slot.pid is None:
                continue
            try:
                pid, status = os.waitpid(slot.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = slot.pid, 1 << 8
            if pid == 0:
                alive += 1
                continue
            code = os.waitstatus_to_exitcode(status)
            slot.pid = None
            if self.signals:
                continue
            ran = now - slot.started
            killed = code < 0 and ran >= MIN_RUN_SECONDS
            slot.delay = 0.0 if killed or ran >= STABLE_SECONDS else max(slot.delay * 2, RESTART_DELAY)
            slot.delay = min(slot.delay, MAX_RESTART_DELAY)
            slot.next_start = now + slot.delay
            self.say(f"mainsail worker: process {slot.index + 1} of {len(self.slots)} exited with status {code}; "
                     f"starting another {f'in {slot.delay:g}s' if slot.delay else 'now'}")
        return alive

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.pid is None and now >= slot.next_start:
                self._start(slot)


__all__ = ["Supervisor"]
