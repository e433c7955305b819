"""Glob and Grep: matching, ordering, modes, filters, confinement."""

from __future__ import annotations

import os

import pytest

from workflows.tools import ToolContext, run_tool, tool_schemas
from workflows.tools.glob import glob_regex


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws):
    return ToolContext(workspace=ws)


def make(path, text="", mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def tree(ws):
    base = 1_700_000_000
    make(ws / "old.py", "import os\nprint('old')\n", base)
    make(ws / "src" / "mid.py", "def f():\n    return 'TODO fix'\n", base + 100)
    make(ws / "src" / "deep" / "new.py", "# todo: newest\nx = 1\n", base + 200)
    make(ws / "src" / "app.ts", "const x = 1; // TODO\n", base + 50)
    make(ws / "src" / "view.tsx", "export const V = () => null; // TODO\n", base + 60)
    make(ws / "README.md", "# Readme\nTODO: docs\n", base + 10)
    make(ws / ".git" / "config.py", "TODO in git\n", base + 300)
    (ws / "blob.bin").write_bytes(b"TODO\x00\x01\x02")
    return ws


# ------------------------------------------------------------------ glob patterns


@pytest.mark.parametrize(
    "pattern, path, ok",
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src/deep/a.py", True),
        ("src/*.{ts,tsx}", "src/a.tsx", True),
        ("src/*.{ts,tsx}", "src/a.js", False),
        ("file?.txt", "file1.txt", True),
        ("file[0-9].txt", "fileA.txt", False),
        ("file[!0-9].txt", "fileA.txt", True),
    ],
)
def test_glob_regex(pattern, path, ok):
    assert bool(glob_regex(pattern).fullmatch(path)) is ok


# ------------------------------------------------------------------ Glob


def test_glob_recursive_newest_first_absolute_paths(tree, ctx):
    out = run_tool("Glob", {"pattern": "**/*.py"}, ctx)
    assert not out.is_error
    assert out.content.splitlines() == [
        str(tree / "src" / "deep" / "new.py"),
        str(tree / "src" / "mid.py"),
        str(tree / "old.py"),
    ]
    assert out.display == "Found 3 files"


def test_glob_top_level_only_and_braces(tree, ctx):
    assert run_tool("Glob", {"pattern": "*.py"}, ctx).content == str(tree / "old.py")
    out = run_tool("Glob", {"pattern": "src/*.{ts,tsx}"}, ctx)
    assert out.content.splitlines() == [str(tree / "src" / "view.tsx"), str(tree / "src" / "app.ts")]


def test_glob_with_path(tree, ctx):
    out = run_tool("Glob", {"pattern": "*.py", "path": str(tree / "src")}, ctx)
    assert out.content == str(tree / "src" / "mid.py")
    out = run_tool("Glob", {"pattern": "**/*.py", "path": "src/deep"}, ctx)
    assert out.content == str(tree / "src" / "deep" / "new.py")


def test_glob_absolute_pattern_inside_workspace(tree, ctx):
    out = run_tool("Glob", {"pattern": f"{tree}/src/**/*.py"}, ctx)
    assert set(out.content.splitlines()) == {str(tree / "src" / "mid.py"), str(tree / "src" / "deep" / "new.py")}


def test_glob_skips_git(tree, ctx):
    out = run_tool("Glob", {"pattern": "**/config.py"}, ctx)
    assert out.content == "No files found"
    assert out.display == "Found 0 files"


def test_glob_truncates_at_100(ws, ctx):
    for i in range(105):
        make(ws / f"f{i:03}.txt", "", 1_700_000_000 + i)
    out = run_tool("Glob", {"pattern": "*.txt"}, ctx)
    lines = out.content.splitlines()
    assert lines[0] == str(ws / "f104.txt")
    assert len([l for l in lines if l.startswith("/")]) == 100
    assert lines[-1] == "(Results are truncated. Consider using a more specific path or pattern.)"
    assert out.display == "Found 105 files"


