"""Where a workspace's repository would be, found without libgit2 (~30 ms to load): a command whose
workspace has no ``.git`` above it never loads it (:mod:`workflows.git.state` opens what this finds)."""

from __future__ import annotations

import os

__all__ = ["find_top", "may_hold_repository"]


def find_top(ws: str) -> str | None:
    """The nearest directory from ``ws`` up holding a ``.git``, within git's ceiling directories."""
    ceilings = {os.path.realpath(c) for c in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep) if c}
    d = ws
    while True:
        if os.path.lexists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d or parent in ceilings:
            return None
        d = parent


def may_hold_repository(workspace: str) -> bool:
    """False when no ``.git`` lies at or above ``workspace`` (then there is nothing for libgit2 to open, and
    :func:`workflows.git.state.open_repo` would find nothing either); True means "look": open_repo decides."""
    ws = os.path.realpath(workspace)
    return os.path.isdir(ws) and find_top(ws) is not None
