"""``mainsail`` with no command: an interactive prompt loop on one session.

Each line you type is a prompt: it is submitted to the session and the turn is
streamed until it ends; permission requests are asked on the same terminal
(``(y)es / (n)o / (a)lways``). A line starting with ``/`` is a command (type
``/help``); ``!cmd`` runs a command and ``# note`` saves a memory line (cli/repl_commands.py).
Keys:

- Esc or Ctrl-C while the session works interrupts the turn (the session is cancelled:
  its running tool is stopped and every open tool call gets an "interrupted"
  result) and returns to the prompt.
- Ctrl-C or Ctrl-D at the prompt leaves; the session stays in Redis and
  ``mainsail --resume ID`` (or ``--continue``) picks it up again.

On a terminal lines are read with prompt_toolkit, which stays open while a turn runs
(cli/repl_terminal.py: typing meanwhile queues the next message, Shift+Tab, multi-line,
completion); otherwise stdin is read line by line without buffering, so a script can be
piped in and the permission prompt still sees the answers it holds.

Its parts: cli/interactive_open.py opens the session (through the session service, with every session
flag), cli/repl_text.py reads lines, cli/repl_info.py and cli/repl_sessions.py hold the read-only and the
session-switching commands.
"""

from __future__ import annotations

import os
import signal
import threading
from functools import partial
from pathlib import Path
from typing import Callable

import click

from cli import repl_info as info
from cli import repl_sessions as switches
from cli.attach import Prompter, run_start_id, wait_for_memory
from cli.connect import Runtime, connect
from cli.esc import EscWatch
from cli.figures import memory_saved_line
from cli.follow import follow
from cli.interactive_open import end_session, open_interactive_session
from cli.opening import warn_about_model
from cli.render import Renderer
from cli.repl_text import PROMPT, Exit, LineReader, cut, say_error
from cli.session_service import service
from cli.standby import ensure_worker, require_model_access
from statemachines import InvalidTransition, State
from workflows.exceptions import MainsailError, StoreUnavailable
from workflows.hooks.prompt_entries import is_entry_of_prompt
from workflows.models import ResultEntry, SessionRecord
from workflows.models.model_names import describe_model
from workflows.models.options import SessionOptions
from workflows.models.valid_text import valid_str
from workflows.settings import Settings, load_settings
from workflows.store.resilience import RedisConnectionError, RedisError, RedisTimeoutError


