"""Git state of a workspace, read through libgit2 (pygit2): nothing here runs a program.

Mainsail reads a workspace's repository for the context's ``gitStatus`` snapshot, a session's
branch and the auto-memory project root. The workspace is the model's to write, so its ``.git``
is hostile input: ``git status`` would run ``core.fsmonitor`` (and filters, hooks, ...) from a
config the model planted, on the host, with the worker's environment. libgit2 runs no
configured program at all (no fsmonitor, hooks, filter drivers, diff drivers, ssh), so reading
through it is safe by construction rather than by a list of knobs to turn off.

What libgit2 would still follow, and this module refuses before opening anything (the
repository then reads as "no git information", with a :attr:`Repo.note` saying why):

- a ``.git`` (symlink or ``gitdir:`` file), a ``commondir`` or a ``core.worktree`` leading out of the
  repository's top directory, unless it is a layout git itself makes and that can be verified
  (a linked worktree whose gitdir points back at this ``.git`` file; a submodule whose
  ``core.worktree`` points back at this directory);
- an ``include``/``includeIf`` section in the repository's own config files (they could pull
  values from any file on the machine into what is shown), and ``objects/info/alternates``
  entries outside it (commits of another repository).

Discovery walks up from the workspace looking for ``.git`` only (a bare repository planted in the
workspace is never used), honouring ``GIT_CEILING_DIRECTORIES`` like git.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import pygit2
from pygit2.enums import ConfigLevel, FileStatus, RepositoryOpenFlag, SortMode

from workflows.git.locate import find_top as _find_top

__all__ = ["Repo", "open_repo", "current_branch", "toplevel"]

_INCLUDE = re.compile(rb"^\s*\[\s*include(if)?\b", re.IGNORECASE | re.MULTILINE)


@dataclass
class Repo:
    """An opened repository (``repo`` None: none, or refused: then ``note`` says why)."""

    workspace: str
    top: str = ""
    repo: pygit2.Repository | None = None
    note: str = ""


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip(os.sep) + os.sep)


def _read_line(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None


def _gitdir(top: str) -> tuple[str | None, str, str]:
    """``top``'s git directory and commondir (resolved), or None, "" and why they are refused."""
    dotgit = os.path.join(top, ".git")
    if os.path.isdir(dotgit):
        gitdir = os.path.realpath(dotgit)
    else:
        line = _read_line(dotgit)
        if not line or not line.startswith("gitdir:"):
            return None, "", ""  # not a repository (git says so too)
        gitdir = os.path.realpath(os.path.join(top, line[len("gitdir:"):].strip()))
    common = gitdir
    text = _read_line(os.path.join(gitdir, "commondir"))
    if text is not None:
        common = os.path.realpath(os.path.join(gitdir, text))
    if (_inside(gitdir, top) and _inside(common, top)) or _linked_worktree(dotgit, gitdir, common) \
            or _submodule(top, gitdir, common):
        return gitdir, common, ""
    where = gitdir if not _inside(gitdir, top) else common
    return None, "", f"its git directory leads outside {top} (to {where})"


def _linked_worktree(dotgit: str, gitdir: str, common: str) -> bool:
    """A ``git worktree add`` layout: ``common/worktrees/NAME`` whose ``gitdir`` names this ``.git`` file."""
    if os.path.isdir(dotgit) or os.path.dirname(gitdir) != os.path.join(common, "worktrees"):
        return False
    back = _read_line(os.path.join(gitdir, "gitdir"))
    return bool(back) and os.path.realpath(os.path.join(gitdir, back)) == os.path.realpath(dotgit)


def _submodule(top: str, gitdir: str, common: str) -> bool:
    """A submodule's layout: ``SUPER/.git/modules/...`` whose ``core.worktree`` is this directory."""
    if gitdir != common or "/.git/modules/" not in gitdir + "/" or _has_include(gitdir):
        return False
    try:
        value = pygit2.Config(os.path.join(gitdir, "config"))["core.worktree"]
    except (KeyError, pygit2.GitError, OSError, ValueError):
        return False
    return os.path.realpath(os.path.join(gitdir, value)) == top


def _outside_alternate(common: str, top: str) -> str:
    """An ``objects/info/alternates`` entry outside ``top`` (objects another repository holds), or ""."""
    objects = os.path.join(common, "objects")
    try:
        with open(os.path.join(objects, "info", "alternates"), "rb") as fh:
            lines = fh.read(100_000).decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#") and not _inside(os.path.realpath(os.path.join(objects, line)), top):
            return line
    return ""