def test_glob_path_errors(tree, ctx):
    out = run_tool("Glob", {"pattern": "*", "path": str(tree / "nope")}, ctx)
    assert out.is_error and "does not exist" in out.content
    out = run_tool("Glob", {"pattern": "*", "path": str(tree / "old.py")}, ctx)
    assert out.is_error and "not a directory" in out.content


def test_glob_outside_workspace(ws, ctx, tmp_path):
    make(tmp_path / "outside" / "secret.py", "x")
    for raw in (
        {"pattern": "*.py", "path": str(tmp_path / "outside")},
        {"pattern": "*.py", "path": "../outside"},
        {"pattern": "../outside/*.py"},
        {"pattern": f"{tmp_path}/outside/*.py"},
    ):
        out = run_tool("Glob", raw, ctx)
        assert out.is_error, raw
        assert "outside the session's workspace" in out.content
        assert "secret.py" not in out.content
    (ws / "link").symlink_to(tmp_path / "outside")
    out = run_tool("Glob", {"pattern": "*.py", "path": str(ws / "link")}, ctx)
    assert out.is_error and "outside the session's workspace" in out.content
    # walking the workspace neither follows the link nor lists files behind it
    (ws / "secret_link.py").symlink_to(tmp_path / "outside" / "secret.py")
    out = run_tool("Glob", {"pattern": "**/*.py"}, ctx)
    assert "secret" not in out.content


def test_glob_malformed(ctx):
    for raw, phrase in (({}, "pattern"), ({"pattern": 3}, "pattern"), ({"pattern": "*", "x": 1}, "x")):
        out = run_tool("Glob", raw, ctx)
        assert out.is_error and phrase in out.content


# ------------------------------------------------------------------ Grep


