"""Starting one Bash command, in bwrap or not, and cleaning up after it.

A :class:`Launch` is what the Bash tool runs: the argv and environment, the
descriptors bwrap reads (the seccomp filter, ``--info-fd``, the proxy's
socketpair end), the proxy and the private /tmp. ``close`` returns only once
the sandbox's last process is gone: bwrap exits as soon as the command does,
but the rest of its PID namespace dies a moment later, and placeholders may be
removed only after that (see :mod:`~workflows.permissions.sandbox.mounts`).
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Mapping

from workflows.models import SandboxSettings
from workflows.permissions.sandbox.env import command_environment
from workflows.permissions.sandbox.mounts import MountPlan, bwrap_argv, uses_proxy
from workflows.permissions.sandbox.proxy import LAUNCHER, PROXY_PORT, DomainProxy
from workflows.permissions.sandbox.seccomp import unix_socket_filter

log = logging.getLogger(__name__)

__all__ = ["Launch", "plain_launch", "sandboxed_launch"]

SETUP_TIMEOUT = 10.0  # bwrap reports its sandbox's pid once the mounts are in place
GONE_TIMEOUT = 5.0  # after bwrap exits, until the last process of the sandbox is gone


@dataclass
class Launch:
    """How to start one command, and what to clean up after it.

    The caller starts ``Popen(argv, env=env, pass_fds=pass_fds, start_new_session=True)``,
    calls :meth:`started` right after, and :meth:`close` once the process exited
    (or was killed): the sandbox's last process is gone when ``close`` returns.
    """

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool = False
    pass_fds: tuple[int, ...] = ()
    plan: MountPlan | None = None
    proxy: DomainProxy | None = None
    tmp_dir: str | None = None
    _info_fd: int | None = None
    _close_after_start: list[int] = field(default_factory=list)
    _child: tuple[int, str] | None = None  # the sandbox's first process: pid and start time
    _started: bool = False

    def started(self) -> None:
        """Right after Popen: hand the descriptors over, start the proxy, note the sandbox's pid."""
        self.handed_over()
        self.note_child()

    def handed_over(self) -> None:
        """Right after Popen: hand the descriptors over and start the proxy (before the command may run)."""
        self._started = True
        self._close_fds()
        if self.proxy is not None:
            self.proxy.start()

    def note_child(self) -> None:
        """Wait for the sandbox to say its pid (a guarded command: only once its guard has started it)."""
        if self._info_fd is not None:
            self._child = _read_child(self._info_fd, SETUP_TIMEOUT)

    def close(self) -> None:
        """After the command: wait for the sandbox to be gone, then remove its placeholders and /tmp."""
        self._close_fds()
        gone = True
        if self._info_fd is not None:
            if self._started and self._child is None:  # setup was slow: bwrap has exited by now
                self._child = _read_child(self._info_fd, 0.5)
            if self._child is not None:
                gone = _wait_gone(*self._child)
            os.close(self._info_fd)
            self._info_fd = None
        if self.proxy is not None:
            self.proxy.close()
        if self.plan is not None:
            self.plan.release(remove=gone)  # a sandbox still running keeps its mount points
        if self.tmp_dir is not None and gone:
            _remove_tree(self.tmp_dir)
            self.tmp_dir = None

    def kill(self) -> None:
        """SIGKILL the sandbox's first process if it still runs, which ends its PID namespace and everything in
        it: for a bwrap killed so soon after it started that the sandbox had not yet set itself to die with it
        (``--die-with-parent`` takes effect only once the sandbox's first process has run that far)."""
        if self._info_fd is not None and self._started and self._child is None:
            self._child = _read_child(self._info_fd, 0.5)
        if self._child is None or not self._child[1]:
            return
        pid, started = self._child
        if _start_time(pid) == started:  # the same process, not a pid reused since
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _close_fds(self) -> None:
        for fd in self._close_after_start:
            os.close(fd)
        self._close_after_start = []


def plain_launch(command: str, environ: Mapping[str, str], env: Mapping[str, str] | None = None) -> Launch:
    """A plain shell with the scrubbed environment (and the settings' ``env``): no sandbox."""
    return Launch([_shell(), "-c", command], command_environment(environ, settings_env=env))


