"""The interactive loop's text: reading lines off a terminal or a pipe (:class:`LineReader`), the loop's way
out (:class:`Exit`), and the short forms it prints (ages, durations, usage, cut lines, errors)."""

from __future__ import annotations

import os
import sys

import click

from cli.session_table import ago  # noqa: F401 (its home: importers find it here too)
from workflows.models import Usage

PROMPT = "> "


class LineReader:
    """Lines typed (or piped) on stdin.

    ``prompt()`` is what the loop reads; ``fileno()`` and ``readline()`` make it the
    ``stdin`` of the permission :class:`~cli.attach.Prompter`. Off a terminal every
    read takes the bytes of one line only (``os.read`` of one byte at a time), so no
    line waits in a Python buffer where ``select`` cannot see it.
    """

    def __init__(self, stdin=None) -> None:
        self.stdin = stdin or sys.stdin
        self.fd = self.stdin.fileno()
        self.tty = os.isatty(self.fd)

    def fileno(self) -> int:
        return self.fd

    def readline(self) -> str:
        """One line with its newline; ``""`` at end of input."""
        buf = bytearray()
        while True:
            b = os.read(self.fd, 1)
            if not b:
                break
            buf += b
            if b == b"\n":
                break
        return buf.decode("utf-8", errors="replace")

    def prompt(self, text: str = PROMPT) -> str | None:
        """The next line without its newline; None at end of input (Ctrl-D).

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting.
        """
        if self.tty:
            try:
                return input(text)
            except EOFError:
                click.echo("")
                return None
        line = self.readline()
        if line == "":
            return None
        line = line.rstrip("\r\n")
        click.echo(f"{text}{line}")  # the transcript reads as if it had been typed
        return line


def duration(ms: int) -> str:
    s = ms / 1000
    if s < 60:
        return f"{s:.1f}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{int(m)}m {s:.0f}s"
    h, m = divmod(m, 60)
    return f"{int(h)}h {int(m)}m"


def usage_line(u: Usage) -> str:
    return (f"{u.input_tokens:,} input, {u.output_tokens:,} output, {u.cache_read_input_tokens:,} cache read, "
            f"{u.cache_creation_input_tokens:,} cache write")


def cut(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def say_error(exc: BaseException) -> None:
    click.echo(click.style("Error: ", fg="red", bold=True) + str(exc), err=True)


class Exit(Exception):
    """Leave the loop (``/exit``, end of input)."""


__all__ = ["PROMPT", "Exit", "LineReader", "ago", "cut", "duration", "say_error", "usage_line"]
