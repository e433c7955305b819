"""Supervised worker processes: ``mainsail worker --processes N`` runs N of them and keeps them running.

A model step spends its time waiting on the network, so a worker runs many on threads; but the
CPU part of each (the SDK parsing the stream, building the request, the commit) holds the GIL, so
one process uses one core at most. Several processes, each with its threads, use the box (numbers
and reasons: docs/concurrency.md).

Each child is an ordinary ``mainsail worker --processes 1`` with the same options: it registers
under its own name, so a child that dies is found and its steps taken back like any worker's. The
supervisor restarts a child that exits (after 1 s, doubling up to 30 s while it keeps dying within
its first 30 s), and on SIGTERM or SIGINT passes one SIGTERM to each (Celery's warm shutdown: the
running steps finish), a second signal a SIGQUIT (cold shutdown: their steps are then taken back by
the other workers' reapers), and returns when all have stopped. The children run in their own
process group, so a Ctrl-C reaches them through the supervisor only, once; and on Linux each gets
SIGTERM if the supervisor itself dies.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

RESTART_DELAY = 1.0
MAX_RESTART_DELAY = 30.0
#: A child that ran this long before it exited is restarted after the first delay again.
STABLE_SECONDS = 30.0
POLL_SECONDS = 0.2
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the supervisor dies (Linux; elsewhere nothing)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


@dataclass
class _Slot:
    index: int
    proc: subprocess.Popen | None = None
    started: float = 0.0
    delay: float = RESTART_DELAY
    next_start: float = 0.0


class Supervisor:
    """Runs ``processes`` copies of ``argv`` (see the module docstring)."""

    def __init__(self, argv: list[str], processes: int, env: dict | None = None,
                 say=lambda message: print(message, file=sys.stderr, flush=True)) -> None:
        self.argv = argv
        self.env = env
        self.say = say
        self.slots = [_Slot(i) for i in range(processes)]
        self.signals = 0

    def _start(self, slot: _Slot) -> None:
        slot.proc = subprocess.Popen(self.argv, env=self.env, start_new_session=True,
                                     preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        slot.started = time.monotonic()

    def _on_signal(self, signum, frame) -> None:
        self.signals += 1
        sig = signal.SIGTERM if self.signals == 1 else signal.SIGQUIT
        self.say(f"mainsail worker: {'stopping' if self.signals == 1 else 'stopping now'}: "
                 f"{'the running steps finish first' if self.signals == 1 else 'running steps go to other workers'}")
        for slot in self.slots:
            if slot.proc is not None and slot.proc.poll() is None:
                try:
                    slot.proc.send_signal(sig)
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
            if slot.proc is None:
                continue
            code = slot.proc.poll()
            if code is None:
                alive += 1
                continue
            slot.proc = None
            if self.signals:
                continue
            slot.delay = RESTART_DELAY if now - slot.started >= STABLE_SECONDS else slot.delay
            slot.next_start = now + slot.delay
            self.say(f"mainsail worker: process {slot.index + 1} of {len(self.slots)} exited with status {code}; "
                     f"starting another in {slot.delay:g}s")
            slot.delay = min(slot.delay * 2, MAX_RESTART_DELAY)
        return alive

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.proc is None and now >= slot.next_start:
                self._start(slot)


def child_argv(args: list[str]) -> list[str]:
    """The command line of one supervised ``mainsail worker`` child (this Python, the installed CLI)."""
    return [sys.executable, "-m", "cli", "worker", *args]


__all__ = ["Supervisor", "child_argv"]
