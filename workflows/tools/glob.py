"""Glob: file paths matching a glob pattern, newest first.

Also the walk Grep shares: files under a directory, VCS folders skipped, with
:func:`readable` deciding which of them the session may see (inside the
workspace, not covered by a Read deny rule). Globs become RE2 regexes
(:mod:`workflows.tools.regex`), so no pattern can make matching backtrack.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import re2
from pydantic import Field

from workflows.exceptions import ToolError
from workflows.permissions.rules.paths import inside
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, raise_if_cancelled, register
from workflows.tools.files import stat_or_none
from workflows.tools.regex import compile_bytes, options

MAX_RESULTS = 100
SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
GLOB_CHARS = frozenset("*?[{")
TRUNCATED_NOTE = "(Results are truncated. Consider using a more specific path or pattern.)"
# Bounds on one glob: translating is quadratic in nested braces, and each level recurses.
MAX_GLOB_CHARS = 4096
MAX_BRACE_DEPTH = 10


# ---------------------------------------------------------------- glob -> regex


def _split_top(text: str, seps: str) -> list[str]:
    """Split ``text`` on any of ``seps`` outside braces and brackets."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif c in seps and depth == 0:
            parts.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _matching_brace(pat: str, i: int) -> int:
    depth = 0
    j = i
    while j < len(pat):
        c = pat[j]
        if c == "\\":
            j += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            j = i
            while j < n and pat[j] == "*":
                j += 1
            if j - i >= 2 and (i == 0 or pat[i - 1] == "/") and (j == n or pat[j] == "/"):
                if j < n:  # "**/": zero or more directories
                    out.append("(?:[^/]*/)*")
                    j += 1
                else:  # trailing "**": anything below
                    out.append(".*")
            else:
                out.append("[^/]*")
            i = j
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pat[j] in "!^":
                j += 1
            if j < n and pat[j] == "]":
                j += 1
            while j < n and pat[j] != "]":
                j += 1
            if j >= n:
                out.append(re2.escape(c))
            else:
                body = pat[i + 1 : j]
                if body[0] in "!^":
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
                continue
        elif c == "{":
            j = _matching_brace(pat, i)
            alts = _split_top(pat[i + 1 : j], ",") if j > 0 else []
            if len(alts) < 2:
                out.append(re2.escape(c))
            else:
                out.append("(?:" + "|".join(_translate(a) for a in alts) + ")")
                i = j + 1
                continue
        elif c == "\\" and i + 1 < n:
            out.append(re2.escape(pat[i + 1]))
            i += 2
            continue
        else:
            out.append(re2.escape(c))
        i += 1
    return "".join(out)


class GlobMatcher:
    """A compiled glob; :meth:`fullmatch` tells whether a ``/``-separated path matches it."""

    __slots__ = ("_rx",)

    def __init__(self, rx: re2._Regexp) -> None:
        self._rx = rx

    def fullmatch(self, path: str) -> bool:
        try:
            data = path.encode("utf-8")
        except UnicodeEncodeError:  # a file name that is not UTF-8 (os decoded its odd bytes to
            data = path.encode("utf-8", errors="replace")  # surrogates): each becomes "?", still a character
        return self._rx.fullmatch(data) is not None


@lru_cache(maxsize=256)
def glob_regex(pattern: str, ignore_case: bool = False) -> GlobMatcher:
    """Compile a glob (``*``, ``?``, ``[...]``, ``**``, ``{a,b}``) to a matcher of ``/`` paths.

    Raises:
        ToolError: the glob is too long, nests braces too deeply, or has a bad ``[...]`` class.
    """
    if len(pattern) > MAX_GLOB_CHARS:
        raise ToolError(f"Glob pattern is too long ({len(pattern):,} characters; the limit is {MAX_GLOB_CHARS:,}).")
    if _brace_depth(pattern) > MAX_BRACE_DEPTH:
        raise ToolError(
            f"Glob pattern {pattern!r} nests braces more than {MAX_BRACE_DEPTH} deep: write fewer nested {{a,b}}."
        )
    rx = compile_bytes(_translate(pattern), options(ignore_case=ignore_case), shown=pattern, what="glob pattern")
    return GlobMatcher(rx)


def _brace_depth(pattern: str) -> int:
    depth = deepest = 0
    for c in pattern:
        if c == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif c == "}" and depth:
            depth -= 1
    return deepest


def has_glob_chars(text: str) -> bool:
    return any(c in GLOB_CHARS for c in text)


# ---------------------------------------------------------------- walking


