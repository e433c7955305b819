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
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import click
import redis

from cli.attach import Prompter, wait_for_memory
from cli.connect import Runtime, connect
from cli.esc import EscWatch
from cli.figures import breakdown_lines, memory_saved_line, money, run_figures
from cli.mcp import approve_project_servers
from cli.trust_flag import ask_trust
from cli.render import Renderer, follow
from cli.run import apply_flags, resume_mode, session_permissions, warn_about_model
from cli.select import pick_session
from cli.slash_commands import custom_help, read_commands
from cli.sessions import describe
from cli.standby import ensure_worker, require_model_access
from statemachines import InvalidTransition, State
from tasks.dispatch import dispatch
from workflows import keys
from workflows.exceptions import MainsailError, StoreUnavailable
from workflows.hooks.session_hooks import is_entry_of_prompt
from workflows.mcp.config import fresh
from workflows.mcp.sources import McpFlags
from workflows.model_names import describe_model
from workflows.models import ResultEntry, SessionRecord, Usage, parse_entry
from workflows.permissions.bypass import effective_mode
from workflows.settings import Settings, load_settings
from workflows.store import stream_entries
from workflows.valid_text import valid_str

PROMPT = "> "
RECENT = 10  # sessions /resume lists


# ====================================================================== reading lines


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


# ====================================================================== formatting


def _ago(t: float) -> str:
    age = max(0.0, time.time() - t)
    if age < 60:
        return f"{int(age)}s ago"
    if age < 3600:
        return f"{int(age // 60)}m ago"
    if age < 86400:
        return f"{int(age // 3600)}h ago"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _duration(ms: int) -> str:
    s = ms / 1000
    if s < 60:
        return f"{s:.1f}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{int(m)}m {s:.0f}s"
    h, m = divmod(m, 60)
    return f"{int(h)}h {int(m)}m"


def _usage(u: Usage) -> str:
    return (f"{u.input_tokens:,} input, {u.output_tokens:,} output, {u.cache_read_input_tokens:,} cache read, "
            f"{u.cache_creation_input_tokens:,} cache write")


