"""What the client and the warm server say over the socket (standard library only: the client loads it).

The server greets each connection it accepts (:data:`HELLO`): only then does the client send anything.
The request is one frame: 4 bytes of length, then JSON; the client's descriptors (its current directory and
its open standard streams) ride on the frame's first byte (SCM_RIGHTS). Each reply is one JSON line:

* ``{"pid": N}``: the command is process N, and waits for the client's one byte :data:`GO` before it runs
  (a client that gave up closes instead: the command then never runs, and the client runs it itself);
* ``{"exit": N}`` or ``{"signal": N}``: how it ended;
* ``{"refused": "why"}``: the server will not run it (the client then runs the command itself).

Environment values and arguments are the OS's bytes decoded with ``os.fsdecode`` (surrogateescape):
JSON carries the lone surrogates, so bytes that are not UTF-8 arrive unchanged.
"""

from __future__ import annotations

import array
import json
import socket
import struct

#: Changes whenever what is said here changes (it is part of the server's fingerprint).
VERSION = 1
#: At most this many descriptors ride on a request (the directory and three streams).
MAX_FDS = 4
#: The server's first line on a connection it has accepted.
HELLO = {"hello": VERSION}
#: What the client sends once it has the pid: run.
GO = b"g"
#: Seconds the client waits for the greeting, then for the pid, before it gives up and runs the command
#: itself (a server stopped or swamped; the command cannot have started: it waits for GO).
PID_TIMEOUT = 10.0
#: A request larger than this is refused (argv and environment are bounded by the OS's ARG_MAX anyway).
MAX_REQUEST = 8 * 1024 * 1024


class ProtocolError(Exception):
    """The other side said something this side cannot read."""


def send_request(sock: socket.socket, request: dict, fds: list[int]) -> None:
    data = json.dumps(request).encode()
    frame = struct.pack("!I", len(data)) + data
    sent = sock.sendmsg([frame[:1]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    if sent != 1:
        raise ProtocolError("the request's first byte was not sent")
    sock.sendall(frame[1:])


def recv_request(sock: socket.socket, seconds: float) -> tuple[dict, list[int]]:
    """The request and the descriptors that came with it (the caller owns and closes them), all of it within
    ``seconds`` (a client that trickles its bytes cannot hold the server)."""
    import time

    deadline = time.monotonic() + seconds
    fds = array.array("i")
    sock.settimeout(seconds)
    first, ancdata, flags, _ = sock.recvmsg(1, socket.CMSG_LEN(MAX_FDS * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    received = list(fds)
    try:
        if flags & socket.MSG_CTRUNC:
            raise ProtocolError("more descriptors than a request carries")
        if not first:
            raise ProtocolError("the client left before its request")
        head = first + _read_exactly(sock, 3, deadline)
        (length,) = struct.unpack("!I", head)
        if length > MAX_REQUEST:
            raise ProtocolError(f"a request of {length} bytes")
        request = json.loads(_read_exactly(sock, length, deadline))
        if not isinstance(request, dict):
            raise ProtocolError("the request is not an object")
        return request, received
    except BaseException:
        for fd in received:
            _close(fd)
        raise


def send_reply(sock: socket.socket, reply: dict) -> None:
    sock.sendall(json.dumps(reply).encode() + b"\n")


class Replies:
    """The server's reply lines, one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def next(self) -> dict | None:
        """The next reply; None once the server has closed the connection."""
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(4096)
            except InterruptedError:  # (a signal the client forwarded; PEP 475 retries most calls itself)
                continue
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError as exc:
            raise ProtocolError(f"an unreadable reply ({exc})") from None
        if not isinstance(reply, dict):
            raise ProtocolError("a reply that is not an object")
        return reply


def _read_exactly(sock: socket.socket, n: int, deadline: float) -> bytes:
    import time

    data = bytearray()
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ProtocolError("the request did not arrive in time")
        sock.settimeout(left)
        chunk = sock.recv(min(n - len(data), 1 << 20))
        if not chunk:
            raise ProtocolError("the client left in the middle of its request")
        data += chunk
    return bytes(data)


def _close(fd: int) -> None:
    import os

    try:
        os.close(fd)
    except OSError:
        pass
