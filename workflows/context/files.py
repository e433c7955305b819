"""The context Claude Code gives a model besides the transcript: pure functions.

- :func:`system_context`: the ``<env>`` block and the ``gitStatus`` snapshot, computed once at a session's
  start. The caller stores the string in the session record so every worker sends the same bytes.
- :data:`DEFAULT_SYSTEM_PROMPT` and :func:`system_prompt`: the ``system``
  parameter of a Messages API call, as a list of text blocks.
- The memory files and the first user message's ``<system-reminder>`` are in
  :mod:`workflows.context.claude_md`.

Only files are read (git state through libgit2, which runs nothing); nothing here touches Redis, and
nothing here raises for a missing, unreadable or odd file or repository.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout

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
    from workflows.git.locate import may_hold_repository

    if not may_hold_repository(workspace):
        return "", ""  # (libgit2 costs ~30 ms to load: only where there is a repository to read)
    import pygit2

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
    from workflows.git.locate import may_hold_repository

    if not may_hold_repository(workspace):
        return False
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
