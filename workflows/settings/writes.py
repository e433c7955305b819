"""Writing a settings file as a person's tool does: whole, through a temporary file, its mode kept (0600 when
new), and a ``settings.local.json`` kept out of git (:func:`workflows.git.ignore.keep_out_of_git`).

Used by ``mainsail mcp add`` (:mod:`workflows.mcp.scopes`) and by an SDK client's permission updates
(:mod:`workflows.permissions.updates`).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import NamedTuple

from workflows.git.ignore import keep_out_of_git

__all__ = ["Written", "write_settings"]


class Written(NamedTuple):
    """A file written, and a note for the person about keeping it out of git (or None)."""

    path: Path
    note: str | None = None


def write_settings(path: Path, data: dict, workspace: Path, home: Path) -> Written:
    """Write ``data`` to ``path`` (a settings file of ``workspace`` or ``home``) as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return Written(path, keep_out_of_git(path, Path(workspace), Path(home)))