def _cut(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _error(exc: BaseException) -> None:
    click.echo(click.style("Error: ", fg="red", bold=True) + str(exc), err=True)


# ====================================================================== the loop


class Exit(Exception):
    """Leave the loop (``/exit``, end of input)."""


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
            "/help": (self.cmd_help, "this list"),
            "/status": (self.cmd_status, "the session: id, state, title, model, mode, workspace, turns, tokens, cost"),
            "/cost": (self.cmd_cost, "cost, tokens and API time, per model"),
            "/model": (self.cmd_model, "[NAME]  show the model, or switch the session to NAME"),
            "/compact": (self.cmd_compact, "[INSTRUCTIONS]  summarise the conversation for the model now"),
            "/permissions": (self.cmd_permissions, "the permission mode and the allow / ask / deny rules"),
            "/clear-queue": (self.cmd_clear_queue, "drop the messages queued behind the running turn"),
            "/memory": (self.cmd_memory, "the session's notes and the project's MEMORY.md (edit: mainsail memory edit)"),
            "/clear": (self.cmd_clear, "start a new session here (same model, mode and rules)"),
            "/resume": (self.cmd_resume, "[ID]  switch to another session (no ID: pick a recent one)"),
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
    def engine(self):
        return self.rt.engine

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
                self._goodbye()
                return
            if line is None:
                self._goodbye()
                return
            try:
                self.handle(line)
            except Exit:
                self._goodbye()
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
            _error(exc.format_message() if isinstance(exc, click.ClickException) else exc)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            _error(StoreUnavailable(f"Lost the connection to Redis ({exc}). Is it running? "
                                    "Check MAINSAIL_REDIS_URL."))

    def _goodbye(self) -> None:
        try:
            rec = self.record()
        except (MainsailError, redis.RedisError):
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
        after = _run_start_id(self.store, sid) if busy else _last_id(self.store, sid)
        try:
            steps = self.engine.submit(sid, text)
        finally:
            if submitted is not None:
                submitted()
        dispatch(steps)
        inbox = self.store.inbox(sid)
        queued = valid_str(text) in inbox  # (as the inbox holds it: workflows/valid_text.py)
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
        after = _last_id(self.store, self.sid)
        dispatch(self.engine.compact(self.sid, arg or None))
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
            if queued_text is not None:  # our message had not started: do not leave it queued
                self.store.r.lrem(keys.inbox(sid), 1, queued_text)
            for text in (self.front.take_queued() if self.front is not None else []):
                self.store.r.lrem(keys.inbox(sid), 1, valid_str(text))  # typed meanwhile: back to the draft
            stopped = self.engine.stop(sid, "Interrupted by user")
            dispatch(stopped.steps)
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        lead = "\n" if self.reader.tty else ""  # after the terminal's ^C
        click.echo(lead + ("Interrupted." if stopped.cancelled else "Interrupted (the turn had already ended)."))
        if stopped.started is not None:
            more = f" ({stopped.queued} more queued)" if stopped.queued else ""
            click.echo(f"The next queued message runs now: {_cut(stopped.started, 50)!r}{more}. "
                       "/clear-queue drops what waits; Ctrl-C on your next message stops it.")

    # ------------------------------------------------------------------ commands

    def cmd_help(self, arg: str) -> None:
        click.echo("Type a message to send it to the session. Commands:")
        for name, (_, text) in self.commands.items():
            if text:
                click.echo(f"  {name:<13} {text}")
        for line in custom_help(self.store.commands(self.sid), self.commands):
            click.echo(line)
        click.echo("Keys: Esc or Ctrl-C interrupts a running turn; Shift+Tab cycles the permission mode; \\+Enter "
                   "or Alt+Enter starts a new line; Tab completes /commands and @files; Ctrl-C or Ctrl-D at the "
                   "prompt leaves. On a terminal, what you type while a turn runs is queued and runs next.")
        click.echo("!COMMAND runs COMMAND in the workspace (bash mode: its output joins the conversation); "
                   "# NOTE saves NOTE to CLAUDE.md; @FILE attaches a file to your message.")
        click.echo("A line starting with a path (/tmp/x fails) is sent as a message.")

    def cmd_clear_queue(self, arg: str) -> None:
        dropped = self.engine.clear_queue(self.sid)
        if not dropped:
            click.echo(f"No message is queued for session {self.sid[:8]}.")
            return
        click.echo(f"Dropped {len(dropped)} queued message{'s' if len(dropped) != 1 else ''}: "
                   + ", ".join(repr(_cut(m, 40)) for m in dropped))

    def cmd_status(self, arg: str) -> None:
        rec = self.record()
        for line in describe(rec, self.store.inbox(rec.id)):
            click.echo(line)

    def cmd_memory(self, arg: str) -> None:
        rec = self.record()
        notes = self.store.session_memory(rec.id)
        click.echo(click.style("Session memory", bold=True) + f" ({rec.memory_updates} update(s))")
        click.echo(notes.rstrip() if notes else "  none yet: it is written once the context passes "
                   f"{self.settings.session_memory_init_tokens:,} tokens")
        if not (rec.auto_memory and rec.project_id):
            click.echo(click.style("Auto-memory is off for this session.", dim=True))
            return
        from workflows.memory import ProjectMemory

        index = ProjectMemory(self.store.r, rec.project_id, rec.project_root).index()
        click.echo(click.style(f"\nMEMORY.md of {rec.project_root}", bold=True))
        click.echo(index.rstrip() if index else "  no records yet")

    def cmd_cost(self, arg: str) -> None:
        rec = self.record()
        click.echo(f"Total cost:            {money(rec.cost_usd)} (main loop, compactions and memory forks)")
        click.echo(f"Total duration (API):  {_duration(rec.api_ms)}")
        click.echo(f"Model turns:           {rec.turns}")
        click.echo(f"Usage:                 {_usage(rec.usage)}")
        for line in breakdown_lines(rec, indent=""):
            click.echo(line)
        if rec.run_started_at:
            click.echo(f"Last run:              {run_figures(rec)}")
        if rec.usage_by_model:
            click.echo("Usage by model:")
            width = max(len(m) for m in rec.usage_by_model)
            for model, usage in rec.usage_by_model.items():
                click.echo(f"  {model:<{width}}  {_usage(usage)}  ({money(rec.cost_by_model.get(model, 0.0))})")

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
        self.engine.set_model(rec.id, arg)
        note = "" if rec.state in (State.IDLE, State.EXTRACTING) else " (from the session's next model call)"
        now = self.record()
        click.echo(f"Model set to {describe_model(arg, now.sent_model())} (was {rec.model}){note}.")
        warn_about_model(now, lifecycle=False)  # the transcript says it at the next call

    def cmd_permissions(self, arg: str) -> None:
        rec = self.record()
        mode = effective_mode(rec)
        click.echo(f"Permission mode: {mode.value}" + ("" if mode is rec.permission_mode else
                                                       " (bypassPermissions is disabled by settings)"))
        for kind in ("allow", "ask", "deny"):
            rules = getattr(rec.rules, kind)
            if not rules:
                click.echo(f"{kind.capitalize()} rules: none")
                continue
            click.echo(f"{kind.capitalize()} rules:")
            width = max(len(r.rule) for r in rules)
            for r in rules:
                click.echo(f"  {r.rule:<{width}}  from {r.source or 'unknown'}")

    def cmd_clear(self, arg: str) -> None:
        old = self.record()
        end_session(self.rt, old.id, "clear", old, wait=False)
        rec = self.engine.create_session(
            old.workspace, model=old.model, permission_mode=effective_mode(old), max_turns=old.max_turns,
            max_budget_usd=old.max_budget_usd, tools_queue=old.tools_queue, rules=old.rules.model_copy(deep=True),
            home=old.home or None, approval_timeout_seconds=old.approval_timeout_seconds,
            sandbox=old.sandbox.model_copy(deep=True), hooks=old.hooks,
            additional_directories=old.additional_directories, env=old.env, model_overrides=old.model_overrides,
            fallback_model=old.fallback_model, mcp_servers=fresh(old.mcp_servers),
            bypass_disabled_by=old.bypass_disabled_by, untrusted_workspace=old.untrusted_workspace)
        self.engine.mark_session_start(rec.id, "clear", rec)
        read_commands(self.rt, rec.id)
        self.sid = rec.id
        kept = f" (session {old.id[:8]} is kept: /resume {old.id[:8]})" if old.title else ""
        click.echo(f"New session {rec.id[:8]} in {rec.workspace}{kept}")

    def cmd_resume(self, arg: str) -> None:
        if arg:
            self.switch(self.store.resolve_session(arg))
            return
        recent = self.recent()
        if not recent:
            click.echo(f"No session was started in {self.workspace}.")
            return
        click.echo(f"Recent sessions in {self.workspace}:")
        for i, rec in enumerate(recent, 1):
            mark = "*" if rec.id == self.sid else " "
            click.echo(f" {mark}{i:>2}. {rec.id[:8]}  {_cut(rec.title or '(no messages)', 40):<40}  "
                       f"{rec.state.value:<19} {_ago(rec.updated_at)}")
        choice = self.reader.prompt("Resume which? (number or id prefix; Enter keeps this one) ")
        choice = (choice or "").strip()
        if not choice:
            click.echo(f"Staying on session {self.sid[:8]}.")
            return
        if choice.isdigit() and 1 <= int(choice) <= len(recent):
            self.switch(recent[int(choice) - 1].id)
        else:
            self.switch(self.store.resolve_session(choice))

    def recent(self) -> list[SessionRecord]:
        ws = str(self.workspace)
        out = []
        for sid in self.store.session_ids(limit=10_000):
            rec = self.store.get_session(sid)
            if rec.workspace == ws:
                out.append(rec)
                if len(out) >= RECENT:
                    break
        return out

    def switch(self, sid: str) -> None:
        if sid == self.sid:
            click.echo(f"Already on session {sid[:8]}.")
            return
        rec = self.store.get_session(sid)
        require_model_access(self.rt, self.settings, rec.model)
        mode, disabled_by = resume_mode(self.rt, sid, None, self.workspace, self.extra_settings)
        if mode is not None or disabled_by:  # it held a bypassPermissions that is disabled now
            rec = self.engine.update_limits(sid, permission_mode=mode, bypass_disabled_by=disabled_by)
        self.sid = sid
        announce(rec)
        recap(self.store, sid)
        self.engine.mark_session_start(sid, "resume", rec)
        read_commands(self.rt, sid)

    def cmd_exit(self, arg: str) -> None:
        raise Exit()


# ====================================================================== helpers


def announce(rec: SessionRecord, headline: str | None = None) -> None:
    """``Resumed session 1a2b3c4d: <title>`` plus what a user needs to know about its state."""
    click.echo(f"{headline or f'Resumed session {rec.id[:8]}'}: {rec.title or '(no messages yet)'}")
    facts = f"  {rec.model} · {rec.permission_mode.value} · {rec.workspace}"
    if rec.state not in (State.IDLE, State.EXTRACTING):
        facts += f" · {rec.state.value} (a message now runs after its current turn)"
    click.echo(click.style(facts, dim=True))


def recap(store, sid: str) -> None:
    """Show the conversation so far, compactly (prompts, the model's text, tool lines; cli/replay.py),
    so you know where it stands, as Claude Code does on a resume."""
    from cli.replay import replay

    r = Renderer(show_prompts=True, show_requests=True)
    replay(store, sid, r, compact=True)
    r.close()


def _last_id(store, sid: str) -> str | None:
    rows = store.r.xrevrange(keys.log(sid), count=1)
    if not rows:
        return None
    rid = rows[0][0]
    return rid.decode() if isinstance(rid, bytes) else rid


def _run_start_id(store, sid: str, scan: int = 500) -> str | None:
    """The log id just before the current run: the last result entry (None: from the start)."""
    rows = store.r.xrevrange(keys.log(sid), count=scan)
    for rid, fields in rows:
        for raw in stream_entries(fields):  # (a result entry always ends its stream entry)
            try:
                entry = parse_entry(raw)
            except Exception:  # an entry this version cannot parse: not a result
                continue
            if isinstance(entry, ResultEntry):
                return rid.decode() if isinstance(rid, bytes) else rid
    if len(rows) == scan:
        rid = rows[-1][0]
        return rid.decode() if isinstance(rid, bytes) else rid
    return None


def open_interactive_session(rt: Runtime, settings: Settings, *, resume, continue_, fork, model, permission_mode,
                             allowed_tools, disallowed_tools, approval_timeout, workspace: Path, add_dirs=(),
                             fallback_model: str | None = None, setting_sources=None, extra_settings=None,
                             mcp: McpFlags = McpFlags(), ask: Callable[[str], str | None] | None = None) -> str:
    """The session the flags name (with --model / --permission-mode applied), or a new one; announced.

    ``ask``: how a question is put to the person (a new session asks about unapproved .mcp.json servers)."""
    sid = pick_session(rt, resume=resume, continue_=continue_, fork=fork, workspace=workspace)
    if sid is None:
        require_model_access(rt, settings, settings.model)
        perms = session_permissions(workspace, permission_mode, allowed_tools, disallowed_tools,
                                    approval_timeout, settings, add_dirs, fallback_model, setting_sources,
                                    extra_settings, mcp, ask_trust=ask_trust(ask) if ask is not None else None)
        if ask is not None:
            perms["mcp_servers"] = approve_project_servers(perms["mcp_servers"], workspace, ask)
        rec = rt.engine.create_session(str(workspace), **perms)
        click.echo(f"New session {rec.id[:8]} in {rec.workspace}")
        click.echo(click.style(f"  {describe_model(rec.model, rec.sent_model())} · {rec.permission_mode.value}",
                               dim=True))
        warn_about_model(rec, lifecycle=False)  # the transcript says it at its first call
        read_commands(rt, rec.id)
        return rec.id
    rec = rt.store.get_session(sid)
    require_model_access(rt, settings, model or rec.model)
    rec = apply_flags(rt, sid, model=model, permission_mode=permission_mode, allowed_tools=allowed_tools,
                      disallowed_tools=disallowed_tools, approval_timeout=approval_timeout, workspace=workspace,
                      add_dirs=add_dirs, fallback_model=fallback_model, mcp=mcp, extra_settings=extra_settings)
    announce(rec, f"Forked session {rec.id[:8]} from {rec.forked_from[:8]}" if rec.forked_from else None)
    recap(rt.store, sid)
    rt.engine.mark_session_start(sid, "resume", rec)  # SessionStart(resume) before its next prompt, if configured
    read_commands(rt, sid)
    return sid


def end_session(rt: Runtime, sid: str, reason: str, rec=None, *, wait: bool = True) -> None:
    """SessionEnd hooks, in a background hook step (nothing in the session waits for it). With the in-process
    worker and ``wait``, let it run before the command exits (at most its hooks' timeouts); without one, a
    worker runs it later. Without SessionEnd hooks: nothing is written or sent."""
    import time

    from workflows.hooks.config import HookEvent

    rec = rec or rt.store.get_session(sid)
    steps = rt.engine.end_session(sid, reason, rec)
    if not steps:
        return
    dispatch(steps)
    if rt.worker is None or not wait:
        return
    deadline = time.monotonic() + max(h.timeout for h in rec.hooks.for_event(HookEvent.SESSION_END, reason)) + 5
    while time.monotonic() < deadline and not rt.store.get_step(sid, steps[0].id).finished:
        time.sleep(0.1)


def run_interactive(*, resume: str | None, continue_: bool, fork: bool, model: str | None,
                    permission_mode: str | None, allowed_tools, disallowed_tools, approval_timeout: float | None,
                    workspace: Path, no_memory: bool = False, first_prompt: str | None = None,
                    pick: bool = False, add_dirs=(), fallback_model: str | None = None, setting_sources=None,
                    extra_settings=None, mcp: McpFlags = McpFlags()) -> None:
    """The interactive mode: open (or pick) a session and run the prompt loop on it, starting with
    ``first_prompt`` when given (``mainsail "fix the tests"``). ``pick``: choose among this workspace's recent
    sessions first (``mainsail --resume`` with no id)."""
    settings = load_settings(model=model, auto_memory=False if no_memory else None)
    rt = connect(settings, dispatching=True)
    try:
        if pick:
            from cli.interactive_habits import pick_recent

            resume = pick_recent(rt, workspace, LineReader().prompt) or None
        sid = open_interactive_session(
            rt, settings, resume=resume, continue_=continue_, fork=fork, model=model,
            permission_mode=permission_mode, allowed_tools=allowed_tools, disallowed_tools=disallowed_tools,
            approval_timeout=approval_timeout, workspace=workspace, add_dirs=add_dirs,
            fallback_model=fallback_model, setting_sources=setting_sources, extra_settings=extra_settings, mcp=mcp,
            ask=LineReader().prompt)
        # A person is here to answer: asks wait for them (a -p run may have left the session asking nobody).
        rt.engine.update_limits(sid, auto_memory=False if no_memory else None, asks="wait")
        ensure_worker(rt, settings)
        reader = LineReader()
        ui = Interactive(rt, settings, workspace, reader, sid, extra_settings=extra_settings)
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


__all__ = ["run_interactive", "Interactive", "LineReader", "open_interactive_session"]
