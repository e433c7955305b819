"""The one path resolver: the permission checker and the tools resolve every path here.

A path the model writes (a tool's ``file_path``, a command's argument, a
redirection target) becomes an absolute, symlink-free path exactly as bash and
the kernel would see it, or :class:`Unresolvable` when that cannot be known.
Because the checker and the tool call the same function with the same
``cwd``/``home``, they can never disagree about which file a call touches.

Tilde forms follow bash: ``~`` and ``~/x`` (the session's home), ``~user``
(that user's home from the password database), ``~+`` and the directory-stack
forms ``~0``, ``~+0``, ``~-0`` (the working directory, with bash's empty stack),
``~-`` and every other ``~N``/``~+N``/``~-N`` (``OLDPWD`` or a stack entry:
unknown to us, so unresolvable). ``..`` and symlinks are
resolved by ``os.path.realpath`` on the joined path, the way the kernel walks it.

:func:`open_inside` opens a resolved path without following a symlink swapped
in after the check (``O_NOFOLLOW`` on the last component, then the opened
descriptor's real path must still be inside the root), so a race cannot read
or write outside the workspace.
"""

from __future__ import annotations

import os
import pwd
import re

__all__ = [
    "PROTECTED_DIRS",
    "Unresolvable",
    "WorkArea",
    "expand",
    "inside",
    "open_inside",
    "protected",
    "resolve",
    "root_of",
]

#: Folders whose contents steer the agent or git, and the file naming the project's MCP servers (programs
#: Mainsail starts): writes there are never auto-approved.
PROTECTED_DIRS = (".git", ".mainsail", ".claude", ".mcp.json")

_USER_TILDE = re.compile(r"~([A-Za-z_][A-Za-z0-9_.-]*\$?)(?=/|$)")


class Unresolvable(ValueError):
    """A path whose target cannot be known (``~-``, an unknown ``~user``, a NUL byte, an empty path)."""


def expand(text: str, *, cwd: str, home: str) -> str:
    """``text`` tilde-expanded and made absolute against ``cwd``, not yet normalised.

    Raises:
        Unresolvable: empty, holds a NUL byte, ``~-``, or names a user that does not exist.
    """
    if not isinstance(text, str) or not text:
        raise Unresolvable("an empty path")
    if "\0" in text:
        raise Unresolvable(f"the path {text!r} holds a NUL byte")
    if text.startswith("~"):
        head, sep, rest = text.partition("/")
        if head == "~":
            base = home
        elif head in ("~+", "~0", "~+0", "~-0"):
            base = cwd
        elif head == "~-":
            raise Unresolvable(f"{text!r} names the previous directory (~-), which is not known here")
        elif re.fullmatch(r"~[+-]?\d+", head):
            raise Unresolvable(f"{text!r} names an entry of the directory stack, which is not known here")
        elif _USER_TILDE.fullmatch(head):
            try:
                base = pwd.getpwnam(head[1:]).pw_dir
            except KeyError:
                raise Unresolvable(f"{text!r} names user {head[1:]!r}, who does not exist here") from None
        else:  # "~x y" or other forms bash leaves alone: a literal name in cwd
            base = None
        if base is not None:
            if not base:
                raise Unresolvable(f"{text!r}: the home directory is not known")
            text = base + (sep + rest if sep else "")
    if not os.path.isabs(text):
        text = os.path.join(cwd, text)
    return text


def resolve(text: str, *, cwd: str, home: str) -> str:
    """The absolute, symlink-free path ``text`` names (see :func:`expand`).

    Raises:
        Unresolvable: see :func:`expand`.
    """
    return os.path.realpath(expand(text, cwd=cwd, home=home))


class WorkArea(str):
    """The working area of a session: its workspace plus the directories added to it (``--add-dir``,
    ``permissions.additionalDirectories``), all resolved physically.

    It *is* the workspace's path (a ``str``), so every use of the workspace as a path (a relative
    path's base, a rule's ``/x``, the first working directory of a command) is unchanged; only
    :func:`inside` and :func:`protected` see the added directories. Code that rebuilds the path
    (``os.path.realpath(ws)``) gets a plain ``str`` back and so sees the workspace alone: losing the
    added directories can only make a check stricter, never looser.
    """

    dirs: tuple[str, ...]

    def __new__(cls, workspace: str, added=()) -> "WorkArea":
        area = super().__new__(cls, os.path.realpath(workspace))
        roots = [str(area)]
        for d in added or ():
            real = os.path.realpath(d)
            if real != "/" and real not in roots:  # "/" would make every path inside
                roots.append(real)
        area.dirs = tuple(roots)
        return area


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def inside(path: str, root: str) -> bool:
    """Whether resolved ``path`` is ``root`` or under it; for a :class:`WorkArea`, under any of its dirs."""
    return any(_under(path, r) for r in getattr(root, "dirs", (root,)))


def protected(path: str, workspace: str, home: str) -> bool:
    """Whether resolved ``path`` is in ``.git/``, ``.mainsail/`` or ``.claude/``, or is a ``.mcp.json`` (at any
    depth of the workspace, or of any directory added to a :class:`WorkArea`), or in ``~/.mainsail`` or
    ``~/.claude``."""
    roots = getattr(workspace, "dirs", (workspace,))
    for root in roots:  # every root that holds it: an added dir may sit inside the workspace's .git
        if _under(path, root):
            rel = os.path.relpath(path, root)
            # Compared without case: on a case-insensitive filesystem .GIT/config is .git/config.
            if any(seg.lower() in PROTECTED_DIRS for seg in rel.split(os.sep)):
                return True
    if _under(path, roots[0]):
        return False
    return bool(home) and any(_under(path.lower(), os.path.join(home, d).lower()) for d in PROTECTED_DIRS[1:])


def root_of(path: str, area: str) -> str | None:
    """The directory of ``area`` (workspace first, then the added ones) that holds resolved ``path``."""
    return next((r for r in getattr(area, "dirs", (area,)) if _under(path, r)), None)


def open_inside(path: str, root: str, flags: int, mode: int = 0o666) -> int:
    """Open resolved ``path`` and return the descriptor, only if what was opened is inside ``root``.

    The last component is opened with ``O_NOFOLLOW`` (a symlink swapped in since the
    check fails to open), and the descriptor's real path is checked again, so a
    directory swapped for a symlink on the way is caught too.

    Raises:
        PermissionError: the opened file is outside ``root`` (the descriptor is closed).
        OSError: the open itself failed (``ELOOP`` for a symlink at the last component).
    """
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        real = os.readlink(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else os.path.realpath(path)
    except OSError:
        real = os.path.realpath(path)
    if not inside(real, root if isinstance(root, WorkArea) else os.path.realpath(root)):
        os.close(fd)
        raise PermissionError(f"{path} resolves to {real}, outside {root}")
    return fd
