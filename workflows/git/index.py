"""Whether a file is tracked by git, read from the repository's index file: no git process, no configured program.

Mainsail must not run git on a workspace to decide whether the workspace is trusted (git runs programs a
repository configures). So :func:`tracked` finds the repository the way git does (a ``.git`` directory,
or a ``.git`` file saying ``gitdir: <dir>``, in the directory or one above it) and reads its ``index``
(format versions 2, 3 and 4, SHA-1 or SHA-256 names; a sparse index's directory entries count for the
files under them).

Fail closed: whatever cannot be read or understood (a split index, an unknown version, a truncated file,
a ``.git`` file pointing nowhere) answers :data:`UNKNOWN`, which the caller treats as tracked. The name is
compared without regard to case, as Claude Code's ``git ls-files :(icase)`` does.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

__all__ = ["TRACKED", "UNKNOWN", "UNTRACKED", "git_dir", "tracked"]

TRACKED, UNTRACKED, UNKNOWN = "tracked", "untracked", "unknown"
_MAX_INDEX = 256 * 1024 * 1024  # larger: not read (unknown)
#: Index files already read, by (path, inode, size, mtime, ctime): a session start asks several times.
_READ: dict[tuple, list[str]] = {}


def git_dir(start: Path) -> tuple[Path, Path] | None | str:
    """``(worktree root, git directory)`` of the repository holding ``start``; None outside any
    repository; :data:`UNKNOWN` when a ``.git`` is there but cannot be followed."""
    here = Path(os.path.realpath(start))
    for folder in (here, *here.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return folder, dot
        if dot.is_file():
            try:
                text = dot.read_text(encoding="utf-8", errors="strict").strip()
            except (OSError, UnicodeDecodeError):
                return UNKNOWN
            if not text.startswith("gitdir:"):
                return UNKNOWN
            target = Path(text.removeprefix("gitdir:").strip())
            target = target if target.is_absolute() else folder / target
            return (folder, target) if target.is_dir() else UNKNOWN
        if dot.exists() or dot.is_symlink():
            return UNKNOWN
    return None


def tracked(path: Path) -> str:
    """:data:`TRACKED`, :data:`UNTRACKED` (also: not in a repository) or :data:`UNKNOWN` for ``path``."""
    found = git_dir(Path(path).parent if not Path(path).is_dir() else Path(path))
    if found is None:
        return UNTRACKED
    if found == UNKNOWN:
        return UNKNOWN
    root, gdir = found
    try:
        rel = os.path.relpath(os.path.join(os.path.realpath(Path(path).parent), Path(path).name), root)
    except ValueError:
        return UNKNOWN
    if rel.startswith(".."):
        return UNKNOWN
    index = gdir / "index"
    try:
        st = index.stat()
    except FileNotFoundError:
        return UNTRACKED  # a repository with nothing added yet
    except OSError:
        return UNKNOWN
    stamp = (str(index), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    names = _READ.get(stamp)
    if names is None:
        try:
            if st.st_size > _MAX_INDEX:
                return UNKNOWN
            names = _entries(index.read_bytes(), _hash_size(gdir))
        except (OSError, ValueError, struct.error, IndexError):
            return UNKNOWN
        if len(_READ) > 64:
            _READ.clear()
        _READ[stamp] = names
    want = rel.replace(os.sep, "/").casefold()
    for name in names:
        folded = name.casefold()
        if folded == want or (folded.endswith("/") and want.startswith(folded)):
            return TRACKED
    return UNTRACKED


def _hash_size(gdir: Path) -> int:
    """20 (SHA-1) unless the repository's config names ``objectformat = sha256``."""
    for config in (gdir / "config", gdir / "commondir"):
        try:
            text = config.read_text(encoding="utf-8", errors="replace").lower()
        except OSError:
            continue
        if "objectformat" in text and "sha256" in text:
            return 32
    return 20


def _entries(data: bytes, hash_size: int) -> list[str]:
    """Every path name in an index file (raises ValueError on anything not understood)."""
    if len(data) < 12 or data[:4] != b"DIRC":
        raise ValueError("not an index file")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        raise ValueError(f"index version {version}")
    pos, names, previous = 12, [], b""
    fixed = 40 + hash_size  # ctime, mtime, dev, ino, mode, uid, gid, size (10 x 4 bytes), then the object name
    for _ in range(count):
        start = pos
        flags = struct.unpack(">H", data[pos + fixed:pos + fixed + 2])[0]
        pos += fixed + 2
        if flags & 0x4000:
            if version < 3:
                raise ValueError("extended flags in a version 2 index")
            pos += 2
        if version == 4:
            strip, pos = _varint(data, pos)
            end = data.index(b"\0", pos)
            if strip > len(previous):
                raise ValueError("bad prefix length")
            name = previous[:len(previous) - strip] + data[pos:end]
            pos = end + 1
        else:
            end = data.index(b"\0", pos)
            name = data[pos:end]
            pos = start + ((end - start) // 8 + 1) * 8  # 1-8 NULs pad the entry to a multiple of 8
        if pos > len(data):
            raise ValueError("truncated entry")
        names.append(name.decode("utf-8", errors="replace"))
        previous = name
    if data[pos:pos + 4] == b"link":
        raise ValueError("a split index: the entries are in another file")
    return names


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Git's offset varint (index v4's prefix length)."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos
