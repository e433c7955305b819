"""Runs one background command and makes sure it does not outlive the worker that started it.

Usage: ``python -I -S guard.py PARENT_PID FDS -- ARGV...`` (run by path, so it imports nothing of
Mainsail: it starts in milliseconds and holds no Redis client or credentials).

The worker starts this in a new process group; the command (``bash -c``, or ``bwrap`` for a
sandboxed one) runs in the same group, so KillShell's SIGTERM and SIGKILL of the group reach
both. The guard ignores SIGTERM itself, so that it outlives the command and exits with its
status (128 + the signal for a command killed by one). Each half second it checks that its parent
is still the worker: a worker that died (SIGKILL, OOM) cannot kill its shells, so the guard does,
the whole group, SIGTERM first and SIGKILL after a grace period.

``FDS``: descriptors (comma-separated) the command must inherit, such as bwrap's ``--info-fd``;
the guard closes its own copies once the command has them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

POLL_SECONDS = 0.5
GRACE_SECONDS = 2.0


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: guard.py PARENT_PID FDS -- ARGV...", file=sys.stderr)
        return 2
    parent = int(argv[1])
    fds = tuple(int(f) for f in argv[2].split(",") if f)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the command's status is reported once it has ended
    try:
        child = subprocess.Popen(argv[4:], pass_fds=fds, preexec_fn=_default_sigterm)
    except OSError as exc:
        print(f"Cannot start the command: {exc}", file=sys.stderr)
        return 127
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    while True:
        try:
            code = child.wait(timeout=POLL_SECONDS)
            return 128 - code if code < 0 else code
        except subprocess.TimeoutExpired:
            pass
        if os.getppid() != parent:  # the worker is gone: so must the command be
            _stop_group(child)
            return 137


def _default_sigterm() -> None:
    """In the command (after fork, before exec): SIGTERM kills it again (the guard ignores it)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_group(child: subprocess.Popen) -> None:
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    os.killpg(0, signal.SIGKILL)  # the guard too: nobody is left to tell


if __name__ == "__main__":
    sys.exit(main(sys.argv))
