"""A session's background shells as its tools see them: start one here, read or stop any.

:class:`SessionShells` is what :attr:`ToolContext.shells <workflows.tools.base.ToolContext>` holds
on a tools worker. Starting runs the command on this process (under its guard, in the session's
sandbox when it has one); reading and stopping go through Redis, so they work from any worker.
"""

from __future__ import annotations

import subprocess
import threading
import time

from workflows.exceptions import ToolError
from workflows.shells import host as hosts
from workflows.shells.groups import KILL_GRACE_SECONDS, guard_argv, kill_process_group
from workflows.shells.host import LiveShell, Output
from workflows.store.resilience import RedisError
from workflows.store.shells import Read, ShellStore, Status

#: How long KillShell waits for the shell's host to confirm it stopped the command.
KILL_WAIT_SECONDS = KILL_GRACE_SECONDS + 3.0
DEFAULT_OUTPUT_CHARS = 1_000_000


def not_found(shell_id: str) -> ToolError:
    return ToolError(f"No shell found with ID: {shell_id}")


class SessionShells:
    """Background shells of session ``sid``.

    Args:
        store: the shells' store (``store.shells()``).
        sid: the session.
        worker: the registered name of the worker running this process (shown, and its shells'
            host is named after it); None outside a worker.
        output_chars: characters of each shell's output Redis keeps (the latest).
        ttl: how long a host's shells count as running without a renewal (then they are lost).
        renew_every: how often the host renews them.
    """

    def __init__(self, store: ShellStore, sid: str, worker: str | None = None, *,
                 output_chars: int = DEFAULT_OUTPUT_CHARS, ttl: float = 5.0, renew_every: float = 0.5) -> None:
        self.store = store
        self.sid = sid
        self.worker = worker
        self.output_chars = output_chars
        self.ttl = ttl
        self.renew_every = renew_every

    def start(self, command: str, description: str | None, launch, cwd: str) -> str:
        """Run ``launch`` (a prepared sandbox Launch of ``command``) in the background; its shell id.

        The host takes ``launch`` over (it closes it once the command is gone).

        Raises:
            ToolError: the command cannot be started, or Redis refused its record (nothing runs then).
        """
        host = hosts.host(self.worker, ttl=self.ttl, renew_every=self.renew_every)
        try:
            shell_id = self.store.reserve_id(self.sid)
        except RedisError as exc:
            launch.close()
            raise ToolError(f"Cannot start the command in the background: Redis refused it ({exc}). Nothing is "
                            "running; try again.") from None
        proc = _spawn(launch, cwd)
        try:
            self.store.register(self.sid, shell_id, {
                "command": command, "description": description or "", "cwd": cwd,
                "worker": self.worker or host.name, "sandboxed": "yes" if launch.sandboxed else "no",
            }, host.name, host.ttl)
        except RedisError as exc:
            kill_process_group(proc)
            launch.close()
            raise ToolError(f"Cannot start the command in the background: Redis refused its record ({exc}). It "
                            "was stopped; try again.") from None
        host.adopt(LiveShell(self.store, self.sid, shell_id, proc, launch, Output(self.output_chars)))
        return shell_id

    def read(self, shell_id: str, call: str = "") -> Read:
        """The output since the last read, and the status (``call``: see :meth:`ShellStore.read`).

        Raises:
            ToolError: no such shell in this session.
        """
        got = self.store.read(self.sid, shell_id, call)
        if got is None:
            raise not_found(shell_id)
        return got

    def kill(self, shell_id: str, cancel: threading.Event, call: str = "",
             wait: float = KILL_WAIT_SECONDS) -> tuple[Status, str]:
        """Ask the shell's host to stop it and wait until it has; its final status and its command.
        ``call``: the tool call asking; the same call again (a retry) finds the shell it killed killed.

        Raises:
            ToolError: no such shell, or it is not running.
        """
        info = self.store.info(self.sid, shell_id)
        asked = self.store.request_kill(self.sid, shell_id, "KillShell", call) if info else None
        if asked is None:
            raise not_found(shell_id)
        if asked == "killed" and call and info.get("kill_call") == call:
            return asked, info.get("command", "")
        if asked != "requested":
            raise ToolError(f"Shell {shell_id} is not running, so cannot be killed (status: {asked})")
        local = hosts.host(self.worker)
        local.wake()  # if it runs here, stop it now rather than at the next tick
        deadline = time.monotonic() + wait
        status = asked
        while time.monotonic() < deadline and not cancel.is_set():
            status = self.store.status(self.sid, shell_id) or "lost"
            if status != "running":
                break
            time.sleep(0.05)
        return status, info.get("command", "")


def _spawn(launch, cwd: str) -> subprocess.Popen:
    """Start the guard (which starts the command) in a new process group, output piped to the host."""
    argv = guard_argv(launch.argv, launch.pass_fds)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=launch.env, pass_fds=launch.pass_fds, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        launch.close()
        where = "in the sandbox " if launch.sandboxed else ""
        raise ToolError(f"Cannot start the command {where}in {cwd}: {exc}") from None
    launch.started()
    return proc
