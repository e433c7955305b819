"""What :func:`~workflows.permissions.shell.bash_parse.parse` returns: commands, their words and redirections."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Command", "Parsed", "Redirect", "Word"]


@dataclass(frozen=True)
class Word:
    """One word of a command.

    ``value``: the text after quote removal, or None when bash would expand it
    (``$x``, ``$(…)``, …). ``glob``, ``brace``:
    an unquoted ``* ? [`` or ``{ }``. ``tilde``: an unquoted leading ``~``.
    """

    raw: str
    value: str | None
    glob: bool = False
    brace: bool = False
    tilde: bool = False

    @property
    def literal(self) -> bool:
        """Bash passes this word through as ``value`` (no expansion of any kind but a tilde)."""
        return self.value is not None and not self.glob and not self.brace


@dataclass(frozen=True)
class Redirect:
    """``op`` as written (``>``, ``>>``, ``&>``, ``<``, ``>&``, ``<<``, ``<<<``, …) and its target word."""

    op: str
    fd: str | None
    target: Word | None  # None for a here-document
    quoted_heredoc: bool = False
    # Words after the target (``cat < a.txt .env``): the grammar reads them as part of the redirection,
    # bash as arguments of the command. The line has a problem; deny rules on paths still see them.
    extra: tuple[Word, ...] = ()

    @property
    def writes(self) -> bool:
        return self.op in (">", ">>", ">|", "&>", "&>>", "<>") or (
            self.op == ">&" and self.target is not None and not _is_fd(self.target))

    @property
    def reads(self) -> bool:
        return self.op == "<" or (self.op == "<&" and self.target is not None and not _is_fd(self.target))


def _is_fd(word: Word) -> bool:
    return word.value is not None and (word.value.isdigit() or word.value == "-")


@dataclass(frozen=True)
class Command:
    """A simple command: leading ``NAME=value`` assignments, words, redirections.

    ``top``: it is a part of the command line itself (joined by ``;`` ``&&`` ``||``
    ``|`` ``&`` or newlines), not nested inside another construct.
    """

    words: tuple[Word, ...]
    assignments: tuple[tuple[str, Word], ...] = ()
    redirects: tuple[Redirect, ...] = ()
    text: str = ""
    top: bool = True

    @property
    def name(self) -> str | None:
        return self.words[0].value if self.words and self.words[0].literal else None


@dataclass(frozen=True)
class Parsed:
    """What :func:`parse` found: every simple command (nested ones with ``top=False``) and the problems."""

    commands: tuple[Command, ...]
    problems: tuple[str, ...]

    @property
    def top(self) -> tuple[Command, ...]:
        return tuple(c for c in self.commands if c.top)
