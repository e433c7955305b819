"""The background shells this process runs, and the one thread that looks after them.

A shell's command runs under a guard (:mod:`workflows.shells.guard`) in a process group of its own.
Two threads read its stdout and stderr into an :class:`Output` buffer; the host's thread, every
:data:`TICK_SECONDS`:

- stores what was read in Redis (one script call per shell with new output), keeping the latest
  ``cap`` characters (:class:`~workflows.store.shells.ShellStore`);
- stops a shell someone asked to stop (KillShell on any worker, a cancel, the session's end or
  removal), in a thread of its own (stopping a group takes up to two seconds);
- records a command that ended, with its exit code;
- renews the set of shells it runs, so that readers can tell a live shell from a lost one.

When the process stops cleanly, :meth:`ShellHost.shutdown` stops every shell and records it lost
(nobody can follow it any more). When it dies, its guards stop the commands and its set expires.
"""

from __future__ import annotations

import codecs
import logging
import os
import secrets
import socket
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import IO

from workflows.shells.groups import kill_process_group
from workflows.store import keys
from workflows.store.resilience import RedisError
from workflows.store.shells import ShellStore

log = logging.getLogger(__name__)

TICK_SECONDS = 0.2
#: After the command ended, how long to wait for a child still holding its pipes before recording it.
DRAIN_SECONDS = 1.0


class Output:
    """What a shell printed and Redis does not hold yet: ``(kind, position, text)`` chunks, at most
    ``cap`` characters (the oldest are dropped first; their positions tell readers so)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0  # characters read so far, stored or not
        self._chunks: deque[list] = deque()
        self._pending = 0
        self._lock = threading.Lock()

    def add(self, kind: str, text: str) -> None:
        if not text:
            return
        with self._lock:
            self._chunks.append([kind, self.total, text])
            self.total += len(text)
            self._pending += len(text)
            while self._pending > self.cap:
                first = self._chunks[0]
                cut = min(len(first[2]), self._pending - self.cap)
                first[1] += cut
                first[2] = first[2][cut:]
                self._pending -= cut
                if not first[2]:
                    self._chunks.popleft()

    def take(self) -> tuple[list[tuple[str, int, str]], int]:
        """The pending chunks (adjacent ones of a kind merged) and the output's end position."""
        with self._lock:
            chunks, self._chunks, self._pending = list(self._chunks), deque(), 0
            end = self.total
        merged: list[list] = []
        for kind, at, text in chunks:
            if merged and merged[-1][0] == kind and merged[-1][1] + len(merged[-1][2]) == at:
                merged[-1][2] += text
            else:
                merged.append([kind, at, text])
        return [(k, a, t) for k, a, t in merged], end


def _pump(stream: IO[bytes], kind: str, output: Output) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            output.add(kind, decoder.decode(chunk))
    except (OSError, ValueError):
        pass
    finally:
        output.add(kind, decoder.decode(b"", final=True))


@dataclass
class LiveShell:
    """One shell this process runs."""

    store: ShellStore
    sid: str
    shell_id: str
    proc: subprocess.Popen
    launch: object  # the sandbox Launch: closed once the command is gone
    output: Output
    pumps: list[threading.Thread] = field(default_factory=list)
    stored: deque = field(default_factory=deque)  # (entry id, length) of the chunks Redis holds
    stored_chars: int = 0
    stored_end: int = 0
    ended_at: float | None = None
    stopping: bool = False
    gone: bool = False  # its session was removed: nothing more is written

    @property
    def member(self) -> str:
        return keys.shell_member(self.sid, self.shell_id)

    def flush(self) -> None:
        """Store the output read since the last flush, within the cap."""
        chunks, end = self.output.take()
        if self.gone or (not chunks and end == self.stored_end):
            return
        new = sum(len(t) for _, _, t in chunks)
        drop: list[str] = []
        while self.stored and self.stored_chars + new > self.output.cap:
            entry_id, n = self.stored.popleft()
            drop.append(entry_id)
            self.stored_chars -= n
        ids = self.store.append(self.sid, self.shell_id, chunks, end, drop)
        if ids is None:
            self.gone = True
            return
        for entry_id, (_, _, text) in zip(ids, chunks):
            self.stored.append((entry_id, len(text)))
            self.stored_chars += len(text)
        self.stored_end = end

    def drained(self, now: float) -> bool:
        return all(not p.is_alive() for p in self.pumps) or now - (self.ended_at or now) > DRAIN_SECONDS


