"""``/rewind`` in interactive mode and ``mainsail rewind SESSION`` from any terminal: pick one of the session's
user messages (with its time), then rewind the code, the conversation, or both to before it.

The work is the engine's (:mod:`workflows.engine.rewinding`); this module lists, asks and prints. Files are
restored by this process, so it runs where the session's workspace is; through ``MAINSAIL_SERVER`` the server
does it (:mod:`cli.remote.rewind`). Also the Agent SDK's ``rewind_files`` control request (:func:`rewind_files`).
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING, Callable

import click

from cli.session_service import service
from workflows.engine.rewinding import BASH_NOTE, Rewound, message_text
from workflows.exceptions import RewindRefused
from workflows.models import UserEntry

if TYPE_CHECKING:
    from cli.repl_state import Repl

MODES = {"both": (True, True), "code": (True, False), "conversation": (False, True)}
CHOICES = [("both", "Restore code and conversation"), ("conversation", "Restore conversation"),
           ("code", "Restore code")]


def _when(timestamp: str) -> str:
    try:
        t = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return timestamp
    return t.strftime("%H:%M:%S" if t.date() == datetime.now().astimezone().date() else "%Y-%m-%d %H:%M")


def _one_line(text: str, n: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= n else line[: n - 1] + "…"


def point_lines(store, sid: str, points: list[UserEntry]) -> list[str]:
    """`` 2. 23:14:02  fix the parser  (edits 2 files)``, oldest first."""
    edited = store.checkpoint_sizes(sid, [p.uuid for p in points])
    return [point_line(i, p.timestamp, message_text(p), n) for i, (p, n) in enumerate(zip(points, edited), 1)]


def point_line(number: int, timestamp: str, text: str, files: int) -> str:
    edits = f"  (edits {files} file{'s' if files != 1 else ''})" if files else ""
    return f"{number:>3}. {_when(timestamp)}  {_one_line(text)}{edits}"


def report(sid: str, number: int, done: Rewound) -> list[str]:
    """What a rewind did, in lines for a person."""
    e = done.entry
    parts = [p for p, on in (("code", e.code), ("conversation", e.conversation)) if on]
    out = [f"Rewound the {' and '.join(parts)} of session {sid[:8]} to before message {number} "
           f"(\"{_one_line(e.prompt, 50)}\")."]
    if e.conversation:
        out.append("  conversation: that message and everything after it are taken back; the model no longer sees "
                   "them (`mainsail show` still lists them).")
    if e.code:
        if e.restored or e.deleted:
            out += [f"  restored {p}" for p in e.restored] + [f"  deleted  {p} (created since)" for p in e.deleted]
        else:
            out.append("  code: no file the session's edit tools changed since then needs restoring.")
        out += [f"  not restored: {s}" for s in e.skipped]
        out.append(f"  {BASH_NOTE}")
    if e.conversation and e.prompt:
        out.append(f"Your message was:\n{e.prompt}")
    return out


def _pick_number(points: list, choice: str) -> int:
    if not choice.isdigit() or not 1 <= int(choice) <= len(points):
        raise click.ClickException(f"No message {choice!r}: choose a number from 1 to {len(points)} "
                                   "(the list shows them).")
    return int(choice)


def run_rewind(sessions, sid: str, number: int, mode: str, force: bool) -> list[str]:
    points = sessions.rewind_points(sid)
    code, conversation = MODES[mode]
    done = sessions.rewind(sid, points[number - 1].uuid, code=code, conversation=conversation, force=force)
    return report(sid, number, done)


def pick(ask: Callable[[str], str | None], store, sessions, sid: str) -> tuple[int, str] | None:
    """The picker: a message, then code / conversation / both. None when nothing was chosen."""
    points = sessions.rewind_points(sid)
    if not points:
        click.echo(f"Session {sid[:8]} has no message to rewind to.")
        return None
    click.echo(f"Rewind session {sid[:8]} to before which message? (the code and/or the conversation go back to "
               "how they were then)")
    for line in point_lines(store, sid, points):
        click.echo(line)
    choice = (ask(f"Message number (1-{len(points)}; Enter cancels): ") or "").strip()
    if not choice:
        click.echo("Nothing was rewound.")
        return None
    number = _pick_number(points, choice)
    for i, (_, text) in enumerate(CHOICES, 1):
        click.echo(f"  {i}. {text}")
    how = (ask("Restore what? (1-3; Enter: 1) ") or "1").strip()
    if how not in ("1", "2", "3"):
        raise click.ClickException(f"No choice {how!r}: answer 1, 2 or 3.")
    return number, CHOICES[int(how) - 1][0]


@click.command("rewind")
@click.argument("session")
@click.option("--list", "list_", is_flag=True, help="List the messages one can rewind to, and stop.")
@click.option("--to", "to", type=int, metavar="N", help="Rewind to before message N of the list (1: the first).")
@click.option("--both", "mode", flag_value="both", default=True,
              help="Restore the code and the conversation (default).")
@click.option("--code", "mode", flag_value="code", help="Restore only the files the session's edit tools changed.")
@click.option("--conversation", "mode", flag_value="conversation", help="Rewind only the conversation.")
@click.option("--force", is_flag=True, help="Restore files even when they changed since the session last edited them.")
def rewind_cmd(session: str, list_: bool, to: int | None, mode: str, force: bool) -> None:
    """Rewind a session to before one of its messages: its files (checkpoints taken before each Edit, Write,
    MultiEdit and NotebookEdit), its conversation, or both. The session must be idle; files are restored by
    this process, so run it where the workspace is. Bash commands' changes are not tracked."""
    from cli.readonly import existing_runtime

    rt = existing_runtime(what=f"no session {session!r} to rewind", code=1)
    try:
        sid = rt.store.resolve_session(session)
        points = service(rt).rewind_points(sid)
        if list_ or (to is None and not sys.stdin.isatty()):
            if not points:
                click.echo(f"Session {sid[:8]} has no message to rewind to.")
            for line in point_lines(rt.store, sid, points):
                click.echo(line)
            if not list_ and points:
                click.echo(f"Choose one: mainsail rewind {sid[:8]} --to N [--code | --conversation | --both]", err=True)
                sys.exit(2)
            return
        if to is None:
            chosen = pick(lambda text: click.prompt(text, default="", show_default=False), rt.store, service(rt), sid)
            if chosen is None:
                return
            to, mode = chosen
        elif not points:
            raise click.ClickException(f"Session {sid[:8]} has no message to rewind to.")
        for line in run_rewind(service(rt), sid, _pick_number(points, str(to)), mode, force):
            click.echo(line)
    finally:
        rt.close()


