"""Read, Edit, Write on a hostile file system: atomic writes, symlink swaps, FIFOs, huge files."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from workflows.permissions.rules import paths
from workflows.tools import ToolContext
from workflows.tools import files as files_mod
from workflows.tools import run_tool


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws):
    return ToolContext(workspace=ws)


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("top secret\n")
    return path


def read(ctx, path):
    out = run_tool("Read", {"file_path": str(path)}, ctx)
    assert not out.is_error, out.content
    return out


def leftovers(directory):
    return [p.name for p in directory.iterdir() if p.name.startswith(files_mod.TEMP_PREFIX)]


# ------------------------------------------------------------------ atomic writes


@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_a_failed_replace_leaves_the_old_file_and_no_temp_file(ws, ctx, monkeypatch, tool):
    f = ws / "f.txt"
    f.write_text("original\n")
    read(ctx, f)

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    raw = {"file_path": str(f), "content": "new\n"} if tool == "Write" else {
        "file_path": str(f), "old_string": "original", "new_string": "new"}
    out = run_tool(tool, raw, ctx)
    assert out.is_error and f"Cannot write {f}: No space left on device" in out.content
    assert f.read_bytes() == b"original\n"
    assert leftovers(ws) == []


def test_a_write_failing_half_way_leaves_the_old_file(ws, ctx, monkeypatch):
    f = ws / "f.txt"
    f.write_text("original\n" * 100)
    read(ctx, f)

    def half_then_fail(fd, data):
        os.write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(files_mod, "_write_all", half_then_fail)
    out = run_tool("Write", {"file_path": str(f), "content": "x" * 5000}, ctx)
    assert out.is_error and "Input/output error" in out.content
    assert f.read_text() == "original\n" * 100
    assert leftovers(ws) == []


def test_write_and_edit_keep_the_mode_bits(ws, ctx):
    f = ws / "run.sh"
    f.write_text("echo hi\n")
    f.chmod(0o751)
    read(ctx, f)
    assert not run_tool("Write", {"file_path": str(f), "content": "echo hey\n"}, ctx).is_error
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o751
    assert not run_tool("Edit", {"file_path": str(f), "old_string": "hey", "new_string": "ho"}, ctx).is_error
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o751
    assert f.read_text() == "echo ho\n"
    assert leftovers(ws) == []


def test_a_new_file_gets_the_usual_mode(ws, ctx):
    umask = os.umask(0o022)
    try:
        assert not run_tool("Write", {"file_path": str(ws / "n.txt"), "content": "x"}, ctx).is_error
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(ws / "n.txt").st_mode) == 0o644


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
def test_a_read_only_file_is_not_replaced(ws, ctx):
    f = ws / "ro.txt"
    f.write_text("keep\n")
    f.chmod(0o444)
    read(ctx, f)
    out = run_tool("Write", {"file_path": str(f), "content": "new"}, ctx)
    assert out.is_error and "read-only" in out.content
    assert f.read_text() == "keep\n"


def test_write_keeps_a_symlink_inside_the_workspace_pointing_at_the_new_content(ws, ctx):
    real = ws / "real.txt"
    real.write_text("old\n")
    (ws / "link.txt").symlink_to(real)
    read(ctx, ws / "link.txt")
    assert not run_tool("Write", {"file_path": str(ws / "link.txt"), "content": "new\n"}, ctx).is_error
    assert (ws / "link.txt").is_symlink() and real.read_text() == "new\n"


# ------------------------------------------------------------------ symlinks swapped in after the check


class SwappingContext(ToolContext):
    """Resolves like the real context, then swaps ``victim`` for a link to ``target`` (a race)."""

    victim = None
    target = None

    def resolve(self, path, what="path"):
        real = super().resolve(path, what)
        if self.victim is not None:
            if self.victim.is_dir() and not self.victim.is_symlink():
                for child in self.victim.iterdir():
                    child.unlink()
                self.victim.rmdir()
            elif self.victim.exists() or self.victim.is_symlink():
                self.victim.unlink()
            self.victim.symlink_to(self.target)
            self.victim = None
        return real


@pytest.fixture
def racy(ws):
    return SwappingContext(workspace=ws)


def test_a_link_to_outside_is_refused_by_resolve(ws, ctx, secret):
    (ws / "link.txt").symlink_to(secret)
    for tool, raw in (("Read", {"file_path": "link.txt"}),
                      ("Edit", {"file_path": "link.txt", "old_string": "top", "new_string": "x"}),
                      ("Write", {"file_path": "link.txt", "content": "x"})):
        out = run_tool(tool, raw, ctx)
        assert out.is_error and "outside the session's workspace" in out.content
    assert secret.read_text() == "top secret\n"


def test_read_refuses_a_link_swapped_in_after_resolve(ws, racy, secret):
    (ws / "a.txt").write_text("harmless\n")
    racy.victim, racy.target = ws / "a.txt", secret
    out = run_tool("Read", {"file_path": "a.txt"}, racy)
    assert out.is_error and "replaced by a symbolic link" in out.content
    assert "top secret" not in out.content


def test_edit_refuses_a_link_swapped_in_after_resolve(ws, racy, secret):
    f = ws / "a.txt"
    f.write_text("top\n")
    racy.files_read.set(str(f), 1e12)  # "read", and fresh even through the link: the open must refuse
    racy.victim, racy.target = f, secret
    out = run_tool("Edit", {"file_path": "a.txt", "old_string": "top", "new_string": "pwned"}, racy)
    assert out.is_error and "replaced by a symbolic link" in out.content
    assert secret.read_text() == "top secret\n"


def test_write_refuses_a_link_swapped_in_after_resolve(ws, racy, secret):
    f = ws / "a.txt"
    f.write_text("old\n")
    racy.files_read.set(str(f), 1e12)  # "read", and fresh even through the link: the write must refuse
    racy.victim, racy.target = f, secret
    out = run_tool("Write", {"file_path": "a.txt", "content": "pwned"}, racy)
    assert out.is_error and "replaced by a symbolic link" in out.content
    assert secret.read_text() == "top secret\n"
    assert leftovers(ws) == []


def test_write_refuses_a_directory_swapped_for_a_link_after_resolve(ws, racy, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "sub").mkdir()
    racy.victim, racy.target = ws / "sub", outside
    out = run_tool("Write", {"file_path": "sub/new.txt", "content": "pwned"}, racy)
    assert out.is_error
    assert list(outside.iterdir()) == []


def test_open_inside_refuses_a_symlink_at_the_last_component(ws, secret):
    (ws / "link.txt").symlink_to(secret)
    with pytest.raises(OSError) as info:
        paths.open_inside(str(ws / "link.txt"), str(ws), files_mod.READ_FLAGS)
    assert info.value.errno == errno.ELOOP


# ------------------------------------------------------------------ odd files


@pytest.mark.timeout(20)
def test_read_and_edit_of_a_fifo_do_not_block(ws, ctx):
    os.mkfifo(ws / "pipe")
    out = run_tool("Read", {"file_path": str(ws / "pipe")}, ctx)
    assert out.is_error and "not a regular file" in out.content
    ctx.files_read.set(str(ws / "pipe"), 1e12)
    out = run_tool("Edit", {"file_path": str(ws / "pipe"), "old_string": "a", "new_string": "b"}, ctx)
    assert out.is_error and "not a regular file" in out.content
    out = run_tool("Write", {"file_path": str(ws / "pipe"), "content": "b"}, ctx)
    assert out.is_error and "not a regular file" in out.content
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may read any file")
def test_unreadable_file(ws, ctx):
    f = ws / "locked.txt"
    f.write_text("x\n")
    f.chmod(0)
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    assert out.is_error and f"Cannot read {f}: Permission denied" in out.content


def test_a_path_too_long_is_an_error(ws, ctx):
    for tool, raw in (("Read", {"file_path": "a/" * 3000}), ("Write", {"file_path": "b" * 300, "content": "x"}),
                      ("Edit", {"file_path": "c" * 300, "old_string": "", "new_string": "x"})):
        out = run_tool(tool, raw, ctx)
        assert out.is_error and "File name too long" in out.content, out.content


def test_huge_offset_and_limit(ws, ctx):
    f = ws / "f.txt"
    f.write_text("".join(f"L{i}\n" for i in range(1, 11)))
    out = run_tool("Read", {"file_path": str(f), "offset": 10**30}, ctx)
    assert not out.is_error and "shorter than the provided offset" in out.content and "11 lines" in out.content
    out = run_tool("Read", {"file_path": str(f), "offset": 9, "limit": 10**30}, ctx)
    assert out.content == "9\tL9\n10\tL10\n11\t"


def test_a_huge_line_is_not_read_whole(ws, ctx, monkeypatch):
    f = ws / "min.js"
    f.write_bytes(b"x" * 3_000_000 + b"\nsecond\nthird")
    out = run_tool("Read", {"file_path": str(f), "limit": 3}, ctx)  # without a limit: over 256 KB, refused
    lines = out.content.splitlines()
    assert lines[0].startswith("1\t" + "x" * 2000 + "... [line truncated: about ")
    assert lines[1:] == ["2\tsecond", "3\tthird"]


def test_line_count_past_the_window_matches_numbered_lines(ws, ctx):
    from workflows.tools.read import numbered_lines

    for text, total in (("a\nb\nc", 3), ("a\nb\nc\n", 4), ("a\n\n\n", 4), ("a\r\nb\r", 2), ("a", 1)):
        f = ws / "f.txt"
        f.write_text(text, newline="")
        assert len(numbered_lines(text)) == total
        for limit in (1, 2, 10):
            out = run_tool("Read", {"file_path": str(f), "limit": limit}, ctx)
            assert out.content.startswith("1\ta") and out.result["file"]["totalLines"] == total, (text, out.content)
            assert out.result["file"]["numLines"] == min(limit, total)


def test_edit_refuses_a_file_over_its_size_limit(ws, ctx, monkeypatch):
    from workflows.tools import edit

    monkeypatch.setattr(edit, "MAX_EDIT_BYTES", 100)
    f = ws / "big.txt"
    f.write_text("y" * 200)
    read(ctx, f)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "y", "new_string": "z", "replace_all": True}, ctx)
    assert out.is_error and "over the limit" in out.content
    assert f.read_text() == "y" * 200


def test_write_under_a_file_is_a_clear_error(ws, ctx):
    (ws / "a.txt").write_text("x\n")
    out = run_tool("Write", {"file_path": "a.txt/b.txt", "content": "y"}, ctx)
    assert out.is_error and "is a file, not a directory" in out.content
    assert (ws / "a.txt").read_text() == "x\n"
