"""Interactive mode on a terminal: a prompt_toolkit line editor that stays open while a turn runs.

The turn is followed in a background thread and its output streams above the prompt
(``patch_stdout``), so you can type meanwhile, as in Claude Code:

- a message typed during a turn is submitted at once: the session queues it (its inbox, as
  ``mainsail send`` does) and it runs after the current turn, shown as a user turn when it starts;
  the toolbar counts what waits. Esc interrupts the turn and brings the messages you queued back
  into the draft (they are taken out of the queue first, so they do not run);
- while a permission question is open, the line typed answers it (``y`` / ``n`` / ``a`` / a message);
- Shift+Tab cycles the permission mode: the draft stays as typed, and only the mode in the toolbar changes;
- ``\\`` then Enter, or Alt+Enter, starts a new line of the same message;
- Tab completes ``/`` commands and ``@`` file mentions (cli/repl_complete.py);
- Esc or Ctrl-C interrupts the running turn; Ctrl-C or Ctrl-D at an idle prompt leaves.

Off a terminal, cli/interactive.py reads stdin line by line and none of this is used.
"""

from __future__ import annotations

import queue
import sys
import termios
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from prompt_toolkit import PromptSession
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.patch_stdout import patch_stdout
from rich.console import Console

from cli.interactive_habits import SHOWN, next_mode
from cli.repl_commands import bash_prompt
from cli.repl_complete import ReplCompleter
from cli.session_service import service
from statemachines import State
from workflows.exceptions import MainsailError
from workflows.hooks.prompt_entries import is_entry_of_prompt
from workflows.models.valid_text import valid_str
from workflows.permissions import answer_choices
from workflows.permissions.bypass import effective_mode
from workflows.store.resilience import RedisConnectionError, RedisError, RedisTimeoutError

if TYPE_CHECKING:
    from cli.repl_state import Repl

#: Commands that change which session this terminal is on, or need it idle: while a turn runs they are refused
#: with a note (type them again when it ends), never queued behind it.
IDLE_ONLY = {"/clear", "/resume", "/compact", "/init", "/add-dir"}


class Detached(Exception):
    """The terminal leaves while a turn runs: stop following it (the session goes on)."""


class _Interrupts:
    """What the turn's poll asks (as it asks :class:`cli.esc.EscWatch` in line mode): was Esc or Ctrl-C pressed?"""

    def __init__(self, front: "TerminalFront") -> None:
        self.front = front

    def __enter__(self) -> "_Interrupts":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def keys(self) -> None:
        pass

    def lines(self) -> None:
        """A permission question is open: Esc or Ctrl-C interrupts the turn all the same (as Ctrl-C does in
        line mode), and leaving stops following."""
        if self.pressed():
            raise KeyboardInterrupt

    def pressed(self) -> bool:
        if self.front.detach.is_set():
            raise Detached()
        if self.front.interrupt.is_set():
            self.front.interrupt.clear()
            return True
        return False


class _Lines:
    """``sys.stdout`` (prompt_toolkit's proxy while the prompt is open) without explicit flushes: the proxy prints
    whole lines above the prompt, so a streamed reply is not cut by a redrawn prompt after every word."""

    def __getattr__(self, name):
        return getattr(sys.stdout, name)

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        pass


@contextmanager
def _typed_ahead():
    """While a line's command runs (between two prompts), keys typed are kept for the next prompt as typed:
    not echoed in the middle of the output, and Ctrl-D not eaten as the terminal's end of input. Ctrl-C still
    interrupts (the terminal's signal)."""
    fd = sys.stdin.fileno() if sys.stdin.isatty() else None
    if fd is None:
        yield
        return
    saved = termios.tcgetattr(fd)
    quiet = termios.tcgetattr(fd)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


