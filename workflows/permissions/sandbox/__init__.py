"""The OS sandbox of Bash commands (bubblewrap on Linux), and the environment every command gets.

The permission checker decides whether a command may run; the sandbox limits
what it can do when it runs, so a checker bug is a contained bug. A sandboxed
command sees the whole filesystem read-only, can write only the workspace, its
private /tmp and ``sandbox.filesystem.allowWrite`` paths, cannot touch the
workspace's ``.git/hooks``, ``.git/config``, ``.claude/`` or ``.mainsail/``, does not
see ``denyRead`` paths or Mainsail's data dir, has no network unless
``sandbox.network.allowedDomains`` allows some (through a proxy in the worker,
see :mod:`~workflows.permissions.sandbox.proxy`), cannot create unix sockets,
and runs in its own PID namespace (so the worker's ``/proc/<pid>/environ`` is
out of reach). The bwrap arguments are in :mod:`~workflows.permissions.sandbox.mounts`.

On by default wherever bwrap works; off with ``MAINSAIL_SANDBOX=false`` in the
worker's environment or ``"sandbox": {"enabled": false}`` in a settings file.
Where bwrap is missing or broken, commands run unsandboxed (the worker logs one
warning at start-up), unless ``sandbox.failIfUnavailable`` is true: then the
Bash call fails with the fix. ``sandbox.excludedCommands`` run unsandboxed.

Every command, sandboxed or not, gets a scrubbed copy of the worker's
environment: :mod:`~workflows.permissions.sandbox.env` lists what is dropped.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import Mapping

from workflows.exceptions import ConfigurationError, ToolError
from workflows.models import SandboxSettings
from workflows.permissions.sandbox.env import command_environment, scrub_environment
from workflows.permissions.sandbox.launch import Launch, plain_launch, sandboxed_launch
from workflows.permissions.sandbox.mounts import bwrap_argv
from workflows.permissions.sandbox.seccomp import unix_socket_filter

log = logging.getLogger(__name__)

__all__ = ["Launch", "SandboxStatus", "bwrap_argv", "command_environment", "git_only", "is_excluded", "prepare",
           "sandbox_env_enabled", "sandbox_status", "scrub_environment", "warn_if_unavailable"]

INSTALL = "install bubblewrap: apt-get install bubblewrap (Debian/Ubuntu) or dnf install bubblewrap (Fedora)"
PROBE_TIMEOUT = 10.0

_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


# --------------------------------------------------------------------------- status


@dataclass(frozen=True)
class SandboxStatus:
    """Whether commands can be sandboxed on this machine, and what was found (or the fix)."""

    available: bool
    detail: str


_status: SandboxStatus | None = None
_status_lock = threading.Lock()


def sandbox_status(refresh: bool = False) -> SandboxStatus:
    """Find bwrap and check, once per process, that it can create a sandbox here.

    Args:
        refresh: check again instead of returning the cached answer.
    """
    global _status
    with _status_lock:
        if _status is None or refresh:
            _status = _check()
        return _status


def _check() -> SandboxStatus:
    if platform.system() != "Linux":
        return SandboxStatus(False, f"the OS sandbox uses bubblewrap, which is Linux-only (this is "
                                    f"{platform.system()}): commands run unsandboxed. Run the worker on Linux.")
    path = shutil.which("bwrap")
    if not path:
        return SandboxStatus(False, f"bubblewrap (bwrap) is not installed: {INSTALL}.")
    version = _version(path)
    problem = _probe(path)
    if problem:
        return SandboxStatus(False, (
            f"{version} at {path} cannot create a sandbox here: {problem}. Allow unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also "
            "kernel.apparmor_restrict_unprivileged_userns=0), or in a container run the worker with "
            "--security-opt seccomp=unconfined --security-opt apparmor=unconfined."))
    unfiltered = "" if unix_socket_filter() else (
        f" Unix sockets are not filtered on {platform.machine()} (no seccomp filter for it): deny the sockets "
        "that matter (like /var/run/docker.sock) with sandbox.filesystem.denyRead.")
    return SandboxStatus(True, f"{version} at {path} works: commands run with only the workspace writable, "
                               f"no network unless allowed, in their own PID namespace.{unfiltered}")


def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT)
        return out.stdout.strip() or "bubblewrap"
    except (OSError, subprocess.SubprocessError):
        return "bubblewrap"


def _probe(path: str) -> str | None:
    """Run ``true`` in a sandbox built like a real command's; None if it worked, else what went wrong."""
    ws = tempfile.mkdtemp(prefix="mainsail-sandbox-probe-")
    try:
        launch = sandboxed_launch("true", workspace=ws, cwd=ws, home=ws, settings=SandboxSettings(), bwrap=path)
        try:
            proc = subprocess.run(launch.argv, env=launch.env, pass_fds=launch.pass_fds, capture_output=True,
                                  text=True, timeout=PROBE_TIMEOUT, start_new_session=True)
        finally:
            launch.close()
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            return lines[-1] if lines else f"bwrap exited with code {proc.returncode}"
        return None
    except subprocess.TimeoutExpired:
        return f"a trivial command did not finish within {PROBE_TIMEOUT:g}s"
    except (OSError, ToolError) as exc:
        return str(exc)
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def sandbox_env_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """``MAINSAIL_SANDBOX`` (default true) of the process that runs commands.

    Raises:
        ConfigurationError: the value is not a boolean word.
    """
    raw = ((os.environ if environ is None else environ).get("MAINSAIL_SANDBOX") or "true").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigurationError(f"MAINSAIL_SANDBOX is {raw!r}, which is not a boolean: set it to true (sandbox "
                             "commands where bubblewrap works, the default) or false.")


