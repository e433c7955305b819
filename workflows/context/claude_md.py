"""The memory files (CLAUDE.md, MAINSAIL.md and their ``@path`` imports) and the ``<system-reminder>``
that carries them, the auto-memory index and today's date: the first content block of the first user
message, as Claude Code builds it.

Pure functions over files read through :class:`~workflows.memory.access.MemoryAccess`; nothing here
touches Redis or raises for a missing, unreadable or odd file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date
from typing import Collection, Literal

from workflows.memory.access import MemoryAccess
from workflows.permissions.rules import paths

MAX_MEMORY_CHARS = 40_000
MAX_IMPORT_HOPS = 5

MemoryKind = Literal["user", "project", "local"]

#: What each directory from the root down to the workspace may hold, in this order.
PROJECT_FILES: tuple[tuple[str, MemoryKind], ...] = (
    ("CLAUDE.md", "project"),
    (".claude/CLAUDE.md", "project"),
    ("MAINSAIL.md", "project"),
    (".mainsail/MAINSAIL.md", "project"),
    ("CLAUDE.local.md", "local"),
    ("MAINSAIL.local.md", "local"),
)
USER_FILES: tuple[str, ...] = (".claude/CLAUDE.md", ".mainsail/MAINSAIL.md")

DESCRIPTIONS: dict[str, str] = {
    "user": "user's private global instructions for all projects",
    "project": "project instructions, checked into the codebase",
    "local": "user's private project instructions, not checked in",
}

CLAUDE_MD_HEADER = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them "
    "exactly as written."
)
REMINDER_OPEN = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
)
REMINDER_CLOSE = (
    "\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should not "
    "respond to this context unless it is highly relevant to your task.\n</system-reminder>"
)


@dataclass(frozen=True)
class MemoryFile:
    """One memory file as sent, or (with ``note``) an import that was skipped.

    ``kind`` is where the file's instructions come from; an imported file has
    the kind of the file that (transitively) imported it.
    """

    path: str
    kind: MemoryKind
    content: str
    imported_by: str | None = None
    note: str | None = None


def _read_memory(access: MemoryAccess, real: str) -> str | None:
    """The file's text, stripped and cut at 40,000 characters; None if it cannot be read."""
    raw = access.read(real, MAX_MEMORY_CHARS * 4 + 8)  # enough bytes for 40,000 UTF-8 characters + 1
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
    if len(text) > MAX_MEMORY_CHARS:
        text = (
            text[:MAX_MEMORY_CHARS]
            + f"\n\n... (truncated: this file exceeds {MAX_MEMORY_CHARS:,} characters; "
            f"only the first {MAX_MEMORY_CHARS:,} are shown)"
        )
    return text


_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:[^\s\\\x00]|\\ )+)", re.MULTILINE)
_TRAILING_PUNCT = ".,;:!?)]}>'\""


def import_paths(content: str) -> list[str]:
    """The ``@path`` tokens of a memory file, in order, outside code fences and code spans.

    A token starts a line or follows whitespace; ``\\ `` escapes a space in a
    path; trailing sentence punctuation is not part of the path.
    """
    paragraphs: list[list[str]] = [[]]
    fence: str | None = None
    for line in content.splitlines():
        if fence is not None:
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) <= 3
                and stripped
                and set(stripped) == {fence[0]}
                and len(stripped) >= len(fence)
            ):
                fence = None
            continue
        m = _FENCE_OPEN.match(line)
        if m:
            fence = m.group(1)
            paragraphs.append([])
            continue
        if not line.strip():
            paragraphs.append([])
        else:
            paragraphs[-1].append(line)
    found: list[str] = []
    for para in paragraphs:
        text = _CODE_SPAN.sub(lambda m: "\x00" * len(m.group(0)), "\n".join(para))
        for m in _IMPORT.finditer(text):
            path = m.group(1).replace("\\ ", " ").rstrip(_TRAILING_PUNCT)
            if path and not path.startswith("@"):
                found.append(path)
    return found


def _shown_path(token: str, importer: str, home: str) -> str:
    """The path an import is shown as: expanded and normalised, symlinks kept (as written)."""
    try:
        return os.path.normpath(paths.expand(token, cwd=os.path.dirname(importer), home=home))
    except paths.Unresolvable:
        return token


def _directories(workspace: str, stop_at: str | None) -> list[str]:
    """From the root (or ``stop_at``) down to ``workspace``, both included."""
    ws = os.path.abspath(workspace)
    chain = [ws]
    while True:
        parent = os.path.dirname(chain[-1])
        if parent == chain[-1]:
            break
        chain.append(parent)
    chain.reverse()
    if stop_at is not None:
        stop = os.path.abspath(stop_at)
        if stop in chain:
            chain = chain[chain.index(stop):]
        else:  # the workspace is not under stop_at: only the workspace itself
            chain = [ws]
    return chain