class Interactive:
    """The prompt loop on one session at a time (``/clear`` and ``/resume`` switch it)."""

    def __init__(self, rt: Runtime, settings: Settings, workspace: Path, reader: LineReader,
                 sid: str | None = None, extra_settings=None) -> None:
        self.rt = rt
        #: ``--settings`` layers of this process: a session taken up with /resume gets their
        #: disableBypassPermissionsMode too, as one given --resume at the start would.
        self.extra_settings = extra_settings
        self.settings = settings
        self.workspace = Path(os.path.realpath(workspace))
        self.reader = reader
        self.sid = sid or ""
        #: On a terminal, the prompt_toolkit front (cli/repl_terminal.py) that runs turns in the background.
        self.front = None
        #: The permission prompter of the turn being followed (its open question takes the next line typed).
        self.prompter: Prompter | None = None
        self.commands: dict[str, tuple[Callable[[str], None], str]] = {
            "/help": (partial(info.help_, self), "this list"),
            "/status": (partial(info.status, self),
                        "the session: id, state, title, model, mode, workspace, turns, tokens, cost"),
            "/cost": (partial(info.cost, self), "cost, tokens and API time, per model"),
            "/model": (self.cmd_model, "[NAME]  show the model, or switch the session to NAME"),
            "/compact": (self.cmd_compact, "[INSTRUCTIONS]  summarise the conversation for the model now"),
            "/permissions": (partial(info.permissions, self), "the permission mode and the allow / ask / deny rules"),
            "/clear-queue": (self.cmd_clear_queue, "drop the messages queued behind the running turn"),
            "/memory": (partial(info.memory, self),
                        "the session's notes and the project's MEMORY.md (edit: mainsail memory edit)"),
            "/clear": (partial(switches.clear, self), "start a new session here (same model, mode and rules)"),
            "/resume": (partial(switches.resume, self), "[ID]  switch to another session (no ID: pick a recent one)"),
            "/exit": (self.cmd_exit, "leave (also /quit, Ctrl-D, or Ctrl-C at the prompt)"),
            "/quit": (self.cmd_exit, ""),
        }
        from cli import repl_commands
        from cli.interactive_habits import commands
        from cli.rewind import interactive_commands

        self.commands.update(commands(self))
        self.commands.update(interactive_commands(self))
        self.commands.update(repl_commands.commands(self))

    @property
    def store(self):
        return self.rt.store

    def record(self) -> SessionRecord:
        return self.store.get_session(self.sid)

    # ------------------------------------------------------------------ loop

    def loop(self) -> None:
        """Read and run lines until /exit, end of input, or Ctrl-C at the prompt."""
        while True:
            try:
                line = self.reader.prompt(PROMPT)
            except KeyboardInterrupt:
                click.echo("")
                self.goodbye()
                return
            if line is None:
                self.goodbye()
                return
            try:
                self.handle(line)
            except Exit:
                self.goodbye()
                return

    def handle(self, line: str) -> None:
        """One line typed at the prompt: a command, a habit (``!cmd``, ``# note``) or a prompt; errors are said
        and the loop goes on.

        Raises:
            Exit: the line leaves (``/exit``).
        """
        line = line.strip()
        if not line:
            return
        from cli import repl_commands

        try:
            if self.is_command(line):
                self.command(line)
            elif line.startswith("!"):
                repl_commands.bash(self, line)
            elif self.is_local(line):
                repl_commands.note(self, line)
            else:
                self.turn(line)
        except KeyboardInterrupt:  # in a command (e.g. the /resume choice): drop it
            click.echo("\n(cancelled)")
        except (MainsailError, InvalidTransition, click.ClickException) as exc:
            say_error(exc.format_message() if isinstance(exc, click.ClickException) else exc)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            say_error(StoreUnavailable(f"Lost the connection to Redis ({exc}). Is it running? "
                                    "Check MAINSAIL_REDIS_URL."))

    def goodbye(self) -> None:
        try:
            rec = self.record()
        except (MainsailError, RedisError):
            rec = None
        if rec is not None and rec.title:
            click.echo(f"Bye. Resume this session with: mainsail --resume {rec.id[:8]}")
        else:
            click.echo("Bye.")

    @staticmethod
    def is_local(line: str) -> bool:
        """``# note``: saved to a memory file by this terminal; nothing of the session runs."""
        return line.startswith("#") and len(line.strip("# ")) > 0 and not line.startswith("#!") and "\n" not in line

    @staticmethod
    def is_command(line: str) -> bool:
        """``/word ...`` is a command; ``/usr/bin/x fails`` (a path) is a prompt."""
        if not line.startswith("/"):
            return False
        name = line.split(maxsplit=1)[0]
        return "/" not in name[1:]

    def command(self, line: str) -> None:
        name, _, arg = line.partition(" ")
        entry = self.commands.get(name.lower())
        if entry is not None:
            entry[0](arg.strip())
            return
        if self.store.command(self.sid, name[1:]) is not None:  # a custom command: the engine expands it
            self.turn(line)
            return
        click.echo(f"Unknown command {name}. Type /help. (A custom command /NAME is a file .claude/commands/NAME.md "
                   "of the workspace, or ~/.claude/commands/NAME.md.)", err=True)

    def command_names(self) -> list[str]:
        """What Tab completes after ``/``: the built-in commands, then this session's custom commands."""
        return [n for n, (_, text) in self.commands.items() if text] + [f"/{n}" for n in self.store.commands(self.sid)]

    # ------------------------------------------------------------------ a turn

    def turn(self, text: str) -> ResultEntry | None:
        """Submit ``text`` and stream the session until that prompt's run ends (on a terminal: in the
        background, the prompt staying open: cli/repl_terminal.py).

        Ctrl-C or Esc cancels the session's running turn and returns (None).
        """
        if self.front is not None:
            self.front.start(text)
            return None
        return self.follow_turn(text)

    def follow_turn(self, text: str, more: Callable[[ResultEntry], bool] | None = None,
                    seen: Callable[[object], None] | None = None,
                    submitted: Callable[[], None] | None = None) -> ResultEntry | None:
        """Submit ``text`` and follow the session until its run ends, or (``more``) until ``more(result)``
        says no further run of this terminal's waits. ``seen`` gets every entry, ``submitted()`` is called
        once ``text`` is in the session. Interrupted: None."""
        sid = self.sid
        rec = self.record()
        busy = rec.state not in (State.IDLE, State.EXTRACTING)  # extracting: a message runs at once
        # A busy session: replay its current run, so its open permission requests are asked too.
        after = run_start_id(self.store, sid) if busy else self.store.last_log_id(sid)
        service(self.rt).submit(sid, text, recorded=submitted)
        inbox = self.store.inbox(sid)
        queued = valid_str(text) in inbox  # (as the inbox holds it: workflows/models/valid_text.py)
        if queued:
            ahead = len(inbox) - 1 - inbox[::-1].index(valid_str(text))
            before = f" and the {ahead} queued before it" if ahead else ""
            click.echo(f"Session {sid[:8]} is busy ({self.record().state.value}); your message runs after "
                       f"its current turn{before}. Ctrl-C interrupts it; /clear-queue drops the queue.", err=True)
        console = getattr(self.reader, "console", None)
        r = Renderer(console() if console else None, show_prompts=queued, show_requests=False)
        prompter = Prompter(self.rt, sid, stdin=self.reader, interactive=True,
                            answers=getattr(self.reader, "answers", None))
        self.prompter = prompter
        mine = False

        def on_entry(e) -> None:
            nonlocal mine
            prompter.on_entry(e)  # first: an open prompt line is closed before anything else prints
            r.entry(e)
            if is_entry_of_prompt(e, text):
                mine = True
                r.show_prompts = True  # the prompts that run after it (queued meanwhile) are shown as turns
            if seen is not None:
                seen(e)

        def stop(e) -> bool:
            return isinstance(e, ResultEntry) and mine and (more is None or not more(e))

        esc = self.reader.interrupts() if hasattr(self.reader, "interrupts") else EscWatch.of(self.reader)

        def poll() -> None:
            if prompter.current is None and not prompter.queue:
                esc.keys()
                if esc.pressed():
                    raise KeyboardInterrupt  # Esc: interrupt the turn, as Ctrl-C does
            else:
                esc.lines()  # a permission question is answered in line mode, echoed
            prompter.poll()

        try:
            with esc:
                return follow(self.store, sid, on_entry=on_entry, on_delta=r.delta, after=after, stop=stop,
                              poll=poll, on_child=lambda child, e: (prompter.on_child(child, e),
                                                                    r.child_entry(child, e)), on_link=r.link_child)
        except KeyboardInterrupt:
            r.close()
            if prompter.current is not None:
                click.echo("", err=True)  # close the open permission prompt line
            self.interrupt(text if queued else None)
            return None
        finally:
            self.prompter = None

    def cmd_compact(self, arg: str) -> None:
        """Compact now (from idle); the model sees the summary from the next prompt on."""
        after = self.store.last_log_id(self.sid)
        service(self.rt).compact(self.sid, arg or None)
        r = Renderer(show_prompts=False, show_requests=False)
        try:
            result = follow(self.store, self.sid, on_entry=r.entry, after=after,
                            stop=lambda e: isinstance(e, ResultEntry))
        except KeyboardInterrupt:
            r.close()
            self.interrupt()
            return
        r.close()
        if not result.is_error:
            click.echo(result.result)

    def interrupt(self, queued_text: str | None = None) -> None:
        """Cancel the running turn (Ctrl-C while it works); a second Ctrl-C meanwhile is ignored."""
        sid = self.sid
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            # Our message had not started: do not leave it queued; typed meanwhile: back to the draft.
            typed = self.front.take_queued() if self.front is not None else []
            service(self.rt).unqueue(sid, ([queued_text] if queued_text is not None else []) + typed)
            stopped = service(self.rt).stop(sid, "Interrupted by user")
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        lead = "\n" if self.reader.tty else ""  # after the terminal's ^C
        click.echo(lead + ("Interrupted." if stopped.cancelled else "Interrupted (the turn had already ended)."))
        if stopped.started is not None:
            more = f" ({stopped.queued} more queued)" if stopped.queued else ""
            click.echo(f"The next queued message runs now: {cut(stopped.started, 50)!r}{more}. "
                       "/clear-queue drops what waits; Ctrl-C on your next message stops it.")

    # ------------------------------------------------------------------ commands

    def cmd_clear_queue(self, arg: str) -> None:
        dropped = service(self.rt).clear_queue(self.sid)
        if not dropped:
            click.echo(f"No message is queued for session {self.sid[:8]}.")
            return
        click.echo(f"Dropped {len(dropped)} queued message{'s' if len(dropped) != 1 else ''}: "
                   + ", ".join(repr(cut(m, 40)) for m in dropped))

    def cmd_model(self, arg: str) -> None:
        rec = self.record()
        if not arg:
            click.echo(f"Current model: {rec.model}. Switch with /model NAME.")
            return
        if len(arg.split()) != 1:
            click.echo("Usage: /model NAME (one model name, e.g. claude-haiku-4-5).", err=True)
            return
        if arg == rec.model:
            click.echo(f"Already using {arg}.")
            return
        require_model_access(self.rt, self.settings, arg)
        service(self.rt).set_model(rec.id, arg)
        note = "" if rec.state in (State.IDLE, State.EXTRACTING) else " (from the session's next model call)"
        now = self.record()
        click.echo(f"Model set to {describe_model(arg, now.sent_model())} (was {rec.model}){note}.")
        warn_about_model(now, lifecycle=False)  # the transcript says it at the next call

    def cmd_exit(self, arg: str) -> None:
        raise Exit()


