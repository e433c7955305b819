"""Grep: regex search over file contents (ripgrep's output conventions).

Patterns run on RE2 (:mod:`workflows.tools.regex`), in time linear in the text
whatever the pattern. The search checks ``ctx.cancel`` between files, during the
walk and inside a file, and leaves out files the session may not read: outside
the workspace, or covered by a Read deny rule (``ctx.read_denied``).
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field

from workflows.exceptions import ToolError
from workflows.tools import text_file
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, raise_if_cancelled, register
from workflows.tools.files import read_regular, stat_or_none
from workflows.tools.glob import GlobMatcher, _split_top, glob_regex, newest_first, readable, walk_files
from workflows.tools.read import split_lines
from workflows.tools.regex import LineSearcher

MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 20 * 1024 * 1024

FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": (".py", ".pyi"),
    "python": (".py", ".pyi"),
    "js": (".js", ".mjs", ".cjs", ".jsx"),
    "ts": (".ts", ".tsx", ".mts", ".cts"),
    "md": (".md", ".markdown", ".mdx"),
    "markdown": (".md", ".markdown", ".mdx"),
    "json": (".json", ".jsonl"),
    "yaml": (".yaml", ".yml"),
    "toml": (".toml",),
    "txt": (".txt",),
    "html": (".html", ".htm"),
    "css": (".css", ".scss", ".sass", ".less"),
    "sh": (".sh", ".bash", ".zsh"),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java",),
    "kotlin": (".kt", ".kts"),
    "c": (".c", ".h"),
    "cpp": (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx", ".h"),
    "cs": (".cs",),
    "rb": (".rb",),
    "ruby": (".rb",),
    "php": (".php",),
    "swift": (".swift",),
    "sql": (".sql",),
    "xml": (".xml",),
    "ini": (".ini", ".cfg"),
}


def _read_text(real: str, ctx: ToolContext) -> str | None:
    """The text of resolved file ``real``, or None for a file Grep skips, as rg does:
    binary, larger than :data:`MAX_FILE_BYTES`, not a regular file, or unreadable."""
    try:
        raw, _ = read_regular(Path(real), ctx, MAX_FILE_BYTES)
    except ToolError:
        return None
    try:  # decoded as Read and Edit decode it; binary (NUL bytes) is skipped
        return text_file.decode(raw, real).text
    except ToolError:
        return None


class _FileFilter:
    """The ``glob`` and ``type`` filters; globs match the relative path or the basename."""

    def __init__(self, glob: str | None, type_: str | None) -> None:
        self.include: list[GlobMatcher] = []
        self.exclude: list[GlobMatcher] = []
        for g in _split_top(glob or "", " ,\t\n"):
            g = g.strip()
            if not g:
                continue
            if g.startswith("!"):
                self.exclude.append(glob_regex(g[1:]))
            else:
                self.include.append(glob_regex(g))
        self.exts: tuple[str, ...] | None = None
        if type_:
            key = type_.strip().lower().lstrip(".")
            if key not in FILE_TYPES:
                known = ", ".join(sorted(FILE_TYPES))
                raise ToolError(f"Unknown file type {type_!r}. Known types: {known}.")
            self.exts = FILE_TYPES[key]

    def __call__(self, rel: str) -> bool:
        base = rel.rsplit("/", 1)[-1]
        if self.exts is not None and not base.lower().endswith(self.exts):
            return False
        if any(rx.fullmatch(rel) or rx.fullmatch(base) for rx in self.exclude):
            return False
        if self.include:
            return any(rx.fullmatch(rel) or rx.fullmatch(base) for rx in self.include)
        return True


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [line truncated]"


class GrepInput(ToolInput):
    model_config = ConfigDict(populate_by_name=True)

    pattern: str = Field(
        description="The regular expression pattern to search for in file contents"
    )
    path: str | None = Field(
        default=None,
        description="File or directory to search in. Defaults to the current working "
        "directory.",
    )
    glob: str | None = Field(
        default=None,
        description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}")',
    )
    output_mode: Literal["content", "files_with_matches", "count"] = Field(
        default="files_with_matches",
        description='Output mode: "content" shows matching lines (supports -A/-B/-C context, '
        '-n line numbers, head_limit), "files_with_matches" shows file paths (supports '
        'head_limit), "count" shows match counts (supports head_limit). Defaults to '
        '"files_with_matches".',
    )
    B: int | None = Field(
        default=None,
        alias="-B",
        ge=0,
        description='Number of lines to show before each match. Requires output_mode: '
        '"content", ignored otherwise.',
    )
    A: int | None = Field(
        default=None,
        alias="-A",
        ge=0,
        description='Number of lines to show after each match. Requires output_mode: '
        '"content", ignored otherwise.',
    )
    C: int | None = Field(
        default=None,
        alias="-C",
        ge=0,
        description='Number of lines to show before and after each match. Requires '
        'output_mode: "content", ignored otherwise.',
    )
    n: bool | None = Field(
        default=None,
        alias="-n",
        description='Show line numbers in output. Requires output_mode: "content", ignored '
        "otherwise.",
    )
    i: bool | None = Field(default=None, alias="-i", description="Case insensitive search")
    type: str | None = Field(
        default=None,
        description="File type to search (e.g. py, js, ts, md, json). More efficient than "
        "glob for standard file types.",
    )
    head_limit: int | None = Field(
        default=None,
        ge=0,
        description='Limit output to first N lines/entries. Works across all output modes: '
        'content (limits output lines), files_with_matches (limits file paths), count '
        "(limits count entries). 0 or unset means no limit.",
    )
    multiline: bool | None = Field(
        default=None,
        description="Enable multiline mode where . matches newlines and patterns can span "
        "lines. Default: false.",
    )


@register
class GrepTool(Tool):
    name = "Grep"
    description = (
        "A powerful search tool for file contents.\n\n"
        "Usage:\n"
        "- ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command.\n"
        '- Supports full regex syntax (e.g., "log.*Error", "function\\s+\\w+"): RE2, as in ripgrep, '
        "so lookaround and backreferences are not supported\n"
        '- Filter files with the glob parameter (e.g., "*.js", "**/*.tsx") or the type '
        'parameter (e.g., "js", "py")\n'
        '- Output modes: "content" shows matching lines, "files_with_matches" shows only '
        'file paths (default), "count" shows match counts\n'
        "- Searches only inside the session's workspace; binary files and .git are skipped"
    )
    input_model = GrepInput
    read_only = True
    idempotent = True

    def run(self, args: GrepInput, ctx: ToolContext) -> ToolOutput:
        searcher = LineSearcher(args.pattern, ignore_case=bool(args.i), multiline=bool(args.multiline))
        keep = _FileFilter(args.glob, args.type)
        files = self._files(args.path, ctx, keep)
        limit = args.head_limit or None
        if args.output_mode == "files_with_matches":
            return self._files_with_matches(files, searcher, limit, ctx)
        if args.output_mode == "count":
            return self._count(files, searcher, limit, ctx)
        return self._content(files, searcher, args, limit, ctx)

    @staticmethod
    def _search(files: list[tuple[str, str]], searcher: LineSearcher, ctx: ToolContext, stop_after: int = 0):
        """Yield ``(shown path, text, matching line indexes)`` for each file with a match.

        Raises:
            ToolError: the session was cancelled ("Grep was interrupted").
        """
        for shown, real in files:
            raise_if_cancelled(ctx, "Grep")
            text = _read_text(real, ctx)
            if text is None:
                continue
            hits = searcher.lines(searcher.prepare(text), ctx.cancel, stop_after)
            raise_if_cancelled(ctx, "Grep")  # the search stops early on a cancel: its hits are partial
            if hits:
                yield shown, text, hits

    def _files_with_matches(self, files, searcher, limit, ctx) -> ToolOutput:
        hits = [shown for shown, _, _ in self._search(files, searcher, ctx, stop_after=1)]
        if not hits:
            return ToolOutput(content="No files found", display="Found 0 files")
        shown = newest_first(hits)[:limit]
        n = len(shown)
        noun = "file" if n == 1 else "files"
        content = f"Found {n} {noun}\n" + "\n".join(shown)
        return self._out(content, f"Found {n} {noun}", ctx)

    def _count(self, files, searcher, limit, ctx) -> ToolOutput:
        rows, total = [], 0
        for shown, _, hits in self._search(sorted(files), searcher, ctx):
            rows.append(f"{shown}:{len(hits)}")
            total += len(hits)
        if not rows:
            return ToolOutput(content="No matches found", display="Found 0 matches")
        rows = rows[:limit]
        content = "\n".join(rows) + (
            f"\n\nFound {total} total occurrence{'' if total == 1 else 's'} across "
            f"{len(rows)} file{'' if len(rows) == 1 else 's'}."
        )
        return self._out(content, f"Found {total} matches", ctx)

    def _content(self, files, searcher, args: GrepInput, limit, ctx) -> ToolOutput:
        before = args.B if args.B is not None else (args.C or 0)
        after = args.A if args.A is not None else (args.C or 0)
        context = before > 0 or after > 0
        out: list[str] = []
        size, complete = 0, True
        for shown_path, text, matched in self._search(sorted(files), searcher, ctx):
            if limit and len(out) >= limit:
                break
            if size > ctx.max_output_chars:  # it will be cut anyway: do not hold a whole tree's lines
                complete = False
                break
            lines = split_lines(text)
            is_match = set(matched)
            shown: set[int] = set()
            for m in matched:
                shown.update(range(max(0, m - before), min(len(lines), m + after + 1)))
            prev = None
            for idx in sorted(shown):
                if context and (out and (prev is None or idx > prev + 1)):
                    out.append("--")
                sep = ":" if idx in is_match else "-"
                num = f"{idx + 1}{sep}" if args.n else ""
                out.append(f"{shown_path}{sep}{num}{_cut(lines[idx])}")
                size += len(out[-1]) + 1
                prev = idx
        if not out:
            return ToolOutput(content="No matches found", display="Found 0 lines")
        out = out[:limit]
        n = len(out)
        more = "" if complete else "+"
        return self._out("\n".join(out), f"Found {n}{more} line{'' if n == 1 else 's'}", ctx, complete)

    @staticmethod
    def _files(path: str | None, ctx: ToolContext, keep: _FileFilter) -> list[tuple[str, str]]:
        """``(path to show, resolved path to read)`` of every file to search."""
        if path is None or path.strip() in ("", "undefined", "null"):
            assert ctx.cwd is not None
            root: Path = ctx.cwd
        else:
            root = ctx.resolve(path, "path")
            st = stat_or_none(root)
            if st is None:
                raise ToolError(f"Path does not exist: {path}. Current working directory: {ctx.cwd}")
            if stat.S_ISREG(st.st_mode):  # an explicit file is searched whatever the filters say
                if ctx.read_denied is not None and ctx.read_denied(str(root)):
                    raise ToolError(
                        f"{root} is denied by the session's permission rules (a Read deny rule covers it), "
                        "so Grep cannot search it."
                    )
                return [(str(root), str(root))]
            if not stat.S_ISDIR(st.st_mode):
                raise ToolError(f"{root} is not a regular file or a directory, so Grep cannot search it.")
        found = []
        for full, rel in walk_files(root, ctx, "Grep"):
            if keep(rel) and (real := readable(full, ctx)) is not None:
                found.append((full, real))
        return found

    @staticmethod
    def _out(content: str, display: str, ctx: ToolContext, complete: bool = True) -> ToolOutput:
        """Cut ``content`` at ``ctx.max_output_chars``; ``complete`` False: more matches were not collected."""
        cap = ctx.max_output_chars
        truncated = len(content) > cap
        if truncated:
            more = f"{len(content) - cap}" if complete else f"over {len(content) - cap}"
            content = (
                content[:cap]
                + f"\n\n... [output truncated: {more} more characters. Use head_limit, a more "
                "specific path, glob or pattern.]"
            )
        return ToolOutput(content=content, display=display, truncated=truncated)