class ShellHost:
    """This process's background shells (see the module docstring). One per process: :func:`host`."""

    def __init__(self, name: str, ttl: float = 5.0, renew_every: float = 0.5) -> None:
        self.name = name
        self.ttl = ttl
        self.renew_every = renew_every
        self.shells: dict[str, LiveShell] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._renewed = 0.0
        self._failing = False

    # ------------------------------------------------------------------ starting

    def adopt(self, shell: LiveShell) -> None:
        """Look after ``shell`` from now on (its pumps are started here)."""
        for stream, kind in ((shell.proc.stdout, "o"), (shell.proc.stderr, "e")):
            t = threading.Thread(target=_pump, args=(stream, kind, shell.output), daemon=True,
                                 name=f"mainsail-shell-{shell.shell_id}-{kind}")
            t.start()
            shell.pumps.append(t)
        with self._lock:
            self.shells[shell.member] = shell
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="mainsail-shells", daemon=True)
                self._thread.start()

    def members(self) -> list[str]:
        with self._lock:
            return list(self.shells)

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # the host must outlive any one failure
                log.exception("background shells: a tick failed")
            self._wake.wait(TICK_SECONDS)
            self._wake.clear()

    def tick(self, now: float | None = None) -> None:
        """One round: store output, stop what must stop, record what ended, renew the host set."""
        now = now or time.time()
        with self._lock:
            shells = list(self.shells.values())
        for shell in shells:
            self._look_after(shell, now)
        if shells and time.monotonic() - self._renewed >= self.renew_every:
            self._renew(shells)

    def _look_after(self, shell: LiveShell, now: float) -> None:
        try:
            shell.flush()
            if shell.ended_at is None and not shell.stopping:
                why = "its session was removed" if shell.gone else shell.store.wanted_stopped(shell.sid,
                                                                                             shell.shell_id)
                if why is not None:
                    self._stop_shell(shell, why)
            self._failing = False
        except RedisError as exc:
            if not self._failing:
                log.warning("background shells: Redis refused an update (%s); retrying", exc)
            self._failing = True
        if shell.ended_at is None and shell.proc.poll() is not None:
            shell.ended_at = now
        if shell.ended_at is not None and shell.drained(now):
            self._finish(shell)

    def _stop_shell(self, shell: LiveShell, why: str) -> None:
        shell.stopping = True
        log.info("stopping background shell %s of session %s: %s", shell.shell_id, shell.sid[:8], why)
        threading.Thread(target=_kill, args=(shell,), daemon=True, name=f"mainsail-shell-{shell.shell_id}-kill").start()

    def _finish(self, shell: LiveShell, status: str = "completed") -> None:
        code = shell.proc.returncode
        code = 128 - code if code is not None and code < 0 else code
        try:
            shell.flush()
            if not shell.gone:
                shell.store.finish(shell.sid, shell.shell_id, self.name, status, code)
            else:
                shell.store.forget_shell(self.name, shell.member)
        except RedisError as exc:  # its set entry lapses; readers then find it lost, with its output so far
            log.warning("background shell %s ended, but Redis refused the record (%s)", shell.shell_id, exc)
        with self._lock:
            self.shells.pop(shell.member, None)
        threading.Thread(target=_close, args=(shell,), daemon=True).start()

    def _renew(self, shells: list[LiveShell]) -> None:
        by_client: dict[int, tuple[ShellStore, list[str]]] = {}
        for shell in shells:
            by_client.setdefault(shell.store.client_id, (shell.store, []))[1].append(shell.member)
        try:
            for store, members in by_client.values():
                store.renew(self.name, members, self.ttl)
            self._renewed = time.monotonic()
        except RedisError as exc:
            log.warning("background shells: cannot renew host %s (%s)", self.name, exc)

    # ------------------------------------------------------------------ stopping

    def wake(self) -> None:
        self._wake.set()

    def shutdown(self) -> None:
        """Stop every shell (this process is stopping) and record them lost: no one can follow them now."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            shells = list(self.shells.values())
        threads = [threading.Thread(target=_kill, args=(s,), daemon=True) for s in shells]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        stores = {}
        for shell in shells:
            shell.ended_at = time.time()
            self._finish(shell, "lost")
            stores[shell.store.client_id] = shell.store
        for store in stores.values():
            try:
                store.drop_host(self.name)
            except RedisError:
                pass


def _kill(shell: LiveShell) -> None:
    """Stop the shell's whole process group (and its sandbox, should bwrap die before the sandbox follows it)."""
    kill_process_group(shell.proc)
    stop_sandbox = getattr(shell.launch, "kill", None)
    if stop_sandbox is not None:
        stop_sandbox()


def _close(shell: LiveShell) -> None:
    """After the command: its pipes, and the sandbox's leftovers."""
    for stream in (shell.proc.stdout, shell.proc.stderr):
        try:
            if stream is not None and not any(p.is_alive() for p in shell.pumps):
                stream.close()
        except OSError:
            pass
    try:
        shell.launch.close()  # type: ignore[attr-defined]
    except Exception as exc:
        log.warning("background shell %s: cleaning up its sandbox failed: %s", shell.shell_id, exc)


_host: ShellHost | None = None
_host_pid = 0
_host_lock = threading.Lock()


def host(worker: str | None = None, *, ttl: float = 5.0, renew_every: float = 0.5) -> ShellHost:
    """This process's :class:`ShellHost`, made on first use (again in a forked child)."""
    global _host, _host_pid
    with _host_lock:
        if _host is None or _host_pid != os.getpid():
            name = f"{worker or f'process-{os.getpid()}@{socket.gethostname()}'}~{secrets.token_hex(3)}"
            _host, _host_pid = ShellHost(name, ttl, renew_every), os.getpid()
        return _host


def shutdown() -> None:
    """Stop this process's shells, if it has any (a worker stopping calls this)."""
    with _host_lock:
        current = _host if _host_pid == os.getpid() else None
    if current is not None:
        current.shutdown()
