"""The context Claude Code gives a model besides the transcript: pure functions.

- :func:`system_context`: the ``<env>`` block and the ``gitStatus`` snapshot, computed once at a session's
  start. The caller stores the string in the session record so every worker sends the same bytes.
- :func:`user_context`: the memory files (CLAUDE.md, MAINSAIL.md and their ``@path`` imports) and today's
  date, wrapped in a ``<system-reminder>``: the first content block of the first user message.
- :data:`DEFAULT_SYSTEM_PROMPT` and :func:`system_prompt`: the ``system``
  parameter of a Messages API call, as a list of text blocks.

Only files are read (git state through libgit2, which runs nothing); nothing here touches Redis, and
nothing here raises for a missing, unreadable or odd file or repository.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass
from datetime import date
from typing import Collection, Literal

from workflows.memory.access import MemoryAccess
from workflows.permissions.rules import paths

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- system prompt

DEFAULT_SYSTEM_PROMPT = """\
You are Mainsail, an interactive CLI coding agent. You help the user with software engineering \
tasks in their workspace: fixing bugs, adding features, refactoring, explaining code, and running \
commands. Use the instructions below and the tools available to you.

# Tone and style
Be concise and direct. Answer in a few lines unless the user asks for detail; skip preamble and \
summaries nobody asked for. When you have finished a change, say briefly what you changed and how \
you checked it. Your text is shown in a terminal: plain text or short Markdown.

# Doing tasks
- Understand before you change: explore with Glob and Grep, and Read a file before you edit it. \
Never guess a file's contents, names or APIs; read them.
- Prefer Edit over Write for an existing file; Write is for new files or complete rewrites. Follow \
the conventions of the code around you.
- Run the project's tests, linters and builds with Bash to check your work when you can, and fix \
what you broke.
- Only paths inside the workspace can be read or changed; a path outside it is refused.
- When you are blocked or a request is ambiguous, ask the user in your reply instead of guessing.
- For a task of three or more steps, keep a task list with TodoWrite (the whole list each time): \
one task in_progress at a time, each marked completed as soon as it is done.

# Tools
- Read returns up to 2,000 lines from the start of a file by default; use offset and limit for \
longer files.
- Edit replaces an exact old_string that must be unique in the file (give more surrounding \
context, or use replace_all); MultiEdit makes several such edits to one file, all or none.
- NotebookEdit replaces, inserts or deletes one cell of a Jupyter notebook; Read shows a \
notebook's cells with their ids.
- Bash commands time out after 2 minutes by default (at most 10 minutes); output past 30,000 \
characters is truncated. For a server or a long build, use run_in_background, then read its new \
output with BashOutput and stop it with KillShell.
- Call independent tools together in one response; several read-only calls run in parallel.
- WebFetch reads a web page and answers a question about it; WebSearch searches the web. Both ask \
for permission (per host for WebFetch); cite the links you used.
- Task hands a self-contained job (a wide search, an independent change) to a sub-agent with its \
own context; several Task calls in one response run in parallel, and each returns one final report. \
With run_in_background the agent runs while you go on, and its report arrives later as a \
<task-notification>; TaskStop stops it (or a background shell).
- Skill loads the instructions of one of the skills a reminder lists (when there are any); when a \
task is one a listed skill covers, invoke it first and follow what it loads.

# Permissions
Some tool calls need the user's approval. If a call is denied, do not retry the same call: \
adjust your approach or ask the user what they want instead, and mention the denial in your \
answer."""


def system_prompt(custom: str | None, append: str | None, system_context: str) -> list[dict]:
    """The ``system`` parameter: [default-or-custom prompt (+ append), system context].

    ``custom`` (even "") replaces :data:`DEFAULT_SYSTEM_PROMPT`; ``append`` joins
    the same block after a blank line. Empty blocks are left out (the API refuses
    empty text blocks). Same inputs, same bytes.
    """
    prompt = DEFAULT_SYSTEM_PROMPT if custom is None else custom
    if append:
        prompt = f"{prompt}\n\n{append}" if prompt else append
    blocks = [{"type": "text", "text": prompt}] if prompt else []
    if system_context:
        blocks.append({"type": "text", "text": system_context})
    return blocks