def rewind_files(sessions, sid: str, message_id) -> dict:
    """The Agent SDK's ``rewind_files`` control request (``ClaudeSDKClient.rewind_files(uuid)``): the files back to
    before that user message (its ``uuid`` as the stream gave it); the conversation stays.

    Raises:
        ControlError: the session is busy, the message is not one to rewind to, or files changed since.
    """
    from cli.headless.control import ControlError
    from workflows.exceptions import MainsailError

    if not isinstance(message_id, str) or not message_id:
        raise ControlError("rewind_files needs user_message_id: the uuid of a user message of this session.")
    try:
        done = sessions.rewind(sid, message_id, code=True, conversation=False)
    except MainsailError as exc:
        raise ControlError(str(exc)) from None
    return {"restored": done.entry.restored, "deleted": done.entry.deleted, "skipped": done.entry.skipped}


def interactive_commands(ui: "Repl") -> dict[str, tuple[Callable[[str], None], str]]:
    """``/rewind`` for the interactive command table."""

    def rewind(arg: str) -> None:
        chosen = pick(ui.reader.prompt, ui.store, service(ui.rt), ui.sid)
        if chosen is None:
            return
        try:
            lines = run_rewind(service(ui.rt), ui.sid, *chosen, force=False)
        except RewindRefused as exc:
            if not exc.changed:
                raise
            click.echo(f"These files changed since the session last edited them: {', '.join(exc.changed)}.")
            answer = ui.reader.prompt("Overwrite them with their checkpoints? (y/N) ") or ""
            if answer.strip().lower() not in ("y", "yes"):
                click.echo("Nothing was rewound.")
                return
            lines = run_rewind(service(ui.rt), ui.sid, *chosen, force=True)
        for line in lines:
            click.echo(line)

    return {"/rewind": (rewind, "go back to before one of your messages: code, conversation or both")}
