"""Claude Code's copy of each transcript: a JSONL file where Claude Code keeps its own sessions.

The transcript itself is the session's Redis stream; this file is a copy, kept so that Claude Code and
the Agent SDK find Mainsail's sessions (``claude --resume <id>``, the SDK's ``list_sessions`` and
``get_session_messages``). Its place is decided once, by the front door that makes the session, on the
machine of the person it runs for (:func:`session_file`: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, then
``projects/<the workspace, sanitized as Claude Code does>/<session id>.jsonl``; a sub-agent's under its
parent's ``<id>/subagents/agent-<child id>.jsonl``), and recorded in the session with that machine's name.

Every landed commit that appended entries calls :meth:`ClaudeCopy.__call__` (the committer's one hook:
``Committer.copies``) in the process that committed it, when that process runs on the recorded machine
(a worker elsewhere writes nothing; the next commit made here catches the file up). Writing is
idempotent, each entry written once: under an exclusive lock on the file, entries whose uuid the file
already holds are skipped; when the file does not end with the first new entry's parent (a commit made
elsewhere, a crash between commit and write, Claude Code's own lines after a ``claude --resume``), the
whole stream is compared with the whole file and what the file lacks is appended, in order. Lines
Claude Code appended are never rewritten. A file that cannot be written is logged once, never raised:
the commit has landed, and the transcript is safe in Redis (``mainsail export`` writes it whole).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import socket
from collections.abc import Callable, Mapping
from pathlib import Path

from workflows.models import SessionRecord

log = logging.getLogger(__name__)

#: The end of the file read to find what it ends with.
TAIL_BYTES = 65536
_MAX_SANITIZED = 200
#: Files this process wrote last: path -> (their size then, the last entry written, the entries of that write).
#: A file still of that size needs no read at the next commit (the steps of one turn, one after the other).
_ENDS: dict[str, tuple[int, str, set[str]]] = {}
ENDS_KEPT = 1000
_SANITIZE = re.compile(r"[^a-zA-Z0-9]")


def host() -> str:
    """This machine's name, as recorded with a session's copy."""
    return socket.gethostname()


def projects_dir(home: str, environ: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its projects' transcripts: ``$CLAUDE_CONFIG_DIR/projects`` or ``~/.claude/projects``."""
    config = environ.get("CLAUDE_CONFIG_DIR")
    return Path(config or Path(home) / ".claude") / "projects"


def _hash36(text: str) -> str:
    """Claude Code's 32-bit string hash (JavaScript's ``h = (h << 5) - h + c | 0``), in base 36."""
    h = 0
    for ch in text:
        h = ((h << 5) - h + ord(ch)) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while True:
        h, r = divmod(h, 36)
        out = digits[r] + out
        if not h:
            return out


def project_key(workspace: str) -> str:
    """A workspace's folder name under ``projects/``: every character but ASCII letters and digits becomes
    ``-``; past 200 characters, cut there and suffixed with a hash of the whole path (as Claude Code does)."""
    key = _SANITIZE.sub("-", workspace)
    return key if len(key) <= _MAX_SANITIZED else f"{key[:_MAX_SANITIZED]}-{_hash36(workspace)}"


def session_file(home: str, environ: Mapping[str, str], workspace: str, sid: str) -> str:
    """The copy of session ``sid`` in ``workspace`` for the person whose home and environment these are."""
    return str(projects_dir(home, environ) / project_key(workspace) / f"{sid}.jsonl")


def child_file(parent_file: str, child_id: str) -> str:
    """A sub-agent's copy: ``<parent session's id>/subagents/agent-<child id>.jsonl`` beside the main
    session's file (a sub-agent's sub-agent goes in the same folder)."""
    parent = Path(parent_file)
    folder = parent.parent if parent.parent.name == "subagents" else parent.with_suffix("") / "subagents"
    return str(folder / f"agent-{child_id}.jsonl")


class ClaudeCopy:
    """The committer's hook writing Claude Code's copy of a session (see the module docstring);
    ``read_entries(sid)``: the session's whole transcript (the store's)."""

    def __init__(self, read_entries: Callable[[str], list]) -> None:
        self.read_entries = read_entries
        self._host = host()
        self._failed: set[str] = set()  # files whose failure was logged (once each)

    def __call__(self, rec: SessionRecord, entries: list) -> None:
        path = rec.claude_transcript
        if not (path and entries) or rec.claude_host != self._host:
            return
        try:
            write(path, rec, entries, lambda: self.read_entries(rec.id))
        except (OSError, ValueError) as exc:
            if path not in self._failed:
                self._failed.add(path)
                log.warning("Could not write Claude Code's copy of session %s to %s: %s (the transcript is "
                            "safe in Redis; `mainsail export %s` writes it)", rec.id[:8], path, exc, rec.id[:8])


def write(path: str, rec: SessionRecord, entries: list, read_all: Callable[[], list]) -> int:
    """Append to ``path`` the lines of the ``entries`` it lacks (all the stream's it lacks when it does not end
    where they start); the number of entries written. Idempotent; see the module docstring."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "r+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        known = _ENDS.get(path)
        if known is not None and known[0] == size:  # nobody wrote since this process did: no read
            _, last, seen = known
            torn = False
        else:
            seen, last, torn = _scan(f, max(0, size - TAIL_BYTES), size)
        todo = [e for e in entries if e.uuid not in seen]
        if not todo:
            return 0
        if todo[0].parent_uuid != last:  # not where the file ends: compare it all
            seen, _, torn = _scan(f, 0, size)
            todo = [e for e in read_all() if e.uuid not in seen]
        from workflows.context.claude_lines import claude_lines  # (the request builder's: a client opening a
        # session, which only needs projects_dir, does not load it)

        text = "".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n"
                       for line in claude_lines(todo, rec))
        f.write((b"\n" if torn else b"") + text.encode("utf-8", "replace"))
        f.flush()
        if len(_ENDS) > ENDS_KEPT:
            _ENDS.clear()
        _ENDS[path] = (os.fstat(fd).st_size, todo[-1].uuid, {e.uuid for e in todo})
        return len(todo)


def _scan(f, start: int, end: int) -> tuple[set[str], str | None, bool]:
    """The uuids of the lines in bytes ``start..end`` of ``f``, the last one, and whether the last line is torn
    (a writer stopped mid-line: the next line must start on a line of its own)."""
    f.seek(start)
    data = f.read(end - start)
    rows = data.split(b"\n")
    if start:
        rows = rows[1:]  # the first is a part of a line
    seen: set[str] = set()
    last = None
    for row in rows:
        if not row.strip():
            continue
        try:
            obj = json.loads(row)
        except ValueError:
            continue
        uid = obj.get("uuid") if isinstance(obj, dict) else None
        if isinstance(uid, str):
            seen.add(uid)
            last = uid
    return seen, last, bool(data) and not data.endswith(b"\n")


__all__ = ["ClaudeCopy", "child_file", "host", "project_key", "projects_dir", "session_file", "write"]
