"""Linear-time regular expressions (RE2) for every pattern the model writes.

Python's ``re`` backtracks: ``(x+x+)+y`` on a line of x's runs for ever and pins
the worker thread, which a cancel cannot stop. RE2 (the ``google-re2`` package)
matches in time linear in the text, like ripgrep's engine, and has the same
limits: no lookaround and no backreferences. Grep's pattern and the regexes the
globs are translated to (:mod:`workflows.tools.glob`) are compiled here.

:class:`LineSearcher` finds the lines a Grep pattern matches as ripgrep does:
one RE2 call scans the file's bytes up to the next match, so Python code runs
once per matching line, not once per line. Without ``multiline`` a match never
crosses a newline (``never_nl``) and ``^``/``$`` are line anchors, which gives
the same lines as searching each line on its own.
"""

from __future__ import annotations

import threading

import re2

from workflows.exceptions import ToolError

# RE2 is linear in the text, but when its DFA gives up it costs about 10 ns per byte per
# instruction of the compiled pattern. Capping the pattern's size and searching a file in
# slices of whole lines keeps one call to a second or two, so a cancel is seen promptly
# (a single line longer than a slice is still searched in one call).
MAX_PROGRAM_SIZE = 20_000
SLICE_BYTES = 8192
LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")


def options(*, ignore_case: bool = False, never_nl: bool = False, dot_nl: bool = False) -> re2.Options:
    opts = re2.Options()
    opts.log_errors = False  # a bad pattern is the model's error, reported to it, not to the worker's stderr
    opts.case_sensitive = not ignore_case
    opts.never_nl = never_nl
    opts.dot_nl = dot_nl
    return opts


def compile_bytes(regex: str, opts: re2.Options, shown: str, what: str = "regex") -> re2._Regexp:
    """Compile ``regex`` (UTF-8) for matching bytes; ``shown`` is what the model wrote, for errors.

    Raises:
        ToolError: RE2 rejects it, or it compiles too large; the message names
            ``shown`` and says what to change.
    """
    try:
        rx = re2.compile(regex.encode("utf-8"), opts)
    except UnicodeEncodeError:
        raise ToolError(f"Invalid {what} {shown!r}: it holds a lone surrogate, which is not text. Remove it.") from None
    except re2.error as exc:
        raise ToolError(_explain(exc, shown, what)) from None
    if rx.programsize > MAX_PROGRAM_SIZE:
        raise ToolError(
            f"Invalid {what} {shown!r}: it is too complex (it compiles to {rx.programsize:,} "
            f"instructions; the limit is {MAX_PROGRAM_SIZE:,}). Use smaller counted repetitions "
            "({n}) and fewer alternatives, or split it into several searches."
        )
    return rx


def _explain(exc: re2.error, shown: str, what: str) -> str:
    reason = exc.args[0] if exc.args else ""
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", errors="replace")
    reason = reason or "RE2 cannot compile it"
    if "invalid perl operator" in reason and any(op in reason for op in LOOKAROUND):
        problem = "lookaround ((?=...), (?!...), (?<=...), (?<!...)) is not supported"
    elif any(f"invalid escape sequence: \\{d}" in reason for d in "123456789"):
        problem = "backreferences (\\1, \\2, ...) are not supported"
    elif what == "regex":
        return f"Invalid regex {shown!r}: {reason}. Grep patterns use RE2 syntax, as in ripgrep."
    else:
        return f"Invalid {what} {shown!r}: {reason}."
    return (
        f"Invalid {what} {shown!r}: {problem}. Search uses a linear-time engine (RE2, as in ripgrep), "
        "which has no lookaround and no backreferences: rewrite the pattern without them, "
        "for example match the surrounding text too, or run two searches."
    )