def sandboxed_launch(command: str, *, workspace: str, cwd: str, home: str, settings: SandboxSettings,
                     data_dir: str | None = None, environ: Mapping[str, str] | None = None,
                     bwrap: str = "bwrap", added_dirs: tuple[str, ...] = (),
                     env: Mapping[str, str] | None = None, git_writable: bool = False) -> Launch:
    """The bwrap launch of ``command``: argv, environment, descriptors, proxy, private /tmp.

    Raises:
        ToolError: a protected path is a symbolic link (nothing is left behind).
    """
    environ = os.environ if environ is None else environ
    proxy = DomainProxy(settings.allowed_domains) if uses_proxy(settings) else None
    launch = Launch([], command_environment(environ, sandboxed=True, proxy_port=PROXY_PORT if proxy else None,
                                            settings_env=env),
                    sandboxed=True, proxy=proxy, tmp_dir=tempfile.mkdtemp(prefix="mainsail-sandbox-"))
    try:
        seccomp_fd = None
        program = None if settings.allow_unix_sockets else unix_socket_filter()
        if program is not None:
            seccomp_fd = _pipe_with(program)
            launch._close_after_start.append(seccomp_fd)  # bwrap reads it; ours is closed once it started
        info_r, info_w = os.pipe()
        launch._info_fd = info_r
        launch._close_after_start.append(info_w)
        launcher = None
        if proxy is not None:  # its end is closed by proxy.start()
            launcher = [_python(), "-I", "-S", "-c", LAUNCHER, str(proxy.child_fd), str(PROXY_PORT)]
        launch.plan = bwrap_argv(command, workspace=workspace, cwd=cwd, home=home, settings=settings,
                                 tmp_dir=launch.tmp_dir, data_dir=data_dir, bwrap=bwrap, seccomp_fd=seccomp_fd,
                                 launcher=launcher, added_dirs=added_dirs, git_writable=git_writable)
        launch.argv = launch.plan.argv
        launch.argv[1:1] = ["--info-fd", str(info_w)]
        launch.pass_fds = (*launch._close_after_start, *([proxy.child_fd] if proxy else []))
        return launch
    except BaseException:
        launch.close()
        raise


def _python() -> str:
    """A Python for the proxy launcher that the sandbox can see (its /tmp is private: not one under /tmp)."""
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if candidate:
            real = os.path.realpath(candidate)
            if os.path.exists(real) and not _inside(real, "/tmp"):
                return real
    return "python3"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _pipe_with(data: bytes) -> int:
    """A pipe's read end holding ``data`` (small: it fits the pipe buffer)."""
    r, w = os.pipe()
    try:
        os.write(w, data)
    finally:
        os.close(w)
    return r


def _read_child(fd: int, timeout: float) -> tuple[int, str] | None:
    """bwrap's ``--info-fd`` report: the pid of the sandbox's first process, with its start time."""
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        try:
            pid = int(json.loads(data)["child-pid"])
        except (ValueError, KeyError, TypeError):
            continue
        return pid, _start_time(pid) or ""
    return None


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (None: gone or a zombie), to tell a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def _wait_gone(pid: int, started: str) -> bool:
    """Wait until the sandbox's first process is a zombie or gone; False if it still runs after a while.

    It becomes a zombie only after every other process of its PID namespace was
    killed and reaped, so after this nothing of the command runs any more (bwrap
    itself exits a little earlier). Only then may placeholders be removed.
    """
    deadline = time.monotonic() + GONE_TIMEOUT
    while time.monotonic() < deadline:
        now = _start_time(pid)
        if now is None or (started and now != started):
            return True
        time.sleep(0.005)
    log.warning("sandbox process %s still runs %gs after bwrap exited; its mount points and /tmp are left "
                "for a later command to remove", pid, GONE_TIMEOUT)
    return False


def _remove_tree(path: str) -> None:
    """Remove a command's private /tmp, even where the command took write permission away."""
    def retry(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), stat.S_IRWXU)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, stat.S_IRWXU)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=retry)


def _shell() -> str:
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
