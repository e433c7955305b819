"""Who the warm server lets in: the process that connected, pinned by a pidfd, confined exactly as the
server (confinement.py), with a well-formed request. The key and the code's staleness are the server's
own checks (server.py ``_admit``)."""

from __future__ import annotations

import signal
import socket

from cli.warm import confinement

#: Linux's socket option for a pidfd of the peer (6.5 and later; Python 3.11 has no name for it).
SO_PEERPIDFD = 77


def confined_otherwise(pid: int, pidfd: int) -> str | None:
    """Why client ``pid`` is not confined as this server is now (a command forked now would be as it is).
    What /proc says of ``pid`` is that client's only if the process ``pidfd`` pins is still alive after the
    reading (else the pid may be another process's by now)."""
    try:
        own = confinement.facts("self")
    except OSError as exc:
        return f"this server's confinement cannot be read ({exc})"
    why = confinement.difference(pid, own)
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except OSError:
        return "the process that connected has gone"
    return why


def peer(conn: socket.socket) -> tuple[int, int, int | None]:
    """The connected process's pid and uid (SO_PEERCRED), and a pidfd pinning that very process
    (SO_PEERPIDFD, Linux 6.5); None without it (then no warm start: a pidfd opened later could pin another
    process that took a freed pid)."""
    import struct

    pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
    try:
        return pid, uid, conn.getsockopt(socket.SOL_SOCKET, getattr(socket, "SO_PEERPIDFD", SO_PEERPIDFD))
    except OSError:
        return pid, uid, None


def well_formed(request: dict, fds: list[int]) -> bool:
    """The request has what the server reads, of the types it reads, and the descriptors it says."""
    streams = request.get("streams")
    ignored = request.get("ignored", [])
    return (isinstance(request.get("key"), str) and isinstance(request.get("argv"), list)
            and all(isinstance(a, str) for a in request["argv"])
            and isinstance(request.get("env"), dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in request["env"].items())
            and isinstance(request.get("umask"), int) and isinstance(streams, list) and len(streams) == 3
            and all(isinstance(s, bool) for s in streams) and len(fds) == 1 + sum(streams)
            and isinstance(ignored, list) and all(type(n) is int and 0 < n < signal.NSIG for n in ignored))