# ====================================================================== the mode


def run_interactive(options: SessionOptions, *, resume: str | None, continue_: bool, fork: bool, workspace: Path,
                    first_prompt: str | None = None, pick: bool = False) -> None:
    """The interactive mode: open (or pick) a session with ``options`` and run the prompt loop on it, starting
    with ``first_prompt`` when given (``mainsail "fix the tests"``). ``pick``: choose among this workspace's
    recent sessions first (``mainsail --resume`` with no id). A person is here to answer: asks wait for them
    (a -p run may have left the session asking nobody)."""
    settings = load_settings(model=options.model, auto_memory=False if options.no_memory else None)
    options = options.model_copy(update={"asks": "wait"})
    rt = connect(settings)
    try:
        if pick:
            from cli.interactive_habits import pick_recent

            resume = pick_recent(rt, workspace, LineReader().prompt) or None
        sid = open_interactive_session(rt, settings, options, resume=resume, continue_=continue_, fork=fork,
                                       workspace=workspace, ask=LineReader().prompt)
        ensure_worker(rt, settings)
        reader = LineReader()
        ui = Interactive(rt, settings, workspace, reader, sid, extra_settings=options.extra_settings)
        if reader.tty:
            from cli.repl_terminal import TerminalFront

            ui.front = TerminalFront(ui, settings.data_dir / "history")
            ui.reader = ui.front
            click.echo(click.style("Type a message, or /help; type on while a turn runs to queue the next. Esc or "
                                   "Ctrl-C interrupts a turn; Shift+Tab cycles the permission mode; \\+Enter or "
                                   "Alt+Enter for a new line; !cmd runs a command, # note saves a memory, @ "
                                   "mentions a file; Ctrl-D leaves.", dim=True))
        if first_prompt:
            ui.turn(first_prompt)
        (ui.front or ui).loop()
        end_session(rt, ui.sid, "prompt_input_exit")
        if rt.worker is not None:
            saving = rt.store.get_session(ui.sid).saving_memory()
            wait_for_memory(rt, ui.sid)
            if saving:
                click.secho(memory_saved_line(rt.store.get_session(ui.sid)), dim=True)
    finally:
        rt.close()


__all__ = ["run_interactive", "Interactive"]