def _python_anchors(pattern: str, line_mode: bool) -> str:
    """Rewrite ``\\A``, ``\\Z``, ``\\z`` outside classes and ``\\Q...\\E`` for the search below.

    Searching each line alone, ``\\A`` and ``\\Z``/``\\z`` meant the line's start and
    end: in one search over the whole text that is ``^`` and ``$`` (in ``(?m)``).
    In multiline mode they keep meaning the text's ends; Python's ``\\Z`` is RE2's ``\\z``.
    """
    out, i, n, in_class = [], 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == "Q":  # \Q...\E is literal text: copy it untouched
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end + 2
                out.append(pattern[i:end])
                i = end
                continue
            if not in_class and nxt in "AZz":
                out.append(("^" if nxt == "A" else "$") if line_mode else ("\\A" if nxt == "A" else "\\z"))
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            i += 1
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):  # a "]" first in a class is literal
                out.append("]")
                i += 1
            continue
        if c == "[" and pattern.startswith("[:", i):  # [:alpha:] inside a class
            end = pattern.find(":]", i + 2)
            if end >= 0:
                out.append(pattern[i : end + 2])
                i = end + 2
                continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


class LineSearcher:
    """Which lines of a file a Grep pattern matches.

    Args:
        pattern: the model's regex (RE2 syntax; ``\\A``/``\\Z`` as Python reads them).
        ignore_case: ``-i``.
        multiline: ``.`` matches newlines and a match may span lines; otherwise a
            match stays within one line.
        what: what the pattern is, in error messages (Grep's is a "regex").

    Raises:
        ToolError: the pattern is invalid or too complex.
    """

    def __init__(self, pattern: str, *, ignore_case: bool = False, multiline: bool = False,
                 what: str = "regex") -> None:
        self.multiline = multiline
        regex = "(?m)" + _python_anchors(pattern, line_mode=not multiline)
        opts = options(ignore_case=ignore_case, never_nl=not multiline, dot_nl=multiline)
        self._rx = compile_bytes(regex, opts, shown=pattern, what=what)

    def prepare(self, text: str) -> bytes:
        """The bytes to search for ``text``: UTF-8, and in line mode with CRLF as LF.

        Read and Grep show a line without the CR before its LF (``split_lines``); a
        ``$`` must match there too.
        """
        data = text.encode("utf-8", errors="replace")
        if not self.multiline:
            data = data.replace(b"\r\n", b"\n").removesuffix(b"\r")
        return data

    def lines(self, data: bytes, cancel: threading.Event, stop_after: int = 0) -> list[int]:
        """0-based indexes of the lines of ``data`` (from :meth:`prepare`) that match, ascending.

        At most ``stop_after`` of them (0: all). Lines are counted as ``split_lines``
        counts them: an empty match after the final newline is not a line. Returns
        early, with what it has, once ``cancel`` is set: the caller checks it.
        """
        total = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        find = self._span_lines if self.multiline else self._line_hits
        return find(data, total, cancel, stop_after or total)

    def _line_hits(self, data: bytes, total: int, cancel: threading.Event, stop_after: int) -> list[int]:
        hits: list[int] = []
        pos, at, line = 0, 0, 0  # ``line`` is the line number of offset ``at``
        while pos < len(data) and not cancel.is_set():
            # Search a slice that ends at a line end, so a cancel is seen between slices.
            end = data.find(b"\n", pos + SLICE_BYTES)
            end = len(data) if end < 0 else end + 1
            m = self._rx.search(data, pos, end)
            if m is None:
                pos = end
                continue
            line += data.count(b"\n", at, m.start())
            at = m.start()
            if line >= total:
                break
            hits.append(line)
            nl = data.find(b"\n", at)
            if len(hits) >= stop_after or nl < 0:
                break
            pos = nl + 1  # one hit per line is all that matters: go on at the next line
        return hits

    def _span_lines(self, data: bytes, total: int, cancel: threading.Event, stop_after: int) -> list[int]:
        hits: list[int] = []
        pos, at, line = 0, 0, 0
        while pos <= len(data) and not cancel.is_set():
            m = self._rx.search(data, pos)
            if m is None:
                break
            start, end = m.span()
            line += data.count(b"\n", at, start)
            at = start
            if line >= total:
                break
            last = min(line + data.count(b"\n", start, max(end - 1, start)), total - 1)
            hits.extend(range(max(line, hits[-1] + 1 if hits else 0), last + 1))
            if len(hits) >= stop_after:
                break
            if end > start:
                pos = end
            else:  # an empty match: go on at the next line (its own line is already a hit)
                nl = data.find(b"\n", start)
                if nl < 0:
                    break
                pos = nl + 1
        return hits[:stop_after]
