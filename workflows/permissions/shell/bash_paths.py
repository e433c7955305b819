"""The paths a command line names, resolved as bash and the kernel will resolve them.

Used by the deny side (:mod:`bash_deny`: does a Read/Edit deny rule cover a path
the line names?) and the approval side (:mod:`bash_check`: does an automatically
approved part stay inside the workspace?). Every text is resolved with
:mod:`workflows.permissions.rules.paths`, the resolver the tools use too.

What counts as a path, fail closed:

* every argument as a whole (``--x/../../y`` is a path too), the value of a
  ``--opt=value`` option, every place a ``-xVALUE`` value may start, the file
  of an ``@file`` response-file argument, and each item of a colon list
  (``file -m a:b``; not a URL);
* a glob's matches on disk (bash's rules: no dotfiles unless the pattern
  starts with a dot) and the pattern itself;
* for a text holding ``..``, both the kernel's reading (symlinks first) and
  the lexical one (``..`` removed as text, as ``cd``, ``cp --parents`` and a
  symlink replaced earlier in the line would see it).

Working directories are tracked the way bash keeps ``$PWD`` (logical; see
:func:`cd_targets`), each command checked under every directory a ``cd`` in the
line may have left the shell in (``None``: unknown).
"""

from __future__ import annotations

import fnmatch
import glob as globmod
import os

from workflows.permissions.rules import paths
from workflows.permissions.shell.bash_model import Word

__all__ = ["Cwds", "MAX_GLOB_MATCHES", "SAFE_DEVICES", "cd_targets", "glob_may_be_option", "lexical",
           "may_match_protected", "path_texts", "resolve_all"]

Cwds = frozenset  # of str | None (None: a directory the checker could not resolve)

SAFE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/zero", "/dev/urandom",
                          "/dev/random", "/dev/tty"})
MAX_GLOB_MATCHES = 2000
_GLOB_CHARS = "*?["


def path_texts(word: Word) -> list[str]:
    """The texts in one argument that may name a file (see the module docstring)."""
    v = word.value
    if v is None:
        return []
    out = [v]
    if v.startswith("-") and v != "-":
        if "=" in v:
            out.append(v.split("=", 1)[1])
        if not v.startswith("--"):
            out += [v[i:] for i in range(2, len(v))]  # -tDIR, -ft/dir, -o/x
    if v.startswith("@") and len(v) > 1:
        out.append(v[1:])  # a response file: strings @FILE, gcc @FILE
    if ":" in v and "://" not in v:
        out += v.split("=", 1)[-1].split(":")  # a colon list: file -m a:b, PATH-like values
    return [t for t in dict.fromkeys(out) if t]


def resolve_all(word: Word, text: str, cwd: str | None, hm: str) -> tuple[list[str], bool]:
    """The resolved paths ``text`` may name under ``cwd``; True when that cannot be known.

    A glob gives its matches (and the pattern itself: bash passes it on when nothing
    matches); more than :data:`MAX_GLOB_MATCHES` are returned as they are, so the caller can
    refuse. A text holding ``..`` gives its lexical reading too.
    """
    if not text:
        return [], False
    if text.startswith("~") and not (word.tilde and text == word.value):
        text = "./" + text  # a quoted ~ (or one inside an option value) is a literal name
    if cwd is None and not (os.path.isabs(text) or text.startswith("~")):
        return [], True
    base = cwd or "/"
    try:
        expanded = paths.expand(text, cwd=base, home=hm)
        if word.glob and text == word.value:
            # Python's glob skips dotfiles unless the segment starts with a dot, as bash does (no dotglob).
            matches = globmod.glob(expanded)[:MAX_GLOB_MATCHES + 1]
            return [os.path.realpath(m) for m in matches] + [os.path.realpath(expanded)], False
        found = [os.path.realpath(expanded)]
        if ".." in text.split("/"):
            found.append(os.path.realpath(os.path.normpath(expanded)))
        return list(dict.fromkeys(found)), False
    except paths.Unresolvable:
        return [], True


def lexical(text: str, cwd: str, hm: str) -> str | None:
    """``text`` made absolute with ``..`` removed as text (no symlink followed), or None."""
    try:
        return os.path.normpath(paths.expand(text, cwd=cwd, home=hm))
    except paths.Unresolvable:
        return None


def quoted_glob(word: Word) -> bool:
    """A pattern mixing quoted and unquoted characters: Python's glob would read the quoted
    ``[a]`` as a class where bash reads it as text, so its matches cannot be trusted."""
    return word.glob and any(c in word.raw for c in "'\"\\")


def glob_may_be_option(word: Word, cwds: Cwds, hm: str, created_earlier: bool) -> bool:
    """Whether bash could expand this pattern to a word starting with ``-`` (an option: ``[-]-p*``
    is ``--pre=bash`` if such a file exists, ``[-]d*`` is ``-delete``). It could when its first
    character is a pattern character and a matching file starts with ``-`` now, or an earlier part
    of the line may create files (then nothing on disk now tells)."""
    v = word.value or ""
    if not word.glob or not v or v[0] not in _GLOB_CHARS:
        return False
    if created_earlier:
        return True
    for cwd in cwds:
        if cwd is None:
            return True
        try:
            matches = globmod.glob(paths.expand(v, cwd=cwd, home=hm))
        except paths.Unresolvable:
            return True
        if any(os.path.basename(m).startswith("-") for m in matches):
            return True
    return False


def may_match_protected(pattern: str) -> bool:
    """Whether a segment of a glob could match .git, .claude, .mainsail or .mcp.json, whatever is on disk now."""
    return any(fnmatch.fnmatchcase(name, seg) for seg in pattern.split("/") for name in paths.PROTECTED_DIRS)


def cd_targets(level: tuple[str | None, ...] | list[str | None], cwds: Cwds, hm: str) -> Cwds:
    """Where a ``cd`` may leave the shell: for each directory it may start from, bash's logical
    result (``..`` removed as text, so ``cd link/..`` is back where it started) and the physical one
    (bash falls back to it). Working directories are kept logical, as bash keeps ``$PWD``; the
    kernel resolves a relative path from there exactly as :func:`paths.resolve` does."""
    args = [a for a in level[1:] if a not in ("-L", "-P", "-e", "-@", "--")]
    if level[0] != "cd" or len(args) > 1 or (args and (args[0] is None or args[0] == "-")):
        return Cwds({None})
    out = set()
    for cwd in cwds:
        if cwd is None:
            out.add(None)
            continue
        try:
            target = paths.expand(args[0], cwd=cwd, home=hm) if args else hm
        except paths.Unresolvable:
            out.add(None)
            continue
        out.add(os.path.normpath(target))
        out.add(os.path.realpath(target))
    return Cwds(out)
