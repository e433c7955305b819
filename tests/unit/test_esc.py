"""Esc alone interrupts; an arrow key (an escape sequence) does not; line mode comes back (a real pty)."""

from __future__ import annotations

import os
import pty
import termios
import time

from cli.esc import EscWatch


def test_a_lone_esc_is_a_press_and_an_arrow_key_is_not():
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        with EscWatch(slave) as esc:
            assert not termios.tcgetattr(slave)[3] & termios.ICANON, "cbreak while the turn runs"
            assert esc.pressed() is False
            os.write(master, b"\x1b[A")  # up arrow
            time.sleep(0.05)
            assert esc.pressed() is False
            os.write(master, b"x\x1b")  # a stray key, then Esc
            time.sleep(0.05)
            assert esc.pressed() is True
            esc.lines()  # a permission question: line mode again
            assert termios.tcgetattr(slave)[3] & termios.ICANON
            os.write(master, b"\x1b")
            assert esc.pressed() is False, "not watched in line mode"
            esc.keys()
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)


def test_off_a_terminal_it_does_nothing():
    r, w = os.pipe()
    try:
        with EscWatch(r) as esc:
            os.write(w, b"\x1b")
            assert esc.pressed() is False
    finally:
        os.close(r)
        os.close(w)
