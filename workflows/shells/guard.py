"""Runs one command and makes sure it does not outlive the worker that started it, nor its step's claim.

Usage: ``python -I -S guard.py PARENT_PID FDS [fence=FD tag=TAG] -- ARGV...`` (run by path, so it imports
nothing of Mainsail: it starts in milliseconds and holds no Redis client or credentials).

The worker starts this in a new process group; the command (``bash -c``, or ``bwrap`` for a
sandboxed one) runs in the same group, so KillShell's SIGTERM and SIGKILL of the group reach
both. The guard ignores SIGTERM itself, so that it outlives the command and exits with its
status (128 + the signal for a command killed by one). Each half second it checks that its parent
is still the worker: a worker that died (SIGKILL, OOM) cannot kill its shells, so the guard does,
the whole group, SIGTERM first and SIGKILL after a grace period.

``FDS``: descriptors (comma-separated) the command must inherit, such as bwrap's ``--info-fd``;
the guard closes its own copies once the command has them.

``fence=FD`` (a foreground command of a mutating tool step, workflows/steps/fence.py): the read end of a
pipe on which the worker writes deadlines, one a line, as ``time.monotonic()`` values (the clock is the
host's, shared by every process). The command starts only once the first deadline has come and while it
has not passed; it is killed (its whole group, at once) when a deadline passes with no later one written,
or when the pipe closes (the worker died). A worker frozen with SIGSTOP writes nothing, so its command dies
at the deadline, which its step's lease in Redis outlasts by a margin: no reaper records the step's outcome
as unknown while the command can still run. ``tag=TAG`` (the step's owner token) names the guard in its
command line, so a reaper on the same host finds and kills it (workflows/shells/groups.py).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

POLL_SECONDS = 0.5
GRACE_SECONDS = 2.0


#: Exit status when the fence refused to start the command.
NOT_STARTED = 125


def main(argv: list[str]) -> int:
    options = dict(a.split("=", 1) for a in argv[3:argv.index("--")] if "=" in a) if "--" in argv else None
    if len(argv) < 5 or options is None or not all(k in ("fence", "tag") for k in options):
        print("usage: guard.py PARENT_PID FDS [fence=FD tag=TAG] -- ARGV...", file=sys.stderr)
        return 2
    parent = int(argv[1])
    fds = tuple(int(f) for f in argv[2].split(",") if f)
    fence = Fence(int(options["fence"])) if "fence" in options else None
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the command's status is reported once it has ended
    if fence is not None and not fence.go():
        print("Mainsail: the command was not started: its step is no longer this worker's (taken back, "
              "cancelled, or its claim lapsed).", file=sys.stderr)
        return NOT_STARTED
    argv = argv[argv.index("--"):]
    try:
        child = subprocess.Popen(argv[1:], pass_fds=fds, preexec_fn=_default_sigterm)
    except OSError as exc:
        print(f"Cannot start the command: {exc}", file=sys.stderr)
        return 127
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    exited = _exit_fd(child) if fence is not None else None
    while True:
        try:
            code = child.wait(timeout=POLL_SECONDS if fence is None else fence.wait(POLL_SECONDS, exited))
            return 128 - code if code < 0 else code
        except subprocess.TimeoutExpired:
            pass
        if fence is not None and fence.lapsed():  # its claim may be taken back now: the command dies first
            print(f"\nMainsail: the command was killed: {fence.why}.", file=sys.stderr, flush=True)
            os.killpg(0, signal.SIGKILL)
        if os.getppid() != parent:  # the worker is gone: so must the command be
            _stop_group(child)
            return 137


class Fence:
    """The deadlines the worker writes on descriptor ``fd`` (see the module docstring)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.deadline: float | None = None
        self.closed = False
        self.why = ""
        self._buf = b""

    def go(self) -> bool:
        """Wait for the first deadline: True when it came and has not passed."""
        while self.deadline is None and not self.closed:
            self._read(None)
        return not self.closed and time.monotonic() < self.deadline

    def wait(self, most: float, exited: int | None) -> float:
        """Read what comes within ``most`` seconds, until the deadline, or until the command exits (``exited``:
        a pidfd of it, readable then; None: look again within 50 ms); how long the caller may still wait."""
        self._read(max(0.0, min(most if exited is not None else 0.05, self.deadline - time.monotonic())), exited)
        return 0.001

    def lapsed(self) -> bool:
        if self.closed:
            self.why = "its worker is gone"
        elif time.monotonic() >= self.deadline:
            self.why = "its worker stopped renewing its step's claim (frozen or cut off), which may be taken back"
        else:
            return False
        return True

    def _read(self, timeout: float | None, exited: int | None = None) -> None:
        if self.closed:
            time.sleep(timeout or 0)
            return
        ready, _, _ = select.select([self.fd] + ([exited] if exited is not None else []), [], [], timeout)
        if self.fd not in ready:
            return
        chunk = os.read(self.fd, 4096)
        if not chunk:
            self.closed = True
            return
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            try:
                self.deadline = float(line)
            except ValueError:
                self.closed = True  # not the worker speaking: fail closed


def _exit_fd(child: subprocess.Popen) -> int | None:
    """A pidfd of ``child``, readable once it exits (None where the kernel has none: then polled)."""
    try:
        return os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        return None


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
