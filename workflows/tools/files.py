"""Opening and replacing workspace files safely, for Read, Edit, Write and Grep.

Every path here was resolved by :meth:`ToolContext.resolve` (symlink-free, inside
the workspace), but the file system can change between that check and the open.
So files are opened with :func:`~workflows.permissions.rules.paths.open_inside`
(``O_NOFOLLOW``, and the opened descriptor must still be inside the workspace),
and only regular files are read: a FIFO or a device is refused, never opened
blocking, so a tool cannot hang on one.

:func:`write_atomic` never leaves a half-written file: the new content goes to a
temporary file beside the target, is flushed to disk, and is renamed over the
target in one step. A failure at any point leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from workflows.exceptions import ToolError
from workflows.permissions.rules import paths
from workflows.tools.base import ToolContext

# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused right after, by type).
# O_NOCTTY: opening a terminal device must not make it the worker's controlling terminal.
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
TEMP_PREFIX = ".mainsail-"


def missing_file_error(path: Path | str, ctx: ToolContext) -> ToolError:
    """Claude Code's words (2.1.332), which leave the path to the call the model made."""
    return ToolError(f"File does not exist. Note: your current working directory is {ctx.cwd}.")


def directory_error(path: Path | str) -> ToolError:
    return ToolError(
        f"{path} is a directory, not a file. Use the Glob tool to find files in it, "
        "or Bash `ls` to list it."
    )


def not_regular_error(path: Path | str) -> ToolError:
    return ToolError(
        f"{path} is not a regular file (it is a FIFO, socket or device) and cannot be used as text."
    )


def os_error(action: str, path: Path | str, exc: OSError) -> ToolError:
    """``"Cannot read /ws/a: Permission denied"``, with a hint for a file swapped during the call."""
    if exc.errno == errno.ELOOP:
        return ToolError(
            f"Cannot {action} {path}: it was replaced by a symbolic link after it was checked, "
            "and links are not followed there. Check the file and try again."
        )
    if isinstance(exc, PermissionError) and exc.errno is None:  # open_inside's own refusal
        return ToolError(
            f"Cannot {action} {path}: it now leads outside the session's workspace "
            "(a directory on the way was replaced after it was checked)."
        )
    return ToolError(f"Cannot {action} {path}: {exc.strerror or exc}")


def format_size(n: int) -> str:
    """Bytes as Claude Code writes them in its messages: ``426 bytes``, ``294.4KB``, ``4.9MB``."""
    size = float(n)
    for unit in ("bytes", "KB", "MB"):
        if size < 1024:
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f}".removesuffix(".0") + unit
        size /= 1024
    return f"{size:.1f}".removesuffix(".0") + "GB"


def stat_or_none(path: Path | str) -> os.stat_result | None:
    """``os.stat`` of ``path`` (following links), or None when nothing is there.

    Raises:
        ToolError: the path cannot be examined (too long, permission denied, ...).
    """
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise os_error("examine", path, exc) from None


def open_regular(path: Path, ctx: ToolContext, action: str = "read") -> tuple[int, os.stat_result]:
    """Open resolved ``path`` read-only; return the descriptor and its ``fstat``.

    Raises:
        ToolError: missing, a directory, not a regular file, replaced by a link
            since it was resolved, or unreadable. No descriptor is left open then.
    """
    try:
        fd = paths.open_inside(str(path), ctx.area, READ_FLAGS)
    except FileNotFoundError:
        raise missing_file_error(path, ctx) from None
    except OSError as exc:
        raise os_error(action, path, exc) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise os_error(action, path, exc) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise directory_error(path) if stat.S_ISDIR(st.st_mode) else not_regular_error(path)
    return fd, st


def read_regular(path: Path, ctx: ToolContext, max_bytes: int, action: str = "read") -> tuple[bytes, os.stat_result]:
    """The whole content of regular file ``path``, at most ``max_bytes`` long.

    Raises:
        ToolError: as :func:`open_regular`, or the file is larger than ``max_bytes``.
    """
    fd, st = open_regular(path, ctx, action)
    try:
        if st.st_size > max_bytes:
            raise ToolError(
                f"Cannot {action} {path}: it is {st.st_size:,} bytes, over the limit of {max_bytes:,}. "
                "Use Bash (sed, awk) for a file this large."
            )
        chunks, size = [], 0
        # Read to the end rather than st_size bytes: the file may grow; stop past the limit.
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > max_bytes:
                raise ToolError(f"Cannot {action} {path}: it grew past the limit of {max_bytes:,} bytes.")
            chunks.append(chunk)
        return b"".join(chunks), st
    except OSError as exc:
        raise os_error(action, path, exc) from None
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, ctx: ToolContext) -> float:
    """Replace resolved ``path`` with ``data`` in one step; return the new file's mtime.

    The parent directory is created if missing and opened with ``open_inside``;
    the temporary file is created and renamed relative to that open directory, so
    no directory swapped on the way can redirect either. An existing target keeps
    its permission bits (and, where allowed, its owner).

    Raises:
        ToolError: the target is read-only, not a regular file, was replaced by a
            link, or the write failed (then the old file is untouched and no
            temporary file is left).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        dir_fd = paths.open_inside(str(path.parent), ctx.area, os.O_RDONLY | os.O_DIRECTORY)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(
            f"Cannot write {path}: a part of its directory {path.parent} is a file, not a directory."
        ) from None
    except OSError as exc:
        raise os_error("write", path, exc) from None
    try:
        old = _check_target(path, dir_fd)
        if ctx.checkpoints is not None:  # the file as it was, kept for /rewind before it changes
            ctx.checkpoints.before(path)
        mtime = _replace(path, data, dir_fd, old)
        if ctx.checkpoints is not None:
            ctx.checkpoints.after(path, data)
        return mtime
    except OSError as exc:
        raise os_error("write", path, exc) from None
    finally:
        os.close(dir_fd)


def _check_target(path: Path, dir_fd: int) -> os.stat_result | None:
    """The target's ``lstat`` (None if absent); refuse a link, a non-file, a read-only file."""
    try:
        old = os.lstat(path.name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(old.st_mode):
        raise ToolError(
            f"Cannot write {path}: it was replaced by a symbolic link after it was checked. "
            "Check the file and try again."
        )
    if stat.S_ISDIR(old.st_mode):
        raise directory_error(path)
    if not stat.S_ISREG(old.st_mode):
        raise not_regular_error(path)
    # Renaming over a read-only file would succeed; writing it in place would not. Keep that refusal.
    if not os.access(path.name, os.W_OK, dir_fd=dir_fd):
        raise ToolError(
            f"Cannot write {path}: it is read-only (mode {stat.filemode(old.st_mode)}). "
            "Change its permissions first if it should be written."
        )
    return old


def _replace(path: Path, data: bytes, dir_fd: int, old: os.stat_result | None) -> float:
    tmp = f"{TEMP_PREFIX}{secrets.token_hex(8)}.tmp"  # short: the target's name may be at NAME_MAX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, data)
            if old is not None:
                _keep_owner_and_mode(fd, old)
            os.fsync(fd)
            mtime = os.fstat(fd).st_mtime
        finally:
            os.close(fd)
        _check_target(path, dir_fd)  # again: a link swapped in meanwhile is refused, not replaced
        os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):  # some file systems cannot sync a directory
        os.fsync(dir_fd)  # make the rename itself durable
    return mtime


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _keep_owner_and_mode(fd: int, old: os.stat_result) -> None:
    if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(OSError):  # only root may give a file away; others keep theirs
            os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after fchown, which clears set-id bits
