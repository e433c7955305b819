"""A seccomp filter that stops sandboxed commands from creating unix sockets.

Why: a network namespace cuts TCP/UDP, but a unix socket is reached through
the filesystem, and the filesystem is readable in the sandbox: without this
filter a command could ``connect()`` to ``/var/run/docker.sock`` (root on the
host), to an ssh-agent, or to a Redis unix socket. Claude Code's sandbox does
the same on Linux. ``socketpair()`` (pipes between the command's own
processes) stays allowed: it reaches nothing outside.

The filter is classic BPF, the format ``bwrap --seccomp FD`` reads: a list of
``struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}`` over ``struct
seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}``. System calls of a
foreign ABI (x32, or 32-bit code on a 64-bit kernel) could bypass a check keyed
on the native numbers, so they are checked with their own numbers (i386's
``socketcall`` multiplexer cannot be inspected and is refused), and any other
ABI is refused outright. io_uring is refused too: its IORING_OP_SOCKET creates
a socket without calling socket().
"""

from __future__ import annotations

import errno
import platform
import socket
import struct

__all__ = ["unix_socket_filter"]

# BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_DENY = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO: the call fails with "Operation not permitted"

_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # arg0's low 32 bits (both supported arches are little-endian)
_X32_BIT = 0x40000000

# arch name -> (native AUDIT_ARCH, socket nr, [(compat AUDIT_ARCH, socket nr, socketcall nr or None)])
_ARCHES: dict[str, tuple[int, int, list[tuple[int, int, int | None]]]] = {
    "x86_64": (0xC000003E, 41, [(0x40000003, 359, 102)]),  # compat: i386
    "aarch64": (0xC00000B7, 198, [(0x40000028, 281, None)]),  # compat: 32-bit ARM EABI
}


class _Program:
    """A tiny assembler: instructions with symbolic jump targets, resolved on :meth:`code`."""

    def __init__(self) -> None:
        self.ops: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.ops)

    def op(self, code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.ops.append((code, jt, jf, k))

    def code(self) -> bytes:
        out = []
        for i, (code, jt, jf, k) in enumerate(self.ops):
            rel = [self.labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)]
            out.append(struct.pack("=HBBI", code, rel[0], rel[1], k))
        return b"".join(out)


#: io_uring_setup, io_uring_enter, io_uring_register: the same numbers in every ABI here. io_uring's
#: IORING_OP_SOCKET makes an AF_UNIX socket without the socket() call this filter checks (Docker's default
#: profile refuses io_uring too); without a ring there is no such operation.
_IO_URING = (425, 426, 427)


def _check_socket(prog: _Program, socket_nr: int, socketcall_nr: int | None) -> None:
    """With the syscall number loaded: refuse socket(AF_UNIX, ...), socketcall() and io_uring; allow the rest."""
    for nr in _IO_URING:
        prog.op(_JEQ_K, nr, "deny", 0)
    if socketcall_nr is not None:
        prog.op(_JEQ_K, socketcall_nr, "deny", 0)
    prog.op(_JEQ_K, socket_nr, 0, "allow")
    prog.op(_LD_W_ABS, _OFF_ARG0)
    prog.op(_JEQ_K, socket.AF_UNIX, "deny", "allow")


def unix_socket_filter(machine: str | None = None) -> bytes | None:
    """The BPF program for ``bwrap --seccomp``, or None on an architecture this module does not know.

    Args:
        machine: ``platform.machine()`` by default; a parameter for tests.
    """
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    native, socket_nr, compat = arch
    prog = _Program()
    prog.op(_LD_W_ABS, _OFF_ARCH)
    prog.op(_JEQ_K, native, "native", 0)
    for n, (audit_arch, _nr, _call) in enumerate(compat):
        prog.op(_JEQ_K, audit_arch, f"compat{n}", 0)
    prog.op(_RET_K, _DENY)  # an ABI we do not know how to check
    prog.label("native")
    prog.op(_LD_W_ABS, _OFF_NR)
    if native == _ARCHES["x86_64"][0]:
        prog.op(_JGE_K, _X32_BIT, "deny", 0)  # the x32 ABI shares the arch value; its numbers have this bit
    _check_socket(prog, socket_nr, None)
    for n, (_arch, nr, call) in enumerate(compat):
        prog.label(f"compat{n}")
        prog.op(_LD_W_ABS, _OFF_NR)
        _check_socket(prog, nr, call)
    prog.label("allow")
    prog.op(_RET_K, _ALLOW)
    prog.label("deny")
    prog.op(_RET_K, _DENY)
    return prog.code()