def _has_include(*dirs: str) -> bool:
    for d in dirs:
        for name in ("config", "config.worktree"):
            try:
                with open(os.path.join(d, name), "rb") as fh:
                    if _INCLUDE.search(fh.read(1_000_000)):
                        return True
            except OSError:
                continue
    return False


def open_repo(workspace: str) -> Repo:
    """The repository whose work tree holds ``workspace``, opened without following anything outside it."""
    ws = os.path.realpath(workspace)
    out = Repo(workspace=ws)
    if not os.path.isdir(ws):
        return out
    top = _find_top(ws)
    if top is None or ".git" in os.path.relpath(ws, top).split(os.sep):
        return out  # no repository, or the workspace is inside a git directory (not a work tree)
    gitdir, common, why = _gitdir(top)
    if gitdir is None:
        out.note = why
        return out
    if _has_include(gitdir, common):
        out.note = f"the repository's config at {gitdir} includes other files"
        return out
    outside = _outside_alternate(common, top)
    if outside:
        out.note = f"its object store borrows from outside {top} (alternates: {outside})"
        return out
    try:
        repo = pygit2.Repository(gitdir, RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, OSError, ValueError):
        return out
    if repo.is_bare or not repo.workdir:
        return out
    if os.path.realpath(repo.workdir) != top:
        out.note = f"its work tree is set elsewhere ({repo.workdir.rstrip(os.sep)})"
        return out
    out.top, out.repo = top, repo
    return out


def current_branch(workspace: str) -> str | None:
    """What ``git rev-parse --abbrev-ref HEAD`` says: the branch, "HEAD" when detached; None if no commit."""
    r = open_repo(workspace).repo
    if r is None:
        return None
    try:
        if r.head_is_unborn:
            return None
        return "HEAD" if r.head_is_detached else r.head.shorthand
    except pygit2.GitError:
        return None


def toplevel(workspace: str) -> str | None:
    """What ``git rev-parse --show-toplevel`` says, for a repository :func:`open_repo` accepts."""
    opened = open_repo(workspace)
    return opened.top if opened.repo is not None else None


# --------------------------------------------------------------------------- snapshot reads


def branch_name(r: pygit2.Repository) -> str:
    """The current branch (an unborn one too), "HEAD" when detached."""
    try:
        if r.head_is_detached:
            return "HEAD"
        target = r.references["HEAD"].target
    except (pygit2.GitError, KeyError):
        return "HEAD"
    return target[len("refs/heads/"):] if isinstance(target, str) and target.startswith("refs/heads/") else "HEAD"


def main_branch(r: pygit2.Repository, current: str) -> str:
    """``origin/HEAD``'s branch, else main, else master, else ``current`` (Claude Code's order)."""
    try:
        target = r.references["refs/remotes/origin/HEAD"].target
    except (KeyError, pygit2.GitError):
        target = None
    prefix = "refs/remotes/origin/"
    if isinstance(target, str) and target.startswith(prefix) and len(target) > len(prefix):
        return target[len(prefix):]
    for name in ("main", "master"):
        if f"refs/heads/{name}" in r.references or f"refs/remotes/origin/{name}" in r.references:
            return name
    return current


def user_name(r: pygit2.Repository) -> str:
    """``git config user.name`` (GIT_CONFIG_GLOBAL and GIT_CONFIG_NOSYSTEM honoured as git does)."""
    found: dict[int, str] = {}
    global_file = os.environ.get("GIT_CONFIG_GLOBAL")
    nosystem = os.environ.get("GIT_CONFIG_NOSYSTEM", "").lower() in ("1", "true", "yes", "on")
    try:
        for entry in r.config:
            if entry.name.lower() != "user.name":
                continue
            level = int(entry.level)
            if global_file is not None and level in (ConfigLevel.GLOBAL, ConfigLevel.XDG):
                continue
            if nosystem and level in (ConfigLevel.SYSTEM, ConfigLevel.PROGRAMDATA):
                continue
            found[level] = entry.value or ""
        if global_file:
            try:
                found.setdefault(int(ConfigLevel.GLOBAL), pygit2.Config(global_file)["user.name"])
            except (KeyError, pygit2.GitError, OSError):
                pass
    except (pygit2.GitError, ValueError):
        return ""
    return found[max(found)] if found else ""


