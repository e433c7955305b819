"""Where a sandboxed command may read and write: the bwrap argument vector.

The policy, and the bwrap arguments that carry it out:

* the whole filesystem is visible, read-only: ``--ro-bind / /``;
* a minimal /dev, and a /proc of the command's own PID namespace (the worker's
  ``/proc/<pid>/environ`` is out of sight): ``--dev /dev --proc /proc --unshare-pid``;
* the workspace, the directories added to it (``--add-dir``) and the ``allowWrite`` paths are
  writable: ``--bind P P``;
* a private /tmp, removed after the command: ``--bind RUNDIR /tmp`` (and ``TMPDIR=/tmp``);
* the workspace's (and each added directory's) ``.git`` (all of it, and every nested ``.git`` found at
  launch, unless the command is a git-only line a rule or a person approved; ``.git/hooks`` and
  ``.git/config`` always), ``.claude/``, ``.mainsail/`` and the ``denyWrite`` paths stay read-only, also when they do not exist yet:
  ``--ro-bind P P``, or for a missing one an empty read-only ``--tmpfs`` (a
  file: ``/dev/null``) over its first missing component (a placeholder, below);
* the ``denyRead`` paths and Mainsail's data dir are hidden: ``--tmpfs D`` then
  ``--remount-ro D``, or ``--ro-bind /dev/null F`` for a file;
* no network: ``--unshare-net``, left out for ``allowedDomains: ["*"]`` (named
  domains go through the worker's proxy, see ``sandbox_proxy``);
* no capabilities, no new privileges, a session of its own:
  ``--unshare-user --cap-drop ALL --new-session`` (bwrap sets no_new_privs);
* no unix sockets: ``--seccomp FD`` (see ``sandbox_seccomp``);
* killed with the worker: ``--die-with-parent``; no System V IPC or hostname
  shared: ``--unshare-ipc --unshare-uts``.

Mounts are applied parents first (bwrap applies them in order; a later one
covers an earlier one), so a ``denyRead`` of ``~`` still shows a workspace
inside it, and a ``denyRead`` or ``denyWrite`` inside the workspace wins.

Two details make the read-only paths hold:

* every directory between the workspace and a protected path is bound onto
  itself, so it is a mount point, and a mount point cannot be renamed or
  removed (``EBUSY``): ``mv .git x && mkdir .git && echo ... > .git/config`` fails;
* a protected path that does not exist gets a placeholder. bwrap must create a
  mount point for it, and it creates it on the host (the workspace is the
  host's directory): an empty directory or file. :class:`Placeholder` removes
  it after the last command using it (a lock file per path, shared while a
  command runs, taken exclusively to remove it: removing a mount point that a
  running sandbox still uses would detach the mount there and let that command
  create the path after all).

A protected name that is a symbolic link cannot be protected (the link itself
can be replaced); such a command is refused with a message naming the link.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass, field

from workflows.exceptions import ToolError
from workflows.models import SandboxSettings

__all__ = ["ALWAYS_READ_ONLY", "PROTECTED", "MountPlan", "Placeholder", "bwrap_argv", "has_host_network", "uses_proxy"]

# Inside the workspace, relative path -> is a directory. Read-only for every sandboxed command:
# hooks and config run code for the user's own git, the settings grant permissions, .mcp.json names
# programs Mainsail starts. (The rest of .git is read-only too unless a rule or a person approved a
# git-only line: see _plan.)
PROTECTED: dict[str, bool] = {".git/hooks": True, ".git/config": False, ".claude": True, ".mainsail": True,
                              ".mcp.json": False}
#: What the sandbox keeps read-only for every command that is not an approved git-only line.
ALWAYS_READ_ONLY = (".git", ".claude", ".mainsail", ".mcp.json")
#: Directories looked at for nested ``.git`` entries at launch (a bigger tree is protected up to there;
#: the checker's protected paths and Mainsail's own libgit2 reads do not depend on it).
NESTED_GIT_SCAN = 5_000


def has_host_network(settings: SandboxSettings) -> bool:
    """``allowedDomains: ["*"]``: the command shares the worker's network."""
    return "*" in settings.allowed_domains


def uses_proxy(settings: SandboxSettings) -> bool:
    """Named domains: the command reaches them through the worker's proxy only."""
    return bool(settings.allowed_domains) and not has_host_network(settings)


# --------------------------------------------------------------------------- placeholders


def _lock_dir() -> str:
    """The placeholders' lock files: one directory per user, refused if someone else planted it."""
    path = os.path.join(tempfile.gettempdir(), f"mainsail-sandbox-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ToolError(f"Cannot run the command in the sandbox: {path} (its lock files) is not a private directory "
                        "of this user. Remove it; Mainsail creates it again.")
    return path


