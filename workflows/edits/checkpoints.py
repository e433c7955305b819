"""File checkpoints for ``/rewind``: each file an edit tool (Edit, Write, MultiEdit, NotebookEdit) is about to
change, kept as it was before the user message whose turn changes it, as Claude Code keeps them.

**Recording** (:class:`Checkpoints`, on the tools worker: :func:`workflows.tools.files.write_atomic` calls it
just before a write and just after):

- The turn is the user message the run started from (``SessionRecord.run_prompt_uuid``); a sub-agent's
  edits belong to its parent's message and are kept in the parent session (:func:`for_call`).
- First write wins per message and path (``HSETNX``): a second edit of the file in the same turn, or the
  same step run again after its worker died (execution is at least once), finds the first snapshot and
  keeps it. The file is read only while the message has no snapshot of that path.
- A file's bytes (up to ``MAINSAIL_CHECKPOINT_MAX_BYTES``) are stored once per content
  (``file-blob:{sha256}``); a missing file is kept as ``absent`` (a rewind deletes what was created), a
  larger one as ``too_large`` (a rewind names it and leaves it).
- After the write, the sha256 of what was written becomes the path's *head*: a rewind compares it with
  the file to see changes made since by someone else (a person, an editor, a Bash command).
- The keys are under the session's (``session:{sid}:file-*``): removed with it.

Bash commands' changes are not tracked, as in Claude Code.

**Restoring** (:func:`plan_restore`, :func:`apply_restore`, called by the engine's rewind in the process
that asks for it, which must see the workspace): the state before message M of a path is its earliest
snapshot among the messages from M on, in transcript order (rewound ones included: they came after M).

The Redis side (keys, the first-write-wins script) is :class:`workflows.store.checkpoints.FileCheckpoints`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from workflows.exceptions import SessionNotFound, ToolError
from workflows.permissions.rules import paths
from workflows.store.checkpoints import FileCheckpoints
from workflows.store.resilience import RedisError

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW
ABSENT, FILE, TOO_LARGE = "absent", "file", "too_large"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Checkpoints:
    """Records the files one tool call's writes change, for the message ``turn`` of the session of ``files``."""

    def __init__(self, files: FileCheckpoints, turn: str, max_bytes: int, area: paths.WorkArea) -> None:
        self.files, self.turn, self.max_bytes, self.area = files, turn, max_bytes, area

    def before(self, path: Path) -> None:
        """Keep ``path`` as it is now, unless this message already has it.

        Raises:
            ToolError: it could not be kept (Redis failed): the write does not happen either.
        """
        name = str(path)
        try:
            if self.files.has(self.turn, name):
                return
            snap, data = self._snapshot(path)
            self.files.keep(self.turn, name, snap, data)
        except RedisError as exc:
            raise ToolError(f"Cannot write {path}: its checkpoint for /rewind could not be saved ({exc}). "
                            "Nothing was changed; try again.") from None

    def after(self, path: Path, data: bytes) -> None:
        """``data`` is now at ``path``: the session's latest version of it (best effort: the file changed)."""
        try:
            self.files.set_head(str(path), digest(data))
        except RedisError:
            pass  # a rewind then sees a change it cannot explain, and asks for --force: never a lost write

    def _snapshot(self, path: Path) -> tuple[dict, bytes | None]:
        try:
            fd = paths.open_inside(str(path), self.area, READ_FLAGS)
        except FileNotFoundError:
            return {"state": ABSENT}, None
        except OSError as exc:
            raise ToolError(f"Cannot write {path}: it could not be read for its checkpoint "
                            f"({exc.strerror or exc}).") from None
        try:
            st = os.fstat(fd)
            if st.st_size > self.max_bytes:
                return {"state": TOO_LARGE, "size": st.st_size, "cap": self.max_bytes}, None
            chunks, size = [], 0
            while chunk := os.read(fd, 1 << 20):
                size += len(chunk)
                if size > self.max_bytes:
                    return {"state": TOO_LARGE, "size": size, "cap": self.max_bytes}, None
                chunks.append(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        return {"state": FILE, "sha": digest(data), "size": len(data), "mode": stat.S_IMODE(st.st_mode)}, data


def for_call(store, rec, max_bytes: int) -> Checkpoints | None:
    """The checkpoints of a tool call of ``rec``'s current run; a sub-agent's go to its parent's message. None
    when there is no user message to keep them for (a run without one)."""
    sid, turn = rec.id, rec.run_prompt_uuid
    if rec.parent_session_id:
        try:
            parent = store.get_session(rec.parent_session_id)
        except SessionNotFound:  # (the parent was removed: nothing could rewind it)
            return None
        sid, turn = parent.id, parent.run_prompt_uuid
    if not turn:
        return None
    return Checkpoints(store.file_checkpoints(sid), turn, max_bytes,
                       paths.WorkArea(rec.workspace, rec.additional_directories))


# ----------------------------------------------------------------------------- restoring


@dataclass
class FileChange:
    """What a code rewind does to one path: ``write`` its checkpoint back, ``delete`` it (created since),
    ``none`` (already as it was), or ``skip`` it (``why``). ``moved``: it changed since the session's last
    edit of it, by someone else or a Bash command."""

    path: str
    action: str
    why: str = ""
    sha: str | None = None
    mode: int | None = None
    moved: bool = False


def turns_from(files: FileCheckpoints, entries: list, to: str) -> list[str]:
    """The messages with checkpoints from message ``to`` on (itself included), in transcript order."""
    at = {e.uuid: i for i, e in enumerate(entries)}
    start = at.get(to)
    if start is None:
        return []
    turns = files.turns()
    return sorted((t for t in turns if at.get(t, -1) >= start), key=at.__getitem__)


def plan_restore(files: FileCheckpoints, turns: list[str]) -> list[FileChange]:
    """For each path those messages' checkpoints hold, what bringing it back to its earliest one takes."""
    first: dict[str, dict] = {}
    for turn in turns:
        for name, snap in files.snapshots(turn).items():
            first.setdefault(name, snap)
    heads = files.heads() if first else {}
    return [_change(path, snap, heads.get(path)) for path, snap in sorted(first.items())]


def _change(path: str, snap: dict, head: str | None) -> FileChange:
    try:
        now = _current(path)
    except OSError as exc:
        return FileChange(path, "skip", f"cannot be read now ({exc.strerror or exc})")
    if now == "dir":
        return FileChange(path, "skip", "is a directory now")
    expected = head or snap.get("sha") or ABSENT  # what the session left there (or found, if it never wrote)
    moved = now != expected
    if snap["state"] == TOO_LARGE:
        return FileChange(path, "skip", f"not checkpointed: {snap['size']:,} bytes, over the checkpoint cap of "
                          f"{snap['cap']:,} (MAINSAIL_CHECKPOINT_MAX_BYTES)", moved=moved)
    if snap["state"] == ABSENT:
        return FileChange(path, "none" if now == ABSENT else "delete", moved=moved)
    if now == snap["sha"]:
        return FileChange(path, "none")
    return FileChange(path, "write", sha=snap["sha"], mode=snap.get("mode"), moved=moved)


def _current(path: str) -> str:
    """The sha256 of the file at ``path``, ``absent``, or ``dir`` (links are not followed)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "it is not a regular file now")
    h = hashlib.sha256()
    fd = os.open(path, READ_FLAGS)
    try:
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


def apply_restore(files: FileCheckpoints, changes: list[FileChange], ctx) -> None:
    """Write back or delete what ``changes`` say, in the workspace of tool context ``ctx`` (links are not
    followed; nothing outside it is touched). A path that fails becomes ``skip`` with the reason; heads
    follow, so a later rewind sees these files as the session's."""
    from workflows.tools.files import write_atomic

    for c in changes:
        try:
            if c.action == "write":
                data = files.blob(c.sha)
                if data is None:
                    c.action, c.why = "skip", "its checkpoint's content is missing from Redis"
                    continue
                existed = os.path.lexists(c.path)
                write_atomic(Path(c.path), data, ctx)
                if not existed and c.mode is not None:
                    os.chmod(c.path, c.mode)
                files.set_head(c.path, c.sha)
            elif c.action == "delete":
                _delete(c.path, ctx)
                files.drop_head(c.path)
        except (ToolError, OSError) as exc:
            c.action, c.why = "skip", f"could not be restored: {exc}"


def _delete(path: str, ctx) -> None:
    parent, name = os.path.split(path)
    fd = paths.open_inside(parent, ctx.area, os.O_RDONLY | os.O_DIRECTORY)
    try:
        st = os.lstat(name, dir_fd=fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{path} is not a regular file now")
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)