def test_grep_schema_has_dash_names():
    grep = next(s for s in tool_schemas() if s["name"] == "Grep")
    props = grep["input_schema"]["properties"]
    for name in ("-i", "-n", "-A", "-B", "-C"):
        assert name in props
    for name in ("i", "n", "A", "B", "C"):
        assert name not in props
    assert {"pattern", "path", "glob", "output_mode", "head_limit", "type"} <= set(props)
    assert props["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert props["output_mode"]["default"] == "files_with_matches"
    assert grep["input_schema"]["required"] == ["pattern"]


def test_grep_files_with_matches_default_newest_first(tree, ctx):
    out = run_tool("Grep", {"pattern": "TODO"}, ctx)
    assert not out.is_error
    lines = out.content.splitlines()
    assert lines[0] == "Found 4 files"
    assert lines[1:] == [
        str(tree / "src" / "mid.py"),
        str(tree / "src" / "view.tsx"),
        str(tree / "src" / "app.ts"),
        str(tree / "README.md"),
    ]  # no .git, no binary, case-sensitive
    assert out.display == "Found 4 files"


def test_grep_case_insensitive(tree, ctx):
    out = run_tool("Grep", {"pattern": "todo", "-i": True}, ctx)
    assert out.content.startswith("Found 5 files")
    assert str(tree / "src" / "deep" / "new.py") in out.content
    out = run_tool("Grep", {"pattern": "todo"}, ctx)
    assert out.content.startswith("Found 1 file\n")


def test_grep_populate_by_name(tree, ctx):
    out = run_tool("Grep", {"pattern": "todo", "i": True}, ctx)
    assert out.content.startswith("Found 5 files")


def test_grep_glob_and_type_filters(tree, ctx):
    out = run_tool("Grep", {"pattern": "TODO", "glob": "*.{ts,tsx}"}, ctx)
    assert sorted(out.content.splitlines()[1:]) == [str(tree / "src" / "app.ts"), str(tree / "src" / "view.tsx")]
    out = run_tool("Grep", {"pattern": "TODO", "glob": "src/*.ts"}, ctx)
    assert out.content.splitlines()[1:] == [str(tree / "src" / "app.ts")]
    out = run_tool("Grep", {"pattern": "TODO", "type": "py"}, ctx)
    assert out.content.splitlines()[1:] == [str(tree / "src" / "mid.py")]
    out = run_tool("Grep", {"pattern": "TODO", "type": "md"}, ctx)
    assert out.content.splitlines()[1:] == [str(tree / "README.md")]
    out = run_tool("Grep", {"pattern": "TODO", "type": "cobol85"}, ctx)
    assert out.is_error and "Unknown file type" in out.content


def test_grep_content_mode(tree, ctx):
    out = run_tool("Grep", {"pattern": "TODO", "output_mode": "content", "type": "py"}, ctx)
    assert out.content == f"{tree / 'src' / 'mid.py'}:    return 'TODO fix'"
    out = run_tool("Grep", {"pattern": "TODO", "output_mode": "content", "type": "py", "-n": True}, ctx)
    assert out.content == f"{tree / 'src' / 'mid.py'}:2:    return 'TODO fix'"
    assert out.display == "Found 1 line"


def test_grep_content_context_and_separators(ws, ctx):
    f = make(ws / "c.txt", "".join(f"{'HIT' if i in (3, 10) else 'x'} {i}\n" for i in range(1, 13)))
    out = run_tool("Grep", {"pattern": "HIT", "output_mode": "content", "-n": True, "-C": 1}, ctx)
    p = str(f)
    assert out.content.splitlines() == [
        f"{p}-2-x 2",
        f"{p}:3:HIT 3",
        f"{p}-4-x 4",
        "--",
        f"{p}-9-x 9",
        f"{p}:10:HIT 10",
        f"{p}-11-x 11",
    ]
    out = run_tool("Grep", {"pattern": "HIT", "output_mode": "content", "-n": True, "-A": 1, "-B": 0}, ctx)
    assert out.content.splitlines() == [f"{p}:3:HIT 3", f"{p}-4-x 4", "--", f"{p}:10:HIT 10", f"{p}-11-x 11"]
    out = run_tool("Grep", {"pattern": "HIT", "output_mode": "content", "-B": 2}, ctx)
    assert out.content.splitlines()[:3] == [f"{p}-x 1", f"{p}-x 2", f"{p}:HIT 3"]


def test_grep_adjacent_context_groups_merge(ws, ctx):
    f = make(ws / "c.txt", "HIT\nx\nHIT\n")
    out = run_tool("Grep", {"pattern": "HIT", "output_mode": "content", "-C": 1}, ctx)
    assert "--" not in out.content.splitlines()
    assert out.content.splitlines() == [f"{f}:HIT", f"{f}-x", f"{f}:HIT"]


def test_grep_count_mode(tree, ctx):
    make(tree / "src" / "many.py", "TODO\nTODO\nno\nTODO\n")
    out = run_tool("Grep", {"pattern": "TODO", "output_mode": "count", "type": "py"}, ctx)
    rows = out.content.split("\n\n")[0].splitlines()
    assert rows == [f"{tree / 'src' / 'many.py'}:3", f"{tree / 'src' / 'mid.py'}:1"]
    assert "4 total occurrences" in out.content


def test_grep_head_limit(tree, ctx):
    out = run_tool("Grep", {"pattern": "TODO", "head_limit": 2}, ctx)
    assert out.content.splitlines()[0] == "Found 2 files"
    assert len(out.content.splitlines()) == 3
    make(tree / "many.txt", "".join("m\n" for _ in range(50)))
    out = run_tool("Grep", {"pattern": "^m$", "output_mode": "content", "head_limit": 5}, ctx)
    assert len(out.content.splitlines()) == 5
    out = run_tool("Grep", {"pattern": "TODO", "output_mode": "count", "head_limit": 1}, ctx)
    assert len(out.content.split("\n\n")[0].splitlines()) == 1


def test_grep_single_file_path(tree, ctx):
    out = run_tool("Grep", {"pattern": "import", "path": "old.py", "output_mode": "content", "-n": True}, ctx)
    assert out.content == f"{tree / 'old.py'}:1:import os"


def test_grep_no_matches(tree, ctx):
    assert run_tool("Grep", {"pattern": "zzz_nothing"}, ctx).content == "No files found"
    out = run_tool("Grep", {"pattern": "zzz_nothing", "output_mode": "content"}, ctx)
    assert out.content == "No matches found" and not out.is_error
    assert run_tool("Grep", {"pattern": "zzz", "output_mode": "count"}, ctx).content == "No matches found"


def test_grep_invalid_regex(tree, ctx):
    out = run_tool("Grep", {"pattern": "foo(["}, ctx)
    assert out.is_error
    assert "Invalid regex" in out.content and "foo([" in out.content


def test_grep_multiline(ws, ctx):
    f = make(ws / "m.py", "def a():\n    pass\ndef b():\n    return 1\n")
    out = run_tool("Grep", {"pattern": r"def b\(\):\n\s+return", "multiline": True, "output_mode": "content", "-n": True}, ctx)
    assert out.content.splitlines() == [f"{f}:3:def b():", f"{f}:4:    return 1"]
    out = run_tool("Grep", {"pattern": r"def b\(\):\n\s+return"}, ctx)
    assert out.content == "No files found"


def test_grep_output_capped(ws, ctx):
    ctx.max_output_chars = 500
    make(ws / "big.txt", "".join(f"match {i}\n" for i in range(200)))
    out = run_tool("Grep", {"pattern": "match", "output_mode": "content"}, ctx)
    assert "output truncated" in out.content
    assert len(out.content) < 700


def test_grep_outside_workspace(ws, ctx, tmp_path):
    make(tmp_path / "outside" / "secret.txt", "password=hunter2\n")
    for path in (str(tmp_path / "outside"), "../outside", str(tmp_path / "outside" / "secret.txt")):
        out = run_tool("Grep", {"pattern": "password", "path": path, "output_mode": "content"}, ctx)
        assert out.is_error and "outside the session's workspace" in out.content
        assert "hunter2" not in out.content
    (ws / "dirlink").symlink_to(tmp_path / "outside")
    out = run_tool("Grep", {"pattern": "password", "path": str(ws / "dirlink")}, ctx)
    assert out.is_error and "outside the session's workspace" in out.content
    # a file symlink inside the workspace pointing out is skipped while walking
    (ws / "filelink.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    out = run_tool("Grep", {"pattern": "password", "output_mode": "content"}, ctx)
    assert "hunter2" not in out.content and out.content == "No matches found"


def test_grep_malformed(ctx):
    cases = (
        ({}, "pattern"),
        ({"pattern": "x", "output_mode": "lines"}, "output_mode"),
        ({"pattern": "x", "-A": "many"}, "-A"),
        ({"pattern": "x", "-Z": True}, "-Z"),
        ({"pattern": "x", "head_limit": -1}, "head_limit"),
    )
    for raw, phrase in cases:
        out = run_tool("Grep", raw, ctx)
        assert out.is_error and phrase in out.content, (raw, out.content)


# ------------------------------------------------------------------ RE2: no pattern can hang a worker


@pytest.mark.timeout(20)
def test_grep_pathological_pattern_on_a_big_file_finishes(ws, ctx):
    # Python's re needs exponential time for this on one line of x's; RE2 is linear.
    make(ws / "x.txt", "x" * 100_000 + "\n" + "".join("x" * 60 + "\n" for _ in range(50_000)))
    for raw in ({"pattern": "(x+x+)+y"}, {"pattern": "(x+x+)+y", "multiline": True},
                {"pattern": "(x+x+)+y", "output_mode": "content"},
                {"pattern": "(.*a){12}", "output_mode": "count"}):
        out = run_tool("Grep", raw, ctx)
        assert not out.is_error, out.content
        assert out.content in ("No files found", "No matches found")


@pytest.mark.timeout(20)
def test_glob_pathological_pattern_on_long_names_finishes(ws, ctx):
    make(ws / ("a" * 200), "TODO\n")
    make(ws / "d" / ("a" * 200 + ".txt"), "TODO\n")
    out = run_tool("Glob", {"pattern": "**/*a*a*a*a*a*a*a*a*a*a*b"}, ctx)
    assert out.content == "No files found"
    out = run_tool("Grep", {"pattern": "TODO", "glob": "*a*a*a*a*a*a*a*a*a*a*b"}, ctx)
    assert out.content == "No files found"
    out = run_tool("Grep", {"pattern": "TODO", "glob": "*a*a*a*a*a*a*a*a*a*a*.txt"}, ctx)
    assert out.content.splitlines()[1:] == [str(ws / "d" / ("a" * 200 + ".txt"))]


@pytest.mark.parametrize("pattern", ["foo(?=bar)", "foo(?!bar)", "(?<=x)foo", "(?<!x)foo", r"(a)\1"])
def test_grep_lookaround_and_backreferences_are_clear_errors(tree, ctx, pattern):
    out = run_tool("Grep", {"pattern": pattern}, ctx)
    assert out.is_error
    assert f"Invalid regex {pattern!r}" in out.content
    assert "not supported" in out.content and "lookaround" in out.content and "backreferences" in out.content


def test_grep_too_complex_pattern_is_an_error(tree, ctx):
    out = run_tool("Grep", {"pattern": r"(?i)\pL{200}"}, ctx)
    assert out.is_error and "too complex" in out.content and "limit" in out.content


def test_grep_python_anchors_keep_their_meaning(ws, ctx):
    make(ws / "a.txt", "foo\nbar foo\r\nfoo bar\n")

    def lines(pattern, **kw):
        out = run_tool("Grep", {"pattern": pattern, "output_mode": "content", "-n": True, **kw}, ctx)
        assert not out.is_error, out.content
        if out.content == "No matches found":
            return []
        return [line.split(":")[1] for line in out.content.splitlines()]

    assert lines(r"\Afoo") == ["1", "3"]  # each line searched on its own: \A is the line's start
    assert lines(r"foo\Z") == lines("foo$") == ["1", "2"]  # the CR before LF is not part of the line
    assert lines(r"\Afoo", multiline=True) == ["1"]  # in multiline mode: the text's start
    assert lines(r"bar\Z", multiline=True) == []  # ... and \Z its very end, as in Python
    assert lines(r"\Qfoo\E\z") == ["1", "2"]  # RE2's \z too; \Q...\E stays literal


def test_glob_rejects_deep_braces_and_bad_classes(ws, ctx):
    out = run_tool("Glob", {"pattern": "{" * 20 + "a,b" + "}" * 20}, ctx)
    assert out.is_error and "nests braces" in out.content
    out = run_tool("Glob", {"pattern": "[z-a].py"}, ctx)
    assert out.is_error and "Invalid glob pattern '[z-a].py'" in out.content
    out = run_tool("Grep", {"pattern": "x", "glob": "*" * 5000}, ctx)
    assert out.is_error and "too long" in out.content


# ------------------------------------------------------------------ cancel


def test_cancelled_grep_is_interrupted(tree, ctx):
    ctx.cancel.set()
    out = run_tool("Grep", {"pattern": "TODO"}, ctx)
    assert out.is_error and out.content.startswith("Grep was interrupted")
    out = run_tool("Glob", {"pattern": "**/*.py"}, ctx)
    assert out.is_error and out.content.startswith("Glob was interrupted")


@pytest.mark.timeout(60)
def test_cancel_during_a_grep_over_a_large_tree_stops_it(ws, ctx):
    for d in range(20):
        for f in range(100):
            make(ws / f"d{d:02}" / f"f{f:03}.txt", "needle\n")
    seen = []

    def denied(path):  # called once per file the walk reaches: cancel part-way through
        seen.append(path)
        if len(seen) == 50:
            ctx.cancel.set()
        return False

    ctx.read_denied = denied
    out = run_tool("Grep", {"pattern": "needle"}, ctx)
    assert out.is_error and out.content.startswith("Grep was interrupted")
    assert len(seen) < 100  # stopped promptly, not after walking 2,000 files


def test_line_searcher_stops_on_cancel():
    import threading

    from workflows.tools.regex import LineSearcher

    data = b"hit\n" * 100_000
    cancel = threading.Event()
    assert len(LineSearcher("hit").lines(data, cancel)) == 100_000
    cancel.set()
    assert LineSearcher("hit").lines(data, cancel) == []


# ------------------------------------------------------------------ Read deny rules


def test_read_denied_files_are_left_out_of_glob_and_grep(ws, ctx):
    make(ws / ".env", "SECRET=hunter2\n")
    make(ws / "app.py", "SECRET = os.environ['SECRET']\n")
    make(ws / "conf" / "prod.env", "SECRET=prod\n")
    (ws / "env_link").symlink_to(ws / ".env")  # a link to a denied file is judged by its target
    ctx.read_denied = lambda path: path.endswith(".env")
    out = run_tool("Grep", {"pattern": "SECRET", "output_mode": "content"}, ctx)
    assert "hunter2" not in out.content and "prod" not in out.content
    assert out.content == f"{ws / 'app.py'}:SECRET = os.environ['SECRET']"
    out = run_tool("Glob", {"pattern": "**/*"}, ctx)
    assert out.content == str(ws / "app.py")
    out = run_tool("Grep", {"pattern": "SECRET", "path": ".env"}, ctx)
    assert out.is_error and "denied by the session's permission rules" in out.content
    assert "hunter2" not in out.content
    out = run_tool("Grep", {"pattern": "SECRET", "path": "env_link"}, ctx)
    assert out.is_error and "denied" in out.content


def test_read_denied_gets_resolved_absolute_paths(ws, ctx):
    make(ws / "src" / "a.py", "x\n")
    asked = []
    ctx.read_denied = lambda path: asked.append(path) or False
    ctx.cwd = ws / "src"
    run_tool("Grep", {"pattern": "x"}, ctx)
    run_tool("Grep", {"pattern": "x", "path": "../src/a.py"}, ctx)
    assert asked == [str(ws / "src" / "a.py")] * 2


# ------------------------------------------------------------------ odd files and names


@pytest.mark.timeout(20)
def test_grep_and_glob_skip_fifos_without_blocking(tree, ctx):
    os.mkfifo(tree / "pipe.txt")
    out = run_tool("Grep", {"pattern": "TODO"}, ctx)
    assert out.content.startswith("Found 4 files")
    out = run_tool("Grep", {"pattern": "TODO", "path": "pipe.txt"}, ctx)
    assert out.is_error and "not a regular file" in out.content
    assert str(tree / "pipe.txt") in run_tool("Glob", {"pattern": "*.txt"}, ctx).content


def test_non_utf8_file_names_are_listed_as_sendable_text(ws, ctx):
    name = os.fsdecode(b"caf\xe9.txt")  # Latin-1 bytes: decoded with a surrogate
    (ws / name).write_text("TODO\n")
    for tool, raw in (("Glob", {"pattern": "*.txt"}), ("Grep", {"pattern": "TODO"})):
        out = run_tool(tool, raw, ctx)
        assert "caf\ufffd.txt" in out.content
        out.content.encode("utf-8")  # would raise on a lone surrogate


def test_grep_content_stops_collecting_past_the_output_cap(ws, ctx):
    ctx.max_output_chars = 1000
    for i in range(50):
        make(ws / f"f{i:02}.txt", "".join(f"match {j}\n" for j in range(100)))
    out = run_tool("Grep", {"pattern": "match", "output_mode": "content"}, ctx)
    assert "[output truncated: over " in out.content
    assert out.display.startswith("Found ") and "+ lines" in out.display
