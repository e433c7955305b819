"""Bash's line continuations, removed before the grammar sees the command.

Bash removes every backslash-newline pair while it reads input, before it
splits words: ``ls\\<newline>#;touch x`` is the word ``ls#``, then ``touch x``.
tree-sitter-bash keeps the pair and reads the ``#`` after it as a comment, so
:func:`~workflows.permissions.shell.bash_parse.parse` gives it the text bash
tokenises, made by :func:`splice`. Checked against bash 5.2, a pair is kept
(bash keeps it too):

* inside single quotes and ``$'…'``;
* in a comment (a comment ends at the newline; ``# a \\`` does not continue);
* in the body of a here-document whose delimiter is quoted (``<<'E'``, ``<<"E"``,
  ``<<\\E``); with an unquoted delimiter the pair is removed, and the end line
  is looked for after the removal (``E\\<newline>E`` is ``EE``, not the end);
* ``\\\\<newline>`` is an escaped backslash followed by a newline.

Everywhere else (unquoted text, double quotes, ``$(…)``, backticks, ``${…}``,
``$((…))``, a here-document's delimiter word) the pair is removed. The corners
this scanner does not model (quotes inside ``$(…)`` inside double quotes, ``<<``
in arithmetic) cannot open a hole: the second parser
(:mod:`~workflows.permissions.shell.bash_vote`) reads the original text, and a
disagreement is a problem.
"""

from __future__ import annotations

__all__ = ["splice"]

#: Characters after which an unquoted ``#`` starts a comment (it must start a word).
_WORD_BREAK = " \t\n;&|()<>"
#: Characters that end a here-document's delimiter word.
_DELIM_END = " \t\n;&|()<>"


def splice(src: str) -> str:
    """``src`` with bash's line continuations removed (see the module docstring for where they stay)."""
    if "\\\n" not in src:
        return src
    out: list[str] = []
    pending: list[tuple[str, bool, bool]] = []  # here-documents to read after the next newline
    i, n = 0, len(src)
    quote = ""  # "" unquoted, '"' inside double quotes
    while i < n:
        c = src[i]
        if c == "\\":
            if src.startswith("\n", i + 1):
                i += 2
                continue
            out.append(src[i:i + 2])
            i += 2
            continue
        if quote == '"':
            if c == '"':
                quote = ""
            out.append(c)
            i += 1
            continue
        if c == '"':
            quote = '"'
        elif c == "'" or (c == "$" and src.startswith("'", i + 1)):
            i = _single(src, i, out)
            continue
        elif c == "#" and (not out or out[-1][-1] in _WORD_BREAK):
            end = src.find("\n", i)
            end = n if end < 0 else end
            out.append(src[i:end])
            i = end
            continue
        elif src.startswith("<<<", i):  # a here-string, not a here-document
            out.append("<<<")
            i += 3
            continue
        elif src.startswith("<<", i):
            i = _heredoc_start(src, i, out, pending)
            continue
        elif c == "\n" and pending:
            out.append(c)
            i = _bodies(src, i + 1, out, pending)
            pending = []
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _single(src: str, i: int, out: list[str]) -> int:
    """Copy ``'…'`` (no escapes) or ``$'…'`` (backslash escapes) verbatim; return the index after it."""
    ansi = src[i] == "$"
    j = i + (2 if ansi else 1)
    while j < len(src) and src[j] != "'":
        j += 2 if ansi and src[j] == "\\" else 1
    j = min(j + 1, len(src))
    out.append(src[i:j])
    return j


def _heredoc_start(src: str, i: int, out: list[str], pending: list[tuple[str, bool, bool]]) -> int:
    """Copy ``<<`` or ``<<-`` and its delimiter word (continuations removed); note the body to read."""
    strip = src.startswith("-", i + 2)
    j = i + (3 if strip else 2)
    while j < len(src) and src[j] in " \t":
        j += 1
    out.append(src[i:j])
    word: list[str] = []
    quoted = False
    while j < len(src) and src[j] not in _DELIM_END:
        c = src[j]
        if c == "\\":
            if not src.startswith("\n", j + 1):
                quoted = True
                word.append(src[j + 1:j + 2])
                out.append(src[j:j + 2])
            j += 2
        elif c in "'\"":
            quoted = True
            end = src.find(c, j + 1)
            end = len(src) if end < 0 else end
            word.append(src[j + 1:end])
            out.append(src[j:end + 1])
            j = end + 1
        else:
            word.append(c)
            out.append(c)
            j += 1
    pending.append(("".join(word), quoted, strip))
    return j


def _bodies(src: str, i: int, out: list[str], pending: list[tuple[str, bool, bool]]) -> int:
    """Copy the bodies of the pending here-documents, starting at ``i``; return the index after them."""
    for delim, quoted, strip in pending:
        while i < len(src):
            line, i = _body_line(src, i, joined=not quoted)
            out.append(line)
            text = line[:-1] if line.endswith("\n") else line
            if (text.lstrip("\t") if strip else text) == delim:
                break
    return i


def _body_line(src: str, i: int, *, joined: bool) -> tuple[str, int]:
    """One line of a here-document body (with its newline); an unquoted body's continuations removed."""
    if not joined:
        end = src.find("\n", i)
        end = len(src) if end < 0 else end + 1
        return src[i:end], end
    line: list[str] = []
    while i < len(src):
        c = src[i]
        if c == "\\":
            if not src.startswith("\n", i + 1):
                line.append(src[i:i + 2])
            i += 2
            continue
        line.append(c)
        i += 1
        if c == "\n":
            break
    return "".join(line), i
