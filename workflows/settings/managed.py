"""Managed settings: an organisation's policy files, above every other settings layer.

Claude Code reads, on Linux, ``/etc/claude-code/managed-settings.json`` and then each
``/etc/claude-code/managed-settings.d/*.json`` in name order, with the highest precedence of all
settings sources (above ``--settings``), and ``--setting-sources`` cannot leave them out. An
administrator puts there what users must not change, ``permissions.disableBypassPermissionsMode``
first of all. Mainsail reads the same files the same way (:func:`policy_layers`, used by
:func:`workflows.settings.layers.settings_layers`). ``MAINSAIL_MANAGED_SETTINGS_DIR``
moves the directory (the test suite points it at a folder of its own; a machine laid out otherwise).

Like the user's own files, a policy file may grant ``defaultMode: bypassPermissions`` (a project's
files may not: :mod:`workflows.permissions.bypass`).
"""

from __future__ import annotations

import os
from pathlib import Path

#: Where Claude Code keeps managed settings on Linux.
DEFAULT_DIR = "/etc/claude-code"
FILE = "managed-settings.json"
DROP_IN = "managed-settings.d"


def managed_dir() -> Path:
    return Path(os.environ.get("MAINSAIL_MANAGED_SETTINGS_DIR") or DEFAULT_DIR)


def policy_layers() -> list[tuple[str, Path]]:
    """``("policy", path)`` for the managed file, then each drop-in file in name order (later ones win).

    A drop-in directory that exists but cannot be listed is returned as a layer itself: reading it
    fails, so the settings refuse to load (and the bypass check refuses), never silently skipped."""
    base = managed_dir()
    drop_in = base / DROP_IN
    try:
        names = sorted(n for n in os.listdir(drop_in) if n.endswith(".json") and not n.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        names = None
    except OSError:
        return [("policy", base / FILE), ("policy", drop_in)]
    return [("policy", base / FILE)] + [("policy", drop_in / n) for n in names or ()]