def memory_files(workspace: str, home: str, stop_at: str | None = None, access: MemoryAccess | None = None,
                 sources: Collection[str] | None = None) -> list[MemoryFile]:
    """Every memory file Claude Code would load, in the order it sends them.

    The user's ``~/.claude/CLAUDE.md`` and ``~/.mainsail/MAINSAIL.md``; then, in
    each directory from the root (or ``stop_at``) down to the workspace,
    :data:`PROJECT_FILES`. Each file is followed by the files it imports
    (depth-first, in order of appearance). A file seen already (by realpath) is
    not loaded twice; an import that cannot be followed becomes an entry with a
    ``note`` and no content.

    ``access`` says what may be read (:class:`workflows.memory.access.MemoryAccess`; by default
    the workspace alone, no deny rules): an import elsewhere, in ``/proc``, ``/sys``, ``/dev`` or
    under a Read deny rule is left out with a note, and a memory file of the workspace that is a
    symlink to such a place is left out the same way. ``sources`` (``--setting-sources``, as Claude Code
    2.1.332): only the files of those kinds (user, project, local); None: all.
    """
    home = os.path.abspath(home)
    ws = os.path.abspath(workspace)
    access = access or MemoryAccess(paths.WorkArea(ws), home)
    candidates: list[tuple[str, MemoryKind, bool]] = [(os.path.join(home, rel), "user", False) for rel in USER_FILES]
    for d in _directories(workspace, stop_at):
        candidates += [(os.path.join(d, rel), kind, d != ws) for rel, kind in PROJECT_FILES]
    candidates = [c for c in candidates if sources is None or c[1] in sources]

    out: list[MemoryFile] = []
    seen: set[str] = set()

    def follow(importer: str, kind: MemoryKind, content: str, depth: int, stack: tuple[str, ...]) -> None:
        for token in import_paths(content):
            path = _shown_path(token, importer, home)
            try:
                real = access.resolve(token, importer)
            except paths.Unresolvable as exc:
                out.append(MemoryFile(path, kind, "", importer, f"(import of {path} left out: {exc})"))
                continue
            refused = access.refusal(real)
            if refused:
                out.append(MemoryFile(path, kind, "", importer, f"(import of {path} left out: {refused})"))
                continue
            text: str | None = None
            if real in stack:
                reason = "import cycle"
            elif depth + 1 > MAX_IMPORT_HOPS:
                reason = f"more than {MAX_IMPORT_HOPS} hops"
            elif real in seen:
                reason = "already included"
            elif not os.path.exists(real):
                reason = "not found"
            elif not os.path.isfile(real):
                reason = "not a file"
            else:
                text = _read_memory(access, real)
                reason = "unreadable" if text is None else ""
            if text is None:
                out.append(MemoryFile(path, kind, "", importer, f"(import of {path} skipped: {reason})"))
                continue
            seen.add(real)
            out.append(MemoryFile(path, kind, text, importer))
            follow(path, kind, text, depth + 1, stack + (real,))

    for path, kind, above in candidates:
        if not os.path.isfile(path):
            continue
        real = os.path.realpath(path)
        if real in seen:
            continue
        refused = access.refusal(real, anywhere=above)
        if refused:
            out.append(MemoryFile(path, kind, "", None, f"(memory file {path} left out: {refused})"))
            continue
        text = _read_memory(access, real)
        if text is None:
            continue
        seen.add(real)
        out.append(MemoryFile(path, kind, text))
        follow(path, kind, text, 0, (real,))
    return out


def render_memory(files: list[MemoryFile]) -> str:
    """The ``claudeMd`` section's body; "" when no file has content or a note."""
    parts: list[str] = []
    for f in files:
        if f.note:
            parts.append(f.note)
        elif f.content:
            desc = f"imported by {f.imported_by}" if f.imported_by else DESCRIPTIONS[f.kind]
            parts.append(f"Contents of {f.path} ({desc}):\n\n{f.content}")
    if not parts:
        return ""
    return CLAUDE_MD_HEADER + "\n\n" + "\n\n".join(parts)


def user_context(workspace: str, home: str, today: date, stop_at: str | None = None, auto_memory: str = "",
                 access: MemoryAccess | None = None, sources: Collection[str] | None = None) -> str:
    """The ``<system-reminder>`` with the memory files, the auto-memory index and today's date.

    ``access``, ``sources``: what the memory files may read, which are loaded (see :func:`memory_files`).
    """
    sections: list[tuple[str, str]] = []
    claude_md = render_memory(memory_files(workspace, home, stop_at, access, sources))
    if claude_md:
        sections.append(("claudeMd", claude_md))
    if auto_memory:
        sections.append(("autoMemory", auto_memory))
    sections.append(("currentDate", f"Today's date is {today.isoformat()}."))
    body = "\n".join(f"# {key}\n{value}" for key, value in sections)
    return REMINDER_OPEN + body + REMINDER_CLOSE