class TerminalFront:
    """The line editor, and the thread that follows the running turn."""

    tty = True

    def __init__(self, ui: "Repl", history: Path) -> None:
        self.ui = ui
        self.interrupt = threading.Event()
        self.detach = threading.Event()
        self._answers: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closing = False  # the thread saw its last result: a new message starts a new turn
        self.waiting: list[str] = []  # messages typed during the turn that have not started yet
        self.mode = effective_mode(ui.record())
        history.parent.mkdir(parents=True, exist_ok=True)
        self.session = PromptSession(history=FileHistory(str(history)), completer=ReplCompleter(ui),
                                     complete_while_typing=True, key_bindings=self._keys(), multiline=True,
                                     bottom_toolbar=self._toolbar, prompt_continuation="  ")

    # ------------------------------------------------------------------ what the turn asks

    def answers(self) -> str | None:
        """The next line typed while a permission question is open (None: none yet)."""
        try:
            return self._answers.get_nowait()
        except queue.Empty:
            return None

    def console(self) -> Console:
        """The console a turn renders to: whole lines above the prompt."""
        return Console(file=_Lines(), highlight=False, soft_wrap=True, force_terminal=sys.stdout.isatty())

    def interrupts(self) -> _Interrupts:
        return _Interrupts(self)

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def take_queued(self) -> list[str]:
        """The turn is being interrupted: the messages typed meanwhile leave the queue and go back to the draft."""
        with self._lock:
            texts, self.waiting = self.waiting, []
        if texts:
            self._in_app(lambda: self._restore(texts))
            click.echo(click.style(f"{len(texts)} queued message(s) back in the prompt to edit.", dim=True))
        return texts

    def _restore(self, texts: list[str]) -> None:
        buf = self.session.default_buffer
        buf.text = "\n".join([*texts, buf.text] if buf.text else texts)
        buf.cursor_position = len(buf.text)

    def _in_app(self, fn) -> None:
        app = self.session.app
        loop = getattr(app, "loop", None)
        if app.is_running and loop is not None:
            loop.call_soon_threadsafe(fn)
        else:
            fn()

    # ------------------------------------------------------------------ turns

    def start(self, text: str) -> None:
        """Follow the run of ``text`` in the background (submitted by the thread, as line mode submits it)."""
        if self._thread is not None:
            self._thread.join()
        self.interrupt.clear()
        self._closing = False
        submitted = threading.Event()
        self._thread = threading.Thread(target=self._follow, args=(text, submitted.set), name="mainsail-turn",
                                        daemon=True)
        self._thread.start()
        submitted.wait()  # in the session before the next line typed is: the order typed is the order run

    def _follow(self, text: str, submitted) -> None:
        try:
            self.ui.follow_turn(text, more=self._more, seen=self._seen, submitted=submitted)
        except Detached:
            pass
        except MainsailError as exc:
            click.echo(click.style("Error: ", fg="red", bold=True) + str(exc), err=True)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            click.echo(click.style("Error: ", fg="red", bold=True) + f"Lost the connection to Redis ({exc}).",
                       err=True)
        finally:
            submitted()  # (had it failed before submitting, the prompt must not wait for it)
            with self._lock:
                self._closing = True
                self.waiting = []
            self.refresh()

    def _seen(self, e) -> None:
        with self._lock:
            if self.waiting and is_entry_of_prompt(e, self.waiting[0]):
                self.waiting.pop(0)
        self.refresh()

    def _more(self, result) -> bool:
        """A run ended: go on following while a message typed here waits (and is still queued or starting)."""
        with self._lock:
            if self.waiting:
                rec = self.ui.record()
                inbox = self.ui.store.inbox(self.ui.sid)
                if rec.state in (State.IDLE, State.EXTRACTING) and not any(valid_str(w) in inbox
                                                                            for w in self.waiting):
                    self.waiting = []  # dropped from the queue meanwhile (/clear-queue, another shell)
            if not self.waiting:
                self._closing = True
            return bool(self.waiting)

    def queue_message(self, text: str) -> None:
        """A message typed while the turn runs: into the session's queue now, followed by the same thread."""
        with self._lock:
            if not self._closing:
                self.waiting.append(text)
                service(self.ui.rt).submit(self.ui.sid, text)
                ahead = len(self.ui.store.inbox(self.ui.sid))
                click.echo(click.style(f"  ⧗ queued ({ahead} waiting): runs after the current turn. Esc interrupts "
                                       "and brings it back to edit; /clear-queue drops it.", dim=True))
                self.refresh()
                return
        self.ui.turn(text)  # the turn has just ended: this one starts its own

    # ------------------------------------------------------------------ the prompt

    def _keys(self) -> KeyBindings:
        kb = KeyBindings()
        running = Condition(self.running)

        @kb.add("escape", filter=running)
        def _esc(event) -> None:
            self.interrupt.set()

        @kb.add("c-c")
        def _ctrl_c(event) -> None:
            if self.running():
                self.interrupt.set()  # the draft stays
            else:
                event.app.exit(exception=KeyboardInterrupt())

        @kb.add("s-tab")
        def _shift_tab(event) -> None:
            try:
                self.mode = next_mode(self.ui)
            except (MainsailError, RedisError) as exc:
                click.echo(click.style("Error: ", fg="red", bold=True) + str(exc), err=True)
            event.app.invalidate()

        @kb.add("escape", "enter")
        def _newline(event) -> None:
            event.current_buffer.insert_text("\n")

        @kb.add("enter")
        def _enter(event) -> None:
            buf = event.current_buffer
            state = buf.complete_state
            if state is not None and state.current_completion is not None:
                buf.apply_completion(state.current_completion)
                return
            if buf.document.is_cursor_at_the_end and buf.text.endswith("\\"):
                buf.delete_before_cursor(1)  # a backslash at the end: the message goes on on a new line
                buf.insert_text("\n")
                return
            buf.validate_and_handle()

        return kb

    def _message(self):
        prompter = self.ui.prompter
        if prompter is not None and prompter.current is not None:
            return FormattedText([("bold", answer_choices(prompter.current.always) + " > ")])
        return "> "

    def _toolbar(self):
        parts = [("fg:ansiyellow", SHOWN.get(self.mode, self.mode.value)), ("", "  (shift+tab to cycle)")]
        if self.running():
            parts.append(("", " · esc to interrupt"))
        if self.waiting:
            parts.append(("fg:ansicyan", f" · {len(self.waiting)} queued"))
        return FormattedText(parts)

    def refresh(self) -> None:
        try:
            self.mode = effective_mode(self.ui.record())
        except (MainsailError, RedisError):
            pass
        self.session.app.invalidate()

    def prompt(self, text: str | None = None) -> str | None:
        """The next line (or lines) typed (``text``: a question's own prompt); None: Ctrl-D.

        Raises:
            KeyboardInterrupt: Ctrl-C at an idle prompt.
        """
        try:
            return self.session.prompt(text if text is not None else self._message)
        except EOFError:
            return None

    # ------------------------------------------------------------------ the loop

    def loop(self) -> None:
        """Read and run lines until /exit, Ctrl-D, or Ctrl-C at an idle prompt."""
        from cli.repl_text import Exit

        with patch_stdout(raw=True):
            try:
                while True:
                    try:
                        line = self.prompt()
                    except KeyboardInterrupt:
                        line = None
                    if line is None:
                        break
                    try:
                        with _typed_ahead():
                            self.line(line)
                    except Exit:
                        break
                    self.refresh()
            finally:
                if self.running():
                    self.detach.set()
                    self._thread.join()
                    click.echo(f"Session {self.ui.sid[:8]} goes on without this terminal.")
        self.ui.goodbye()

    def line(self, line: str) -> None:
        """A line typed: while a turn runs it answers the open question, or is queued, or (a command) runs now."""
        if not self.running():
            self.ui.handle(line)
            return
        prompter = self.ui.prompter
        if prompter is not None and prompter.current is not None:
            self._answers.put(line)
            return
        text = line.strip()
        if not text:
            return
        if self.ui.is_command(text):
            name = text.split(maxsplit=1)[0].lower()
            if name in IDLE_ONLY:
                click.echo(f"{name} waits for the running turn: type it again when the turn ends (Esc interrupts it).",
                           err=True)
                return
            if name in self.ui.commands:
                self.ui.handle(text)
                return
        if self.ui.is_local(text):  # ``# note``: nothing of the session runs
            self.ui.handle(text)
            return
        if text.startswith("!"):
            text = bash_prompt(text)
            if text is None:
                self.ui.handle("!")  # (says how)
                return
        self.queue_message(text)


__all__ = ["IDLE_ONLY", "TerminalFront"]
