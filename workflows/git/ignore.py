"""Keeping the ``settings.local.json`` files Mainsail writes out of git, as Claude Code keeps its own.

A local settings file holds what is yours in one project, secrets included (``mainsail mcp add -e
TOKEN=...`` writes them to ``.mainsail/settings.local.json``). Claude Code 2.1.332, when it writes its
``.claude/settings.local.json``, adds ``**/.claude/settings.local.json`` to your global git excludes file
(``core.excludesFile`` of your global git config, else ``$XDG_CONFIG_HOME/git/ignore``, else
``~/.config/git/ignore``), so no repository shows it to ``git add``. Mainsail does the same for both
names it writes. The global file is found by git itself with no repository (``--git-dir=/dev/null``,
system config and includes off), so nothing of a workspace's configuration runs or counts.

Ignore rules do not apply to a file git already tracks: then the note says so, and how to stop tracking
it. Failing to update the excludes file never fails the write it follows: the note says what went wrong.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from workflows.git import index as git_index

#: The local settings files Mainsail writes, relative to a workspace.
LOCAL_SETTINGS = (".mainsail/settings.local.json", ".claude/settings.local.json")


def global_excludes_file(home: Path, environ: dict[str, str] | None = None) -> Path:
    """The file git reads global ignore rules from, as Claude Code finds it."""
    env = dict(os.environ if environ is None else environ)
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1")
    configured = ""
    try:
        done = subprocess.run(["git", "--git-dir=/dev/null", "config", "--no-includes", "core.excludesFile"],
                              env=env, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL,
                              cwd=str(home) if Path(home).is_dir() else "/")
        configured = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        pass  # no git: its default place
    if configured == "~" or configured.startswith("~/"):
        return Path(home) / configured[2:]
    if configured and os.path.isabs(configured):
        return Path(configured)
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path(home) / ".config"
    return base / "git" / "ignore"


def keep_out_of_git(path: Path, workspace: Path, home: Path) -> str | None:
    """After writing ``path`` (one of :data:`LOCAL_SETTINGS` under ``workspace``): make git ignore that name
    everywhere; a note for the person (what was added, or why it does not help), None when nothing changed."""
    rel = os.path.relpath(path, workspace).replace(os.sep, "/")
    if rel not in LOCAL_SETTINGS:
        return None
    if git_index.tracked(path) == git_index.TRACKED:
        return (f"Warning: {rel} is tracked by git in this repository, so ignore rules do not apply to it and what "
                f"it holds (tokens in env or headers) goes into your next commit. Stop tracking it: git rm --cached "
                f"{rel}")
    rule = f"**/{rel}"
    excludes = global_excludes_file(home)
    try:
        text = excludes.read_text(encoding="utf-8") if excludes.exists() else ""
        if rule in (line.strip() for line in text.splitlines()):
            return None
        excludes.parent.mkdir(parents=True, exist_ok=True)
        with open(excludes, "a", encoding="utf-8") as f:
            f.write(("" if not text or text.endswith("\n") else "\n") + rule + "\n")
    except (OSError, UnicodeDecodeError) as exc:
        return (f"Warning: could not add {rule} to your global git excludes file {excludes} ({exc}): git may show "
                f"{rel} to git add. Add that line yourself, or to the repository's .git/info/exclude.")
    return f"Git now ignores {rel} in every repository: added {rule} to {excludes} (as Claude Code does)."