def _lock_file(path: str) -> str:
    return os.path.join(_lock_dir(), hashlib.sha256(path.encode()).hexdigest()[:32] + ".lock")


@dataclass
class Placeholder:
    """A host path bwrap creates as a mount point, held (shared lock) while a command uses it."""

    path: str
    fd: int

    @staticmethod
    def known(path: str) -> bool:
        """Whether ``path`` is a placeholder another command created (its lock file exists)."""
        return os.path.exists(_lock_file(path))

    @classmethod
    def hold(cls, path: str) -> "Placeholder":
        lock = _lock_file(path)
        while True:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                same = os.stat(lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # else the last holder removed the file while we waited: lock the new one
                if os.fstat(fd).st_size == 0:
                    os.write(fd, path.encode())  # for whoever wonders what the file is for
                return cls(path, fd)
            os.close(fd)

    def release(self, remove: bool = True) -> None:
        """Drop the hold; the last holder removes the path (if still empty) and its lock file.

        Args:
            remove: False leaves path and lock file for a later command to remove (its sandbox may live on).
        """
        if not remove:
            os.close(self.fd)
            return
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)  # another command still has it mounted: it removes it when done
            return
        _remove_if_empty(self.path)
        try:
            os.unlink(_lock_file(self.path))
        except FileNotFoundError:
            pass
        os.close(self.fd)


def _remove_if_empty(path: str) -> None:
    try:
        if os.path.islink(path):
            return
        if os.path.isdir(path):
            os.rmdir(path)
        elif os.path.isfile(path) and os.path.getsize(path) == 0:
            os.unlink(path)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.ENOENT, errno.EBUSY):
            raise


# --------------------------------------------------------------------------- the plan


@dataclass
class MountPlan:
    """The argv for one command, and the placeholders to release once it ended."""

    argv: list[str]
    placeholders: list[Placeholder] = field(default_factory=list)

    def release(self, remove: bool = True) -> None:
        for ph in self.placeholders:
            ph.release(remove)
        self.placeholders.clear()


class _Mounts:
    """Mount operations in the order they were decided; :meth:`args` sorts them parents first."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, str, str]] = []  # (kind, destination, source)
        self.placeholders: list[Placeholder] = []

    def add(self, kind: str, dest: str, source: str = "") -> None:
        self.ops.append((kind, dest, source or dest))

    def hide(self, path: str) -> None:
        """An empty read-only directory or an empty file over ``path``."""
        self.add("hide_dir" if os.path.isdir(path) else "hide_file", path)

    def placeholder(self, path: str, is_dir: bool) -> None:
        if any(ph.path == path for ph in self.placeholders):
            return  # .git/hooks and .git/config both stop at a missing .git
        ph = Placeholder.hold(path)
        self.placeholders.append(ph)
        if os.path.lexists(path):  # another command's placeholder: cover it the same way
            is_dir = os.path.isdir(path)
        self.add("hide_dir" if is_dir else "hide_file", path)

    def protect(self, root: str, rel: str, is_dir: bool) -> None:
        """Keep ``root/rel`` read-only, existing or not. ``root`` is a writable directory."""
        parts = [p for p in rel.split("/") if p]
        cur = root
        for i, part in enumerate(parts):
            nxt = os.path.join(cur, part)
            last = i == len(parts) - 1
            if not os.path.lexists(nxt) or Placeholder.known(nxt):
                self.placeholder(nxt, is_dir or not last)
                return
            if os.path.islink(nxt):
                raise ToolError(
                    f"Cannot run the command in the sandbox: {nxt} is a symbolic link, so a command could "
                    f"replace it and write {os.path.join(root, rel)} after all. Replace the link with the "
                    "directory or file itself, or list the command in sandbox.excludedCommands.")
            if last or not os.path.isdir(nxt):
                self.add("ro", nxt)
                return
            self.add("self", nxt)  # a mount point cannot be renamed or removed
            cur = nxt

    def args(self) -> list[str]:
        out: list[str] = []
        unique = list(dict.fromkeys(self.ops))  # .git is on the way to both .git/hooks and .git/config
        ordered = sorted(unique, key=lambda op: op[1].rstrip("/").count("/"))
        for kind, dest, source in ordered:
            if kind in ("bind", "self"):
                out += ["--bind", source, dest]
            elif kind == "ro":
                out += ["--ro-bind", source, dest]
            elif kind == "hide_dir":
                out += ["--tmpfs", dest]
            elif kind == "hide_file":
                out += ["--ro-bind", "/dev/null", dest]
        # Read-only only now: bwrap may have had to create mount points inside these tmpfs.
        for kind, dest, _ in ordered:
            if kind == "hide_dir":
                out += ["--remount-ro", dest]
        return out


def _nested_git(root: str, limit: int = NESTED_GIT_SCAN) -> list[str]:
    """The ``.git`` entries below ``root``'s top level (not inside a ``.git``, not through a symlink)."""
    found: list[str] = []
    queue, seen = [root], 0
    while queue and seen < limit:
        d = queue.pop(0)
        seen += 1
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            if e.name == ".git":
                if d != root and not e.is_symlink():
                    found.append(e.path)
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    queue.append(e.path)
            except OSError:
                continue
    return found


