"""What the checker knows about particular commands.

* **Wrappers** run another command (``timeout 5 rm x``, ``env -i rm x``,
  ``xargs rm``, ``find -exec rm``, ``bash -c 'rm x'``): :func:`unwrap` finds
  every command a command line would run, so a deny rule for ``rm`` sees them,
  and says when that cannot be known (``source``, ``sh`` reading a script,
  ``eval $x``). How each wrapper's own options are read is in
  :mod:`workflows.permissions.shell.wrappers`.
* **Safe wrappers** for allow rules: only ``timeout``, ``nice``, ``nohup`` and
  ``time -p`` are looked through (``timeout 30 npm test`` matches
  ``Bash(npm test:*)``); everything else must match a rule as written.
* **Programs run by options** (``rg --pre``, ``tar --checkpoint-action``,
  ``git bisect run``) and builtins that rebind names or evaluate code held in
  an argument (``alias``, ``hash``, ``test -v``, ``read``, ``let``):
  :func:`runs_program` and :data:`SHELL_STATE`.
* Read-only commands and acceptEdits' file commands live in
  :mod:`workflows.permissions.shell.readonly` (re-exported here).
* **No-prefix commands**: shells, interpreters and wrappers, for which an
  "(a)lways" answer adds the exact command, never ``Bash(python3:*)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workflows.permissions.shell.wrappers import (
    GIT_GLOBAL_FLAGS,
    GIT_GLOBAL_VALUED,
    WRAPPERS,
    Words,
    find_exec,
    flock_inner,
    shell_inner,
    skip_options,
    watch_inner,
)

__all__ = [
    "FILE_COMMANDS",
    "READ_ONLY",
    "git_finds_workspace_repo",
    "Unwrapped",
    "file_command_paths",
    "needs_exact_rule",
    "read_only",
    "safe_env_name",
    "strip_safe_wrappers",
    "unwrap",
]

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
_INTERPRETER = re.compile(
    r"(python[0-9.]*|pypy[0-9.]*|ipython[0-9.]*|node|nodejs|deno|bun|bunx|npx|pnpx|uvx|perl[0-9.]*|ruby|irb|"
    r"php|lua|luajit|tclsh|wish|Rscript|R|osascript|pwsh|powershell|awk|gawk|mawk|nawk|sed|jshell|groovy|"
    r"scala|swift|java|expect|make|gmake)"
)
#: Commands that run other commands: an "(a)lways" never covers them by prefix.
RUNNERS = frozenset({
    "env", "xargs", "sudo", "doas", "su", "exec", "eval", "command", "builtin", "nohup", "time", "timeout",
    "nice", "ionice", "stdbuf", "setsid", "watch", "flock", "chroot", "unbuffer", "strace", "ltrace", "nsenter",
    "unshare", "firejail", "bwrap", "script", "parallel", "find", "source", ".", "coproc", "chrt", "taskset",
    "git", "ssh", "docker", "kubectl", "trap", "alias",
})

#: Commands whose every use is a decision of its own: "(a)lways" adds the exact command for them too.
DESTRUCTIVE = frozenset({
    "rm", "rmdir", "shred", "dd", "truncate", "chmod", "chown", "chgrp", "kill", "pkill", "killall", "mkfs",
    "mount", "umount", "ln", "tee", "curl", "wget", "scp", "rsync", "install", "mv", "cp", "touch", "mkdir",
})

#: Variables a ``NAME=value cmd`` prefix may set without a rule asking: they change output, not
#: what runs or where it writes. Anything else (PATH, LD_PRELOAD, PYTEST_ADDOPTS, GOFLAGS,
#: RUSTC_WRAPPER, CDPATH, GIT_*, ...) asks, as in Claude Code.
_SAFE_ENV = re.compile(
    r"(LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|COLUMNS|LINES|CI|NO_COLOR|FORCE_COLOR|CLICOLOR(_FORCE)?|COLORTERM|"
    r"NODE_ENV|RAILS_ENV|RACK_ENV|APP_ENV|FLASK_ENV|DEBUG|VERBOSE|RUST_LOG|RUST_BACKTRACE|"
    r"PYTHONUNBUFFERED|PYTHONDONTWRITEBYTECODE|PYTHONHASHSEED|PYTHONIOENCODING|PYTHONUTF8|"
    r"GOOS|GOARCH|CGO_ENABLED|TF_CPP_MIN_LOG_LEVEL|NPM_CONFIG_LOGLEVEL|LOG_LEVEL|TEST|TESTING)"
)


def safe_env_name(name: str) -> bool:
    """Whether ``NAME=value cmd`` leaves what ``cmd`` does and where it writes alone (an allow-list)."""
    return bool(_SAFE_ENV.fullmatch(name))


def needs_exact_rule(name: str) -> bool:
    """Shells, interpreters, command runners and destructive commands: "(a)lways" adds the exact
    command, never a prefix."""
    base = name.rsplit("/", 1)[-1]
    return base in SHELLS or base in RUNNERS or base in DESTRUCTIVE or bool(_INTERPRETER.fullmatch(base))


# =========================================================================== safe wrappers (allow rules)

_DURATION = re.compile(r"\d+(\.\d+)?[smhd]?")


def strip_safe_wrappers(words: Words) -> Words:
    """The command inside the wrappers an allow rule may look through: ``timeout [-s SIG|-k DUR] DUR``,
    ``nice [-n N]``, ``nohup``, ``time [-p]``. Anything unexpected stops the stripping."""
    while words:
        inner = _strip_one_safe(words)
        if inner is None:
            return words
        words = inner
    return words


def _strip_one_safe(words: Words) -> Words | None:
    name, rest = words[0], words[1:]
    i = 0
    if name == "timeout":
        while i < len(rest) and rest[i] is not None and rest[i].startswith("-"):
            i += 2 if rest[i] in ("-s", "--signal", "-k", "--kill-after") else 1
        if i < len(rest) and rest[i] is not None and _DURATION.fullmatch(rest[i]):
            i += 1
        else:
            return None
    elif name == "nice":
        if rest and rest[0] in ("-n", "--adjustment"):
            i = 2
        elif rest and rest[0] is not None and re.fullmatch(r"-n?-?\d+|--adjustment=-?\d+", rest[0]):
            i = 1
    elif name == "time":
        while i < len(rest) and rest[i] == "-p":
            i += 1
    elif name != "nohup":
        return None
    inner = rest[i:]
    return inner if inner and inner[0] is not None else None


# =========================================================================== unwrap (deny rules)


@dataclass
class Unwrapped:
    """Every command a command line runs: ``levels`` (each a word list: as written, then inside each
    wrapper), ``scripts`` (shell code it runs: ``bash -c X``, ``eval X``), ``dynamic`` (why the command
    that runs cannot be known, or None)."""

    levels: list[Words] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    dynamic: str | None = None


def unwrap(words: Words) -> Unwrapped:
    """Look through wrappers, ``find -exec``, shells with ``-c`` and ``eval``, as deep as they go."""
    out = Unwrapped()
    todo = [words]
    while todo and len(out.levels) < 32:
        current = todo.pop()
        if not current:
            continue
        out.levels.append(current)
        name = current[0]
        if name is None:
            out.dynamic = out.dynamic or "a command name that is not plain text"
            continue
        base = name.rsplit("/", 1)[-1]
        try:
            inner, scripts, why = _inner(base, current[1:])
        except IndexError:
            inner, scripts, why = [], [], None
        todo.extend(inner)
        out.scripts.extend(scripts)
        if why and not out.dynamic:
            out.dynamic = why
    return out


def _inner(name: str, args: Words) -> tuple[list[Words], list[str], str | None]:
    """The commands ``name args`` runs: (word lists, shell scripts, why unknown)."""
    if name in WRAPPERS:
        start = WRAPPERS[name](args)
        if start is None:
            return [], [], f"`{name}` with options the checker does not read"
        return ([args[start:]] if start < len(args) else []), [], None
    if name in SHELLS:
        return shell_inner(name, args)
    if name == "eval":
        if any(a is None for a in args):
            return [], [], "eval of text that is not plain"
        return [], [" ".join(a for a in args if a is not None)], None
    if name in ("source", "."):
        return [], [], f"`{name}` runs the commands of a file"
    if name == "find":
        return find_exec(args), [], None
    if name == "su":
        if "-c" in args and args.index("-c") + 1 < len(args) and args[args.index("-c") + 1] is not None:
            return [], [args[args.index("-c") + 1]], None
        return [], [], "`su` starts a shell"
    if name == "watch":
        return watch_inner(args)
    if name == "flock":
        return flock_inner(args)
    if name == "git":
        return _git_inner(args)
    if name in OPAQUE_RUNNERS:
        return [], [], f"`{name}` runs a command the checker does not read"
    if name in SHELL_STATE:
        return [], [], f"`{name}` changes what later names run or evaluates code"
    if why := runs_program(name, args):
        return [], [], why
    return [], [], None


#: Programs that run another command in ways the checker does not read (their options vary).
OPAQUE_RUNNERS = frozenset({
    "strace", "ltrace", "nsenter", "unshare", "firejail", "bwrap", "unbuffer", "script", "parallel", "chrt",
    "taskset", "expect", "ssh", "setarch", "linux32", "linux64", "i386", "x86_64", "prlimit", "setpriv", "sg",
    "runuser", "newgrp", "pkexec", "systemd-run", "run-parts", "fakeroot", "fakechroot", "proot", "valgrind",
    "gdb", "perf", "catchsegv", "busybox", "toybox", "chronic", "ts", "ionice-wrapper", "stdbuf-wrapper",
})
#: Builtins that change what a later name runs, or evaluate code held in an argument
#: (``test -v 'a[$(cmd)]'``, ``printf -v 'a[$(cmd)]'``, ``read``, ``let``, ``mapfile -C``).
SHELL_STATE = frozenset({
    "alias", "unalias", "hash", "enable", "shopt", "compgen", "complete", "mapfile", "readarray", "let",
    "read", "bind", "trap", "fc", "typeset", "declare", "export", "local", "readonly",
})
#: Options with which an otherwise ordinary command runs a program (abbreviations included).
PROGRAM_OPTIONS: dict[str, tuple[str, ...]] = {
    "rg": ("--pre", "--hostname-bin"),
    "tar": ("--checkpoint-action", "--use-compress-program", "-I", "--to-command", "--info-script", "-F",
            "--new-volume-script", "--rsh-command"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "sort": ("--compress-program",),
    "zip": ("-TT", "--unzip-command"),
    "less": ("--lesskey-src",),
}
_GIT_RUNS = {("bisect", "run"), ("submodule", "foreach"), ("rebase", "-x"), ("rebase", "--exec"),
             ("difftool", "-x"), ("difftool", "--extcmd"), ("filter-branch", None), ("grep", "-O"),
             ("grep", "--open-files-in-pager"), ("mergetool", None), ("daemon", None)}


def runs_program(name: str, args: Words) -> str | None:
    """Why ``name args`` runs a program the checker cannot see (an option naming one), or None."""
    if name == "printf" and not any(a == "-v" or (a or "").startswith("-v") for a in args):
        return None  # printf runs nothing without -v
    if name == "test" or name == "[":
        return None if "-v" not in args else "`test -v` evaluates an array subscript"
    if name == "git":
        sub = next((a for a in args if a and not a.startswith("-")), None)
        for s, opt in _GIT_RUNS:
            if sub == s and (opt is None or any(a and (a == opt or a.startswith(opt)) for a in args)):
                return f"`git {sub}` runs a program"
        return None
    names = PROGRAM_OPTIONS.get(name)
    if not names:
        return None
    for a in args:
        if a is None:
            continue
        for n in names:
            if n.startswith("--") and a.startswith("--") and len(a.split("=", 1)[0]) > 3 and n.startswith(
                    a.split("=", 1)[0]):
                return f"`{name} {n}` runs a program"
            if not n.startswith("--") and (a == n or (a.startswith(n) and len(n) == 2)):
                return f"`{name} {n}` runs a program"
    return None


def _git_inner(args: Words) -> tuple[list[Words], list[str], str | None]:
    """``git -C x push`` runs ``git push``: the level a deny rule for ``git push`` must see."""
    i = skip_options(args, GIT_GLOBAL_VALUED | {"-c", "--config-env"}, GIT_GLOBAL_FLAGS, attached="Cc")
    if i is None:
        return [], [], "git with global options the checker does not read"
    if any(a and (a.startswith("-c") or a.startswith("--config-env")) for a in args[:i]):
        return [], [], "`git -c` can run a command from a setting"
    if why := runs_program("git", args[i:]):
        return [], [], why
    return ([["git", *args[i:]]] if 0 < i < len(args) else []), [], None


from workflows.permissions.shell.readonly import (  # noqa: E402  (re-exported: one place to ask about a command)
    FILE_COMMANDS,
    READ_ONLY,
    file_command_paths,
    git_finds_workspace_repo,
    read_only,
)
