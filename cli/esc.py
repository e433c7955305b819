"""Esc interrupts a running turn, as in Claude Code: the terminal in cbreak mode while a turn runs.

:class:`EscWatch` puts a terminal stdin in cbreak mode (keys arrive one by one, unechoed) for the
length of a turn and reports a lone Esc key. An escape *sequence* (an arrow key sends ``ESC [ A``)
is not an Esc press: the bytes that follow within 30 ms are read and dropped. While a permission
question is open the terminal goes back to line mode, so the answer is typed and echoed as usual.
Off a terminal it does nothing.
"""

from __future__ import annotations

import os
import select
import termios
import tty

ESC = b"\x1b"
SEQUENCE_GAP = 0.03  # seconds: bytes closer than this after ESC belong to one key's sequence


class EscWatch:
    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.tty = fd is not None and os.isatty(fd)
        self._saved = None

    @classmethod
    def of(cls, stream) -> "EscWatch":
        """The watcher of ``stream`` (anything with a ``fileno``); inert when it has no file descriptor."""
        try:
            return cls(stream.fileno())
        except (OSError, ValueError, AttributeError):
            return cls(None)

    def __enter__(self) -> "EscWatch":
        self.keys()
        return self

    def __exit__(self, *exc) -> None:
        self.lines()

    def keys(self) -> None:
        """Key by key (cbreak), remembering the mode to go back to."""
        if self.tty and self._saved is None:
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd, termios.TCSANOW)

    def lines(self) -> None:
        """Back to the terminal's own mode (line editing and echo)."""
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)
            self._saved = None

    def pressed(self) -> bool:
        """True when Esc alone was pressed since the last look (other keys are dropped)."""
        if self._saved is None:
            return False
        hit = False
        while self._ready(0):
            byte = os.read(self.fd, 1)
            if byte != ESC:
                continue
            if self._ready(SEQUENCE_GAP):
                while self._ready(SEQUENCE_GAP):  # the rest of an arrow key's (or another key's) sequence
                    os.read(self.fd, 1)
                continue
            hit = True
        return hit

    def _ready(self, timeout: float) -> bool:
        try:
            return bool(select.select([self.fd], [], [], timeout)[0])
        except (OSError, ValueError):
            return False


__all__ = ["EscWatch"]