def _resolve(path: str, workspace: str, home: str) -> str:
    """An absolute real path; settings hold absolute paths already, this covers hand-made settings."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    return os.path.realpath(os.path.join(workspace, path))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def bwrap_argv(command: str, *, workspace: str, cwd: str, home: str, settings: SandboxSettings, tmp_dir: str,
               data_dir: str | None = None, bwrap: str = "bwrap", seccomp_fd: int | None = None,
               launcher: list[str] | None = None, added_dirs: tuple[str, ...] | list[str] = (),
               git_writable: bool = False) -> MountPlan:
    """The argv that runs ``command`` with ``/bin/bash -c`` in bwrap under the session's sandbox settings.

    Args:
        command: the shell command.
        workspace: the session's workspace (writable).
        cwd: where the command starts, inside the workspace.
        home: the session's home, for ``~`` in hand-made settings.
        settings: the session's sandbox settings (paths already absolute).
        tmp_dir: an empty host directory that becomes the command's /tmp.
        data_dir: Mainsail's data dir, hidden from the command.
        bwrap: the bwrap binary.
        seccomp_fd: a readable descriptor holding the BPF filter, or None for no filter.
        launcher: the argv prefix that runs before bash (the proxy launcher), or None.
        added_dirs: directories added to the working area (``--add-dir``): writable like the
            workspace, with the same paths kept read-only inside them.
        git_writable: the command is a git-only line a rule or a person approved: ``.git`` stays
            writable (but its ``config`` and ``hooks``). Otherwise the whole ``.git`` of each area, and
            every nested ``.git`` found at launch, is read-only (a ``commondir`` or a nested repository's
            config written by a command would name programs for git to run).

    Returns:
        The argv, and the placeholders to :meth:`~MountPlan.release` once the command ended.

    Raises:
        ToolError: a protected path is a symbolic link.
    """
    ws = os.path.realpath(workspace)
    mounts = _Mounts()
    try:
        _plan(mounts, ws, settings, tmp_dir, data_dir, home, added_dirs, git_writable)
    except BaseException:
        MountPlan([], mounts.placeholders).release()
        raise
    # A user namespace even for root: capabilities then mean nothing outside the sandbox, and it is what
    # lets bwrap work for root in a container that allows user namespaces but grants no CAP_SYS_ADMIN.
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
    if not has_host_network(settings):
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *mounts.args()]
    argv += ["--chdir", os.path.realpath(cwd)]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += ["--", *(launcher or []), "/bin/bash", "-c", command]
    return MountPlan(argv, mounts.placeholders)


def _plan(mounts: _Mounts, ws: str, settings: SandboxSettings, tmp_dir: str, data_dir: str | None,
          home: str, added_dirs=(), git_writable: bool = False) -> None:
    mounts.add("bind", "/tmp", tmp_dir)
    # The added directories are part of the working area: writable, and protected inside like the workspace.
    areas = [ws] + [p for p in (os.path.realpath(d) for d in added_dirs) if p != "/" and os.path.isdir(p)]
    writable = areas + [p for p in (_resolve(x, ws, home) for x in settings.allow_write) if os.path.exists(p)]
    for path in writable:
        mounts.add("bind", path)
    for area in areas:
        for rel, is_dir in PROTECTED.items():
            if not git_writable and rel.startswith(".git/"):
                continue  # the whole .git is read-only below (a mount point inside it could not be made)
            mounts.protect(area, rel, is_dir)
        if not git_writable:
            mounts.protect(area, ".git", True)
            for nested in _nested_git(area):
                mounts.protect(area, os.path.relpath(nested, area), os.path.isdir(nested))
    for raw in settings.deny_write:
        path = _resolve(raw, ws, home)
        root = max((w for w in writable if _inside(path, w)), key=len, default=None)
        if root is None:
            continue  # outside every writable path: read-only already
        if path == root:
            mounts.add("ro", path)
        else:
            mounts.protect(root, os.path.relpath(path, root), os.path.isdir(path) or not os.path.exists(path))
    hidden = [_resolve(x, ws, home) for x in settings.deny_read] + ([os.path.realpath(data_dir)] if data_dir else [])
    if not _inside(_lock_dir(), "/tmp"):  # under /tmp it is out of sight already (the private /tmp)
        hidden.append(_lock_dir())  # a command holding a lock file would block the next one's cleanup
    for path in hidden:
        if os.path.exists(path):
            mounts.hide(path)
