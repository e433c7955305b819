"""Process groups: how every command Mainsail starts is stopped, the whole group at once.

A command starts in a process group of its own (``start_new_session=True``: its pid is the group's
id), so killing the group reaches what it started in the background too (``cmd &``, a server's
workers). With the sandbox on, the group's leader is bwrap, whose death ends the sandbox's whole PID
namespace.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: The small program a command runs under (workflows/shells/guard.py), run by path.
GUARD = Path(__file__).with_name("guard.py")

KILL_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.05


def guard_argv(argv: list[str], pass_fds: tuple[int, ...], fence_fd: int | None = None, tag: str = "") -> list[str]:
    """The command line that runs ``argv`` under the guard, for this process (see workflows/shells/guard.py)."""
    options = [f"fence={fence_fd}", f"tag={tag}"] if fence_fd is not None else []
    return [sys.executable or "python3", "-I", "-S", str(GUARD), str(os.getpid()), ",".join(map(str, pass_fds)),
            *options, "--", *argv]


def kill_guards(tag: str) -> int:
    """SIGKILL the process group of every guard on this host whose command line carries ``tag=TAG`` (a step's
    owner token), and wait until the groups are gone. Returns how many there were.

    The guard is found by its command line, read through a pidfd that holds the process: a pid reused
    between the read and the kill cannot be hit. Its group dies whole (with the sandbox, bwrap's PID
    namespace with it).
    """
    needle = f"\0tag={tag}\0".encode()
    killed = []
    for pid in _pids():
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if needle not in b"\0" + fh.read():
                    continue
            # Stopped through the pidfd (exactly this process), it cannot exit and free its pid before the
            # group's kill below, which goes by number: the guard leads its group (start_new_session).
            signal.pidfd_send_signal(fd, signal.SIGSTOP)
            os.killpg(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            continue
        finally:
            os.close(fd)
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while killed and time.monotonic() < deadline and any(group_alive(p) for p in killed):
        time.sleep(POLL_SECONDS)
    return len(killed)


def _pids() -> list[int]:
    try:
        return [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return []


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (zombies awaiting a reaper don't count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc/self"):
        return True
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the ")" of the command: state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def kill_process_group(proc: subprocess.Popen, grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM ``proc``'s whole process group, then SIGKILL whatever is left after ``grace`` s.

    ``proc`` must have been started with ``start_new_session=True`` (its pid is the pgid).
    The shell itself is reaped. Safe to call on a process that already exited.
    """
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()  # reap the shell so it does not keep the group alive as a zombie
        if proc.returncode is not None and not group_alive(pgid):
            break
        time.sleep(POLL_SECONDS)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass
