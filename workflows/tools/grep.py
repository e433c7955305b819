"""Grep: regex search over file contents, in pure Python (ripgrep's output conventions)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field

from workflows.exceptions import ToolError
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.glob import _split_top, glob_regex, newest_first, walk_files
from workflows.tools.read import BINARY_SNIFF_BYTES, split_lines

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


def _read_text(path: str) -> str | None:
    """The file's text, or None for binary, unreadable or huge files (skipped, like rg)."""
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    if b"\0" in raw[:BINARY_SNIFF_BYTES]:
        return None
    return raw.decode("utf-8", errors="replace")


class _FileFilter:
    """The ``glob`` and ``type`` filters; globs match the relative path or the basename."""

    def __init__(self, glob: str | None, type_: str | None) -> None:
        self.include: list[re.Pattern[str]] = []
        self.exclude: list[re.Pattern[str]] = []
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


def _matching_lines(text: str, lines: list[str], rx: re.Pattern[str], multiline: bool) -> list[int]:
    """0-based indexes of the lines with a match."""
    if not multiline:
        return [i for i, line in enumerate(lines) if rx.search(line)]
    hits: set[int] = set()
    for m in rx.finditer(text):
        first = text.count("\n", 0, m.start())
        last = text.count("\n", 0, max(m.end() - 1, m.start()))
        hits.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(hits)


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
        '- Supports full regex syntax (e.g., "log.*Error", "function\\s+\\w+")\n'
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
        flags = re.IGNORECASE if args.i else 0
        if args.multiline:
            flags |= re.MULTILINE | re.DOTALL
        try:
            rx = re.compile(args.pattern, flags)
        except re.error as exc:
            raise ToolError(f"Invalid regex {args.pattern!r}: {exc}") from None
        keep = _FileFilter(args.glob, args.type)

        files = self._files(args.path, ctx, keep)
        mode = args.output_mode
        limit = args.head_limit or None

        if mode == "files_with_matches":
            hits = []
            for full in files:
                text = _read_text(full)
                if text is None:
                    continue
                if args.multiline:
                    found = rx.search(text) is not None
                else:
                    found = any(rx.search(line) for line in split_lines(text))
                if found:
                    hits.append(full)
            if not hits:
                return ToolOutput(content="No files found", display="Found 0 files")
            shown = newest_first(hits)[:limit]
            n = len(shown)
            noun = "file" if n == 1 else "files"
            content = f"Found {n} {noun}\n" + "\n".join(shown)
            return self._out(content, f"Found {n} {noun}", ctx)

        if mode == "count":
            rows, total = [], 0
            for full in sorted(files):
                text = _read_text(full)
                if text is None:
                    continue
                c = len(_matching_lines(text, split_lines(text), rx, bool(args.multiline)))
                if c:
                    rows.append(f"{full}:{c}")
                    total += c
            if not rows:
                return ToolOutput(content="No matches found", display="Found 0 matches")
            rows = rows[:limit]
            content = "\n".join(rows) + (
                f"\n\nFound {total} total occurrence{'' if total == 1 else 's'} across "
                f"{len(rows)} file{'' if len(rows) == 1 else 's'}."
            )
            return self._out(content, f"Found {total} matches", ctx)

        # content
        before = args.B if args.B is not None else (args.C or 0)
        after = args.A if args.A is not None else (args.C or 0)
        context = before > 0 or after > 0
        out: list[str] = []
        for full in sorted(files):
            if limit and len(out) >= limit:
                break
            text = _read_text(full)
            if text is None:
                continue
            lines = split_lines(text)
            matched = _matching_lines(text, lines, rx, bool(args.multiline))
            if not matched:
                continue
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
                out.append(f"{full}{sep}{num}{_cut(lines[idx])}")
                prev = idx
        if not out:
            return ToolOutput(content="No matches found", display="Found 0 lines")
        out = out[:limit]
        n = len(out)
        return self._out("\n".join(out), f"Found {n} line{'' if n == 1 else 's'}", ctx)

    @staticmethod
    def _files(path: str | None, ctx: ToolContext, keep: _FileFilter) -> list[str]:
        if path is None or path.strip() in ("", "undefined", "null"):
            assert ctx.cwd is not None
            root: Path = ctx.cwd
        else:
            root = ctx.resolve(path, "path")
            if not root.exists():
                raise ToolError(
                    f"Path does not exist: {path}. Current working directory: {ctx.cwd}"
                )
        if root.is_file():
            return [str(root)]  # an explicit file is searched whatever the filters say
        return [full for full, rel in walk_files(root, ctx) if keep(rel)]

    @staticmethod
    def _out(content: str, display: str, ctx: ToolContext) -> ToolOutput:
        cap = ctx.max_output_chars
        if len(content) > cap:
            more = len(content) - cap
            content = (
                content[:cap]
                + f"\n\n... [output truncated: {more} more characters. Use head_limit, a more "
                "specific path, glob or pattern.]"
            )
        return ToolOutput(content=content, display=display)