def recent_commits(r: pygit2.Repository, n: int = 5) -> str:
    """``git log --oneline -n N``: the short id and the subject, newest first."""
    try:
        if r.head_is_unborn:
            return ""
        lines = []
        for c in r.walk(r.head.target, SortMode.TOPOLOGICAL | SortMode.TIME):
            lines.append(f"{c.short_id} {_subject(c)}")
            if len(lines) == n:
                break
    except (pygit2.GitError, ValueError):
        return ""
    return "\n".join(lines)


def _subject(c: pygit2.Commit) -> str:
    try:
        text = c.raw_message.decode(c.message_encoding or "utf-8", "replace")
    except LookupError:  # an encoding name Python does not know
        text = c.raw_message.decode("utf-8", "replace")
    para = text.lstrip("\n").split("\n\n", 1)[0]
    return " ".join(line.strip() for line in para.splitlines() if line.strip())


_INDEX_CODES = ((FileStatus.INDEX_NEW, "A"), (FileStatus.INDEX_MODIFIED, "M"), (FileStatus.INDEX_DELETED, "D"),
                (FileStatus.INDEX_RENAMED, "R"), (FileStatus.INDEX_TYPECHANGE, "T"))
_WT_CODES = ((FileStatus.WT_MODIFIED, "M"), (FileStatus.WT_DELETED, "D"), (FileStatus.WT_TYPECHANGE, "T"),
             (FileStatus.WT_RENAMED, "R"))
_UNTRACKED_MODES = {"no": "no", "false": "no", "normal": "normal", "true": "normal", "all": "all"}


def short_status(r: pygit2.Repository, top: str, workspace: str) -> str:
    """``git status --short`` from ``workspace``: tracked changes, then untracked, each in path order.

    Paths are relative to the workspace and quoted as git quotes them; a rename staged in the
    index is one ``R  old -> new`` line (libgit2's rename detection, git's 50% threshold).
    """
    try:
        mode = _UNTRACKED_MODES.get(str(r.config["status.showUntrackedFiles"]).lower(), "normal")
    except (KeyError, pygit2.GitError, ValueError):
        mode = "normal"
    entries = r.status(untracked_files=mode)
    renamed = _staged_renames(r)
    tracked: list[tuple[str, str]] = []
    untracked: list[str] = []
    gone = set(renamed.values())
    for path, flags in entries.items():
        if flags & FileStatus.IGNORED or (path in gone and flags == FileStatus.INDEX_DELETED):
            continue
        if flags & FileStatus.CONFLICTED:
            tracked.append((path, "UU " + _show(path, top, workspace)))
        elif flags & FileStatus.WT_NEW and not flags & ~FileStatus.WT_NEW:
            untracked.append(path)
        else:
            if flags & FileStatus.WT_NEW:  # deleted from the index, still on disk: git shows both
                untracked.append(path)
            x = next((c for f, c in _INDEX_CODES if flags & f), " ")
            y = next((c for f, c in _WT_CODES if flags & f), " ")
            shown = _show(path, top, workspace)
            if path in renamed:
                x, shown = "R", f"{_show(renamed[path], top, workspace)} -> {shown}"
            tracked.append((path, f"{x}{y} {shown}"))
    lines = [line for _, line in sorted(tracked)]
    lines += [f"?? {_show(p, top, workspace)}" for p in sorted(untracked)]
    return "\n".join(lines)


def _staged_renames(r: pygit2.Repository) -> dict[str, str]:
    """New path -> old path for the renames between HEAD and the index."""
    try:
        if r.head_is_unborn:
            return {}
        diff = r.index.diff_to_tree(r.head.peel(pygit2.Tree))
        diff.find_similar()
        return {d.new_file.path: d.old_file.path for d in diff.deltas if d.status_char() == "R"}
    except (pygit2.GitError, ValueError, KeyError):
        return {}


def _show(path: str, top: str, workspace: str) -> str:
    rel = os.path.relpath(os.path.join(top, path), workspace)
    return _quote(rel + ("/" if path.endswith("/") else ""))


_ESCAPES = {"\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r", '"': '"', "\\": "\\"}


def _quote(path: str) -> str:
    """git's ``quote_c_style`` with ``core.quotePath`` on and spaces quoted (the short format's)."""
    raw = path.encode("utf-8", "surrogateescape")
    if not any(b < 0x21 or b >= 0x7F or b in b'"\\' for b in raw):
        return path
    out = []
    for b in raw:
        ch = chr(b)
        if ch in _ESCAPES:
            out.append("\\" + _ESCAPES[ch])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