def warn_if_unavailable() -> None:
    """At worker start-up: one warning if commands are meant to be sandboxed but cannot be."""
    try:
        if not sandbox_env_enabled():
            return
    except ConfigurationError as exc:
        log.warning("%s", exc)
        return
    status = sandbox_status()
    if not status.available:
        log.warning("The OS sandbox is unavailable, so Bash commands will run unsandboxed: %s "
                    "(Set MAINSAIL_SANDBOX=false to run them unsandboxed without this warning.)", status.detail)


# --------------------------------------------------------------------------- exclusions


def is_excluded(command: str, excluded: list[str]) -> bool:
    """Whether ``command`` is exactly one plain command starting with the words of one of ``excluded``
    (``docker``, ``docker compose``).

    Parsed with the permission checker's grammar: ``docker ps; rm -rf ~`` or ``docker $(...)`` is not
    excluded (it runs sandboxed), so an excluded prefix cannot carry anything else out of the sandbox.
    """
    if not excluded:
        return False
    from workflows.permissions.shell.bash_parse import parse

    parsed = parse(command)
    if parsed.problems or len(parsed.commands) != 1 or parsed.commands[0].assignments:
        return False
    cmd = parsed.commands[0]
    if not all(w.literal for w in cmd.words) or any(r.writes for r in cmd.redirects):
        return False
    words = [w.value for w in cmd.words]
    for entry in excluded:
        prefix = entry.split()
        if prefix and words[: len(prefix)] == prefix:
            return True
    return False


def git_only(command: str) -> bool:
    """Whether ``command`` is a line of plain ``git`` commands only (``git add x && git commit -m y``):
    parsed with the checker's grammar, every word literal, no redirection that writes."""
    from workflows.permissions.shell.bash_parse import parse

    parsed = parse(command)
    if parsed.problems or not parsed.commands:
        return False
    for cmd in parsed.commands:
        if cmd.assignments or not cmd.words or not all(w.literal for w in cmd.words):
            return False
        if cmd.words[0].value != "git" or any(r.writes for r in cmd.redirects):
            return False
    return True


# --------------------------------------------------------------------------- the decision


def prepare(command: str, *, workspace: str, cwd: str, home: str, settings: SandboxSettings | None,
            data_dir: str | None = None, environ: Mapping[str, str] | None = None,
            added_dirs: tuple[str, ...] = (), env: Mapping[str, str] | None = None,
            git_writable: bool = False) -> Launch:
    """Decide how ``command`` runs: in bwrap, or (not enabled, excluded, unavailable) as a plain shell.

    ``added_dirs`` (``--add-dir``) are writable in the sandbox like the workspace, with their
    ``.git/hooks``, ``.git/config``, ``.claude/``, ``.mainsail/`` read-only; ``env`` is the settings
    files' ``env`` (see :func:`~workflows.permissions.sandbox.env.command_environment`);
    ``git_writable``: the command is a git-only line a rule or a person approved (:func:`git_only`),
    so ``.git`` is writable in the sandbox but for ``.git/config`` and ``.git/hooks``.

    Raises:
        ToolError: the sandbox is required (``failIfUnavailable``) but unavailable; MAINSAIL_SANDBOX is
            not a boolean; a protected path is a symbolic link.
    """
    environ = os.environ if environ is None else environ
    try:
        wanted = settings is not None and settings.enabled and sandbox_env_enabled(environ)
    except ConfigurationError as exc:  # fail closed: a typo must not quietly turn the sandbox off
        raise ToolError(f"Cannot run the command: {exc}") from None
    if not wanted or is_excluded(command, settings.excluded_commands):
        return plain_launch(command, environ, env)
    status = sandbox_status()
    if not status.available:
        if settings.fail_if_unavailable:
            raise ToolError(f"Cannot run the command: the sandbox is required (sandbox.failIfUnavailable is "
                            f"true) but unavailable: {status.detail}")
        return plain_launch(command, environ, env)
    return sandboxed_launch(command, workspace=workspace, cwd=cwd, home=home, settings=settings,
                            data_dir=data_dir, environ=environ, added_dirs=added_dirs, env=env,
                            git_writable=git_writable)
