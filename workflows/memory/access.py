"""Which files the memory files (CLAUDE.md, MAINSAIL.md and their ``@`` imports) may bring into a context.

A memory file is workspace content, so the model may have written it (a ``@/proc/self/environ``
line, a CLAUDE.md that is a symlink to ``~/.aws/credentials``). What it names is resolved by the
one path resolver (:mod:`workflows.permissions.rules.paths`) and read only when it lies in the session's
working area (the workspace and its added directories) or in the user's ``~/.claude`` (and its
twin ``~/.mainsail``), is not in ``/proc``, ``/sys`` or ``/dev`` (however reached), and is not
covered by the session's Read deny rules. Anything else is left out with a visible note: Claude
Code asks before an import from outside the working directory; Mainsail, which often has nobody to
ask, refuses.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Callable

from workflows.permissions.rules import paths

__all__ = ["MemoryAccess", "SYSTEM_DIRS"]

#: Kernel views of processes and devices: never memory, whatever path leads there.
SYSTEM_DIRS = ("/proc", "/sys", "/dev")
USER_DIRS = (".claude", ".mainsail")


@dataclass(frozen=True)
class MemoryAccess:
    """The files one session's memory may read.

    ``area``: the workspace and its added directories; ``home``: the session's home;
    ``read_denied``: the session's Read deny rules as a predicate on resolved paths (None: none).
    """

    area: paths.WorkArea
    home: str
    read_denied: Callable[[str], bool] | None = None
    user_dirs: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        home = os.path.realpath(self.home)
        object.__setattr__(self, "user_dirs", tuple(os.path.join(home, d) for d in USER_DIRS))

    def resolve(self, token: str, importer: str) -> str:
        """The resolved path an ``@token`` in ``importer`` names (relative to the importer's folder).

        Raises:
            paths.Unresolvable: see :func:`workflows.permissions.rules.paths.expand`.
        """
        return paths.resolve(token, cwd=os.path.dirname(importer), home=self.home)

    def refusal(self, real: str, *, anywhere: bool = False) -> str:
        """Why resolved ``real`` may not be read ("" when it may). ``anywhere``: a memory file of a
        directory above the workspace (Claude Code reads those), held only to the other checks."""
        if any(paths.inside(real, d) for d in SYSTEM_DIRS):
            return "a system file (/proc, /sys, /dev)"
        if not anywhere and not self.root_of(real):
            return "outside the workspace, its added directories and ~/.claude"
        if self.read_denied is not None and self.read_denied(real):
            return "a Read deny rule covers it"
        return ""

    def root_of(self, real: str) -> str | None:
        """The allowed directory holding ``real``, or None."""
        return paths.root_of(real, self.area) or next((d for d in self.user_dirs if paths.inside(real, d)), None)

    def read(self, real: str, limit: int) -> bytes | None:
        """Up to ``limit`` bytes of regular file ``real``, opened without following a symlink swapped in
        since the check (:func:`workflows.permissions.rules.paths.open_inside`); None if it cannot be read."""
        root = self.root_of(real) or os.path.dirname(real)
        try:
            fd = paths.open_inside(real, root, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return fh.read(limit)
        except OSError:
            return None
        finally:
            os.close(fd)
