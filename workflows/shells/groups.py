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
import time

KILL_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.05


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
