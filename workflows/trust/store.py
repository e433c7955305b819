"""``~/.mainsail/trust.json``: the workspaces the person trusted, each with the content it was trusted for.

One record per workspace (its physical path)::

    {"version": 1, "workspaces": {"/home/me/proj": {
        "hash": "<sha256 of the gated settings>", "content": {".claude/settings.json": {"hooks": ...}, ...},
        "trusted_at": 1764300000.0, "by": "--trust-project"}}}

``content`` is what the person vouched for, kept so that a change can be named ("MCP server files: its
command was ..., now ..."). The file is the user's own data: created readable by the user alone (0600),
rewritten whole through a temporary file and ``os.replace`` under an exclusive lock, so two sessions
starting at once never lose each other's record. A project file never names a trusted workspace.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from workflows.exceptions import ConfigurationError

__all__ = ["TrustRecord", "TrustStore"]


class TrustRecord(dict):
    """One workspace's record (``hash``, ``content``, ``trusted_at``, ``by``)."""

    @property
    def hash(self) -> str:
        return str(self.get("hash", ""))

    @property
    def content(self) -> dict:
        value = self.get("content")
        return value if isinstance(value, dict) else {}


class TrustStore:
    def __init__(self, home: Path) -> None:
        self.path = Path(home) / ".mainsail" / "trust.json"

    def get(self, workspace: str) -> TrustRecord | None:
        found = self._read().get(os.path.realpath(workspace))
        return TrustRecord(found) if isinstance(found, dict) else None

    def put(self, workspace: str, digest: str, content: dict, by: str) -> None:
        """Record that ``workspace`` is trusted for the gated settings ``content`` (hash ``digest``)."""
        with self._locked():
            data = self._read()
            data[os.path.realpath(workspace)] = {"hash": digest, "content": content, "trusted_at": time.time(),
                                                 "by": by}
            self._write(data)

    def _read(self) -> dict:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"Cannot read {self.path} ({getattr(exc, 'strerror', None) or exc}): it records "
                                     "the workspaces you trusted. Fix its permissions, or move it aside (every "
                                     "workspace is then untrusted until you trust it again).") from None
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{self.path} is not valid JSON (line {exc.lineno}: {exc.msg}): it records the "
                                     "workspaces you trusted. Move it aside (every workspace is then untrusted "
                                     "until you trust it again).") from None
        workspaces = data.get("workspaces") if isinstance(data, dict) else None
        return workspaces if isinstance(workspaces, dict) else {}

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(str(self.path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, workspaces: dict) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".trust.json.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": 1, "workspaces": workspaces}, fh, indent=2, sort_keys=True)
                fh.write("\n")
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
