"""What a settings file got wrong, worded for the person who fixes it: :class:`SettingsError` and its helpers.

Every module that reads a key of the settings files (:mod:`workflows.sessions.settings_files`,
:mod:`workflows.sessions.session_keys`, :mod:`workflows.permissions.bypass`) words its errors with these:
the file and the line of the key (:class:`Where`), what the value was (:func:`describe`), and a list of
strings checked item by item (:func:`strings`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflows.exceptions import ConfigurationError

__all__ = ["EXAMPLES", "SettingsError", "Where", "at_line", "describe", "key_at", "line_of", "strings"]


class SettingsError(ConfigurationError):
    """A settings file or a permission flag is wrong; the message names it, the line, and the fix."""


def line_of(text: str, needle: str, start: int = 0) -> int | None:
    at = text.find(needle, start)
    if at < 0 and start:
        at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


def key_at(text: str, key: str, start: int = 0) -> int:
    m = re.compile(r'"' + re.escape(key) + r'"\s*:').search(text, start)
    return m.start() if m else -1


def at_line(path: Path, line: int | None) -> str:
    return f"{path}, line {line}" if line else str(path)


def describe(value: Any) -> str:
    kind = {bool: "boolean", int: "number", float: "number", str: "string", list: "list", dict: "object",
            type(None): "null"}.get(type(value), type(value).__name__)
    return f"{kind} {json.dumps(value)[:60]}"


EXAMPLES = {
    "sandbox": '{"enabled": true, "filesystem": {"allowWrite": ["~/.cache"]}}',
    "sandbox.network": '{"allowedDomains": ["pypi.org", "*.pythonhosted.org"]}',
    "sandbox.filesystem": '{"allowWrite": ["~/.cache"], "denyRead": ["~/.ssh"]}',
    "sandbox.excludedCommands": '["docker", "docker compose"]',
    "sandbox.network.allowedDomains": '["pypi.org", "*.pythonhosted.org"]',
    "permissions.additionalDirectories": '["../shared", "~/notes"]',
}


@dataclass
class Where:
    """A settings file and its text, to name the line of a key in errors."""

    path: Path
    text: str

    def key(self, dotted: str) -> str:
        """``file, line N`` of the last part of ``dotted``, searched after its parents."""
        at = 0
        for part in dotted.split("."):
            found = key_at(self.text, part, at)
            at = found if found >= 0 else at
        return at_line(self.path, self.text.count("\n", 0, at) + 1 if at else None)


def strings(value: Any, name: str, where: Where) -> list[str]:
    if value is None:
        return []
    like = EXAMPLES.get(name, '["~/.cache", "./build"]')
    if not isinstance(value, list):
        raise SettingsError(f"{where.key(name)}: '{name}' must be a list of strings like {like}, "
                            f"not a {describe(value)}.")
    for n, item in enumerate(value, 1):
        if not isinstance(item, str) or not item.strip():
            what = "an empty string" if isinstance(item, str) else f"a {describe(item)}"
            raise SettingsError(f"{where.key(name)}: '{name}' must be a list of non-empty strings like {like}; "
                                f"item {n} is {what}.")
    return [item.strip() for item in value]