# --------------------------------------------------------------------------- git and environment

GIT_TIMEOUT_SECONDS = 5.0
MAX_STATUS_CHARS = 2000
STATUS_TRUNCATED_NOTE = (
    '... (truncated because it exceeds 2k characters. If you need more information, run '
    '"git status" using Bash)'
)
GIT_STATUS_HEADER = (
    "This is the git status at the start of the conversation. Note that this status is a "
    "snapshot in time, and will not update during the conversation."
)


GIT_LEFT_OUT = "gitStatus: (left out: {why}; Mainsail reads no repository that leads outside its directory)"


def _snapshot(workspace: str) -> tuple[str, str]:
    """The ``gitStatus: ...`` text and "" , or "" and why the repository was refused ("" for none)."""
    import pygit2  # (libgit2 costs ~30 ms to load: not on the CLI's start-up path)

    from workflows.git import state as git_state

    opened = git_state.open_repo(workspace)
    r = opened.repo
    if r is None:
        return "", opened.note
    branch = git_state.branch_name(r)
    main = git_state.main_branch(r, branch)
    user = git_state.user_name(r).strip()
    try:
        status = git_state.short_status(r, opened.top, opened.workspace).strip()
    except (pygit2.GitError, OSError, ValueError):
        status = ""
    log = git_state.recent_commits(r).strip()
    if len(status) > MAX_STATUS_CHARS:
        status = status[:MAX_STATUS_CHARS] + "\n" + STATUS_TRUNCATED_NOTE
    parts = [
        f"{GIT_STATUS_HEADER}\nCurrent branch: {branch}",
        f"Main branch (you will usually use this for PRs): {main}",
    ]
    if user:
        parts.append(f"Git user: {user}")
    parts.append(f"Status:\n{status or '(clean)'}")
    if log:
        parts.append(f"Recent commits:\n{log}")
    return "gitStatus: " + "\n\n".join(parts), ""


def _snapshot_within(workspace: str) -> tuple[str, str]:
    """:func:`_snapshot`, given up after :data:`GIT_TIMEOUT_SECONDS` (a huge or hostile work tree)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="git-state")
    try:
        return pool.submit(_snapshot, workspace).result(timeout=GIT_TIMEOUT_SECONDS)
    except FuturesTimeout:
        return "", f"reading it took longer than {GIT_TIMEOUT_SECONDS:g} s"
    except Exception:  # a repository libgit2 cannot make sense of: no git information, never a failed start
        log.warning("reading the git state of %s failed", workspace, exc_info=True)
        return "", ""
    finally:
        pool.shutdown(wait=False)


def is_git_repo(workspace: str) -> bool:
    """Whether ``workspace`` is inside a git work tree Mainsail may read (False for a .git dir or a bare repo)."""
    from workflows.git import state as git_state

    return git_state.open_repo(workspace).repo is not None


def git_status(workspace: str) -> str:
    """Claude Code's ``gitStatus: ...`` block for ``workspace``; "" outside a git repository.

    Read through libgit2 (:mod:`workflows.git.state`): no program of the repository runs.
    """
    return _snapshot_within(workspace)[0]


def environment_block(workspace: str, *, git_repo: bool | None = None) -> str:
    """The ``<env>`` block: working directory, git or not, platform and OS version (no date)."""
    if git_repo is None:
        git_repo = is_git_repo(workspace)
    return (
        "<env>\n"
        f"Working directory: {os.path.abspath(workspace)}\n"
        f"Is directory a git repo: {'Yes' if git_repo else 'No'}\n"
        f"Platform: {sys.platform}\n"
        f"OS Version: {platform.release()}\n"
        "</env>"
    )


def system_context(workspace: str) -> str:
    """The environment block, then the git status block when ``workspace`` is in a repository.

    A repository :mod:`workflows.git.state` refuses (its ``.git`` leads outside it) reads as none,
    with a line saying so in place of the status.
    """
    git, why = _snapshot_within(workspace)
    env = environment_block(workspace, git_repo=bool(git))
    if why:
        return f"{env}\n{GIT_LEFT_OUT.format(why=why)}"
    return f"{env}\n{git}" if git else env


# --------------------------------------------------------------------------- memory files

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
