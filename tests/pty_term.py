"""A program on a pseudo-terminal, as a person's terminal runs it: keys in, screen text out.

``expect`` waits for text to appear in what the program printed (never a fixed window); the text is
compared with ANSI escape sequences removed. Used by the interactive-mode terminal tests and for hand runs
(``python -m tests.pty_term mainsail``).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pyte

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r")

SHIFT_TAB = "\x1b[Z"
ALT_ENTER = "\x1b\r"
ESC = "\x1b"
CTRL_C = "\x03"
CTRL_D = "\x04"
TAB = "\t"


class Term:
    def __init__(self, argv: list[str], *, cwd, env: dict, rows: int = 40, cols: int = 200) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.screen = pyte.Screen(cols, rows)
        self._stream = pyte.ByteStream(self.screen)
        self.raw = b""
        self.mark = 0  # expect() searches from here on

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", errors="replace"))

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the program ended
            return False
        self.raw += data
        self._stream.feed(data)
        for _ in range(data.count(b"\x1b[6n")):  # the cursor position, as a terminal answers it
            os.write(self.master, b"\x1b[1;1R")
        return bool(data)

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def expect(self, text: str, timeout: float = 60.0) -> str:
        """Wait until ``text`` appears after the last match; the output up to it."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.text.find(text, self.mark)
            if found >= 0:
                out = self.text[self.mark:found + len(text)]
                self.mark = found + len(text)
                return out
            if time.monotonic() > deadline or (self.proc.poll() is not None and not self._read(0)):
                raise AssertionError(f"timed out waiting for {text!r}; the screen printed:\n{self.text[-4000:]}")
            self._read(0.1)

    @property
    def display(self) -> str:
        """What the terminal shows now, line by line."""
        return "\n".join(line.rstrip() for line in self.screen.display)

    def expect_screen(self, text: str, timeout: float = 60.0) -> str:
        """Wait until the screen shows ``text`` (a redrawn toolbar, a completion, a draft); the screen then."""
        deadline = time.monotonic() + timeout
        while text not in self.display:
            if time.monotonic() > deadline or (self.proc.poll() is not None and not self._read(0)):
                raise AssertionError(f"timed out waiting for {text!r} on the screen:\n{self.display}")
            self._read(0.1)
        return self.display

    def drain(self, timeout: float = 30.0) -> str:
        """Read until the program ends; everything it printed."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        while self._read(0.05):
            pass
        return self.text

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        os.close(self.master)


if __name__ == "__main__":  # a hand run: each argument after -- is a step "send:TEXT" or "expect:TEXT"
    argv, _, steps = " ".join(sys.argv[1:]).partition(" -- ")
    term = Term(argv.split(), cwd=os.getcwd(), env=dict(os.environ))
    try:
        for step in steps.split(" ;; "):
            kind, _, arg = step.partition(":")
            arg = arg.encode().decode("unicode_escape")
            if kind == "send":
                term.send(arg)
            elif kind == "expect":
                term.expect(arg)
        print(term.drain(20))
    finally:
        term.close()
