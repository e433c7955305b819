"""The interactive loop as its helpers see it: :class:`Repl`, what they use of cli/interactive.py's
:class:`~cli.interactive.Interactive`.

The command modules (cli/repl_info.py, repl_sessions.py, repl_commands.py, interactive_habits.py,
rewind.py), the completer (repl_complete.py) and the terminal front (repl_terminal.py) take the loop
as a ``Repl``. cli/interactive.py imports them; none of them imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from cli.attach import Prompter
    from cli.connect import Runtime
    from cli.repl_text import LineReader
    from workflows.models import ResultEntry, SessionRecord
    from workflows.settings import Settings
    from workflows.store.redis_store import Store


class Repl(Protocol):
    """The prompt loop on one session at a time (see :class:`cli.interactive.Interactive`)."""

    rt: Runtime
    settings: Settings
    #: ``--settings`` layers of this process (a session taken up with /resume gets them too).
    extra_settings: object
    workspace: Path
    reader: LineReader
    #: The session the loop is on ("" before one is opened).
    sid: str
    #: The permission prompter of the turn being followed, if any.
    prompter: Prompter | None
    #: ``/name`` -> (the command, given its argument; its line in /help, "" for an alias).
    commands: dict[str, tuple[Callable[[str], None], str]]

    @property
    def store(self) -> Store: ...

    def record(self) -> SessionRecord:
        """The session's record, read now."""
        ...

    def handle(self, line: str) -> None:
        """One line typed at the prompt (raises :class:`cli.repl_text.Exit` to leave)."""
        ...

    def goodbye(self) -> None:
        """Say goodbye (and how to resume the session)."""
        ...

    @staticmethod
    def is_local(line: str) -> bool: ...

    @staticmethod
    def is_command(line: str) -> bool: ...

    def command_names(self) -> list[str]:
        """What Tab completes after ``/``."""
        ...

    def turn(self, text: str) -> ResultEntry | None:
        """Submit ``text`` and follow the session's run (on a terminal: in the background)."""
        ...

    def follow_turn(self, text: str, more: Callable[[ResultEntry], bool] | None = None,
                    seen: Callable[[object], None] | None = None,
                    submitted: Callable[[], None] | None = None) -> ResultEntry | None:
        """Submit ``text`` and follow the session until its run ends (or ``more`` says stop)."""
        ...