def walk_files(root: Path, ctx: ToolContext, tool: str = "Glob") -> Iterator[tuple[str, str]]:
    """Yield ``(absolute path, path relative to root with /)`` of the files under ``root``.

    Skips VCS directories and does not descend into symlinked directories; the
    files still need :func:`readable`. Unreadable directories are skipped.

    Raises:
        ToolError: the session was cancelled during the walk ("``tool`` was interrupted").
    """
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            raise_if_cancelled(ctx, tool)  # per file: one directory may hold a million
            full = os.path.join(dirpath, name)
            yield full, os.path.relpath(full, root).replace(os.sep, "/")
        raise_if_cancelled(ctx, tool)  # and per directory: a tree may hold a million empty ones


def readable(full: str, ctx: ToolContext) -> str | None:
    """The resolved path of walked file ``full`` if the session may see it, else None.

    It must resolve inside the workspace (a symlink may point out) and not be
    covered by the session's Read deny rules (``ctx.read_denied``).
    """
    # The walk starts from a resolved directory and does not follow directory links,
    # so only a link itself can lead elsewhere.
    real = os.path.realpath(full) if os.path.islink(full) else full
    if not inside(real, ctx.area):
        return None
    if ctx.read_denied is not None and ctx.read_denied(real):
        return None
    return real


def mtime_or_zero(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def newest_first(paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: (-mtime_or_zero(p), p))


def search_dir(path: str | None, ctx: ToolContext) -> Path:
    """The directory to search: ``path`` (inside the workspace, an existing directory) or cwd."""
    if path is None or path.strip() in ("", "undefined", "null"):
        assert ctx.cwd is not None
        return ctx.cwd
    root = ctx.resolve(path, "path")
    st = stat_or_none(root)
    if st is None:
        raise ToolError(f"Directory does not exist: {path}. Current working directory: {ctx.cwd}")
    if not stat.S_ISDIR(st.st_mode):
        raise ToolError(f"Path is not a directory: {path}")
    return root


# ---------------------------------------------------------------- the tool


class GlobInput(ToolInput):
    pattern: str = Field(description="The glob pattern to match files against")
    path: str | None = Field(
        default=None,
        description="The directory to search in. If not specified, the current working "
        "directory will be used. IMPORTANT: Omit this field to use the default directory. "
        'DO NOT enter "undefined" or "null" - simply omit it for the default behavior. Must '
        "be a valid directory path if provided.",
    )


@register
class GlobTool(Tool):
    name = "Glob"
    description = (
        "- Fast file pattern matching tool that works with any codebase size\n"
        '- Supports glob patterns like "**/*.js" or "src/**/*.{ts,tsx}"\n'
        "- Returns matching file paths sorted by modification time (newest first), at most "
        f"{MAX_RESULTS}\n"
        "- Use this tool when you need to find files by name patterns\n"
        "- Searches only inside the session's workspace"
    )
    input_model = GlobInput
    read_only = True
    idempotent = True

    def run(self, args: GlobInput, ctx: ToolContext) -> ToolOutput:
        root = search_dir(args.path, ctx)
        pattern = args.pattern.strip()
        if not pattern:
            raise ToolError("pattern must not be empty.")

        # A literal leading part ("src/", "/abs/dir/", "../x/") narrows the walk; it is
        # resolved like any path, so it cannot leave the workspace.
        parts = [p for p in pattern.split("/")]
        absolute = pattern.startswith("/")
        if absolute:
            parts = parts[1:]
        k = next((i for i, p in enumerate(parts) if has_glob_chars(p)), len(parts) - 1)
        prefix, rest = parts[:k], "/".join(parts[k:])
        if prefix or absolute:
            literal = ("/" if absolute else "") + "/".join(prefix)
            base = ctx.resolve(os.path.join(root, literal) if literal else "/", "pattern")
        else:
            base = root
        while rest.startswith("./"):
            rest = rest[2:]

        matches: list[str] = []
        base_st = stat_or_none(base)
        if base_st is not None and stat.S_ISDIR(base_st.st_mode) and rest:
            rx = glob_regex(rest)
            matches = [full for full, rel in walk_files(base, ctx) if rx.fullmatch(rel) and readable(full, ctx)]
        if not matches:
            return ToolOutput(content="No files found", display="Found 0 files")
        ordered = newest_first(matches)
        content = "\n".join(ordered[:MAX_RESULTS])
        if len(ordered) > MAX_RESULTS:
            content += "\n" + TRUNCATED_NOTE
        n = len(ordered)
        return ToolOutput(content=content, display=f"Found {n} file{'' if n == 1 else 's'}")
