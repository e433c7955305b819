"""Which settings files a session reads, lowest precedence first: :func:`settings_layers`.

The six files of the user and the workspace (Claude Code's and Mainsail's), then the managed (policy)
files of the machine (:mod:`workflows.settings.managed`). A ``settings.local.json`` that git tracks is a
project file, not a local one (:func:`workflows.settings.gated.local_is_project`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from workflows.settings.gated import local_is_project
from workflows.settings.managed import policy_layers

__all__ = ["SOURCES", "settings_layers", "settings_paths"]


#: Claude Code's setting sources (``--setting-sources``): which of the files below each names.
SOURCES = ("user", "project", "local")


def settings_paths(workspace: Path, home: Path, sources: Iterable[str] | None = None) -> list[Path]:
    """The six settings files, lowest precedence first, then the managed ones; of the six only those of
    ``sources`` when given (``user``: the home ones; ``project``: the workspace's settings.json;
    ``local``: settings.local.json)."""
    return [path for _, path in settings_layers(workspace, home, sources)]


def settings_layers(workspace: Path, home: Path, sources: Iterable[str] | None = None) -> list[tuple[str, Path]]:
    """:func:`settings_paths` with each file's source (user, project or local), then the managed
    (``policy``) files, whatever ``sources`` says (:mod:`workflows.settings.managed`)."""
    workspace, home = Path(workspace), Path(home)
    chosen = set(SOURCES if sources is None else sources)
    paths = [
        ("user", home / ".claude" / "settings.json"),
        ("user", home / ".mainsail" / "settings.json"),
        ("project", workspace / ".claude" / "settings.json"),
        ("project", workspace / ".mainsail" / "settings.json"),
        ("local", workspace / ".claude" / "settings.local.json"),
        ("local", workspace / ".mainsail" / "settings.local.json"),
    ]
    # A settings.local.json that git tracks came with the clone: it is the repository's, not the user's.
    paths = [("project" if source == "local" and local_is_project(path) else source, path) for source, path in paths]
    return [(source, path) for source, path in paths if source in chosen] + policy_layers()
