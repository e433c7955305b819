"""What the checker knows about particular commands.

* **Wrappers** run another command (``timeout 5 rm x``, ``env -i rm x``,
  ``xargs rm``, ``find -exec rm``, ``bash -c 'rm x'``): :func:`unwrap` finds
  every command a command line would run, so a deny rule for ``rm`` sees them,
  and says when that cannot be known (``source``, ``sh`` reading a script,
  ``eval $x``).
* **Safe wrappers** for allow rules: only ``timeout``, ``nice``, ``nohup`` and
  ``time -p`` are looked through (``timeout 30 npm test`` matches
  ``Bash(npm test:*)``); everything else must match a rule as written.
* **Programs run by options** (``rg --pre``, ``tar --checkpoint-action``,
  ``git bisect run``) and builtins that rebind names or evaluate code held in
  an argument (``alias``, ``hash``, ``test -v``, ``read``, ``let``):
  :func:`runs_program` and :data:`SHELL_STATE`.
* Read-only commands and acceptEdits' file commands live in
  :mod:`workflows.permissions.readonly` (re-exported here).
* **No-prefix commands**: shells, interpreters and wrappers, for which an
  "(a)lways" answer adds the exact command, never ``Bash(python3:*)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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

Words = list[str | None]  # a command's word values; None where a word is not literal

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
    if name in _WRAPPERS:
        start = _WRAPPERS[name](args)
        if start is None:
            return [], [], f"`{name}` with options the checker does not read"
        return ([args[start:]] if start < len(args) else []), [], None
    if name in SHELLS:
        return _shell(name, args)
    if name == "eval":
        if any(a is None for a in args):
            return [], [], "eval of text that is not plain"
        return [], [" ".join(a for a in args if a is not None)], None
    if name in ("source", "."):
        return [], [], f"`{name}` runs the commands of a file"
    if name == "find":
        return _find_exec(args), [], None
    if name == "su":
        if "-c" in args and args.index("-c") + 1 < len(args) and args[args.index("-c") + 1] is not None:
            return [], [args[args.index("-c") + 1]], None
        return [], [], "`su` starts a shell"
    if name == "watch":
        return _watch(args)
    if name == "flock":
        return _flock(args)
    if name == "git":
        return _git_inner(args)
    if name in OPAQUE_RUNNERS:
        return [], [], f"`{name}` runs a command the checker does not read"
    if name in SHELL_STATE:
        return [], [], f"`{name}` changes what later names run or evaluates code"
    if why := runs_program(name, args):
        return [], [], why
    return [], [], None


def _long_match(arg: str, names: set[str]) -> str | None:
    """The long option of ``names`` that ``arg`` (``--name`` or ``--name=v``) names, allowing GNU getopt's
    unique abbreviations (``--adj`` for ``--adjustment``); None when it names none of them."""
    name = arg.split("=", 1)[0]
    if name in names:
        return name
    hits = [n for n in names if n.startswith("--") and n.startswith(name)] if len(name) > 2 else []
    return hits[0] if len(hits) == 1 else None


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


def _skip_options(args: Words, with_value: set[str], flags: set[str] | None = None,
                  attached: str = "") -> int | None:
    """Index of the first non-option word. Options in ``with_value`` take the next word (``--x=v`` and,
    for letters in ``attached``, ``-xV`` forms too); long options may be abbreviated, as getopt allows.
    An option that is neither known nor, when ``flags`` is given, a flag stops the reading (None)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a is None:
            return None
        if a == "--":
            return i + 1
        if not a.startswith("-") or a == "-":
            return i
        if a.startswith("--"):
            if _long_match(a, with_value):
                i += 1 if "=" in a else 2
                continue
            if flags is not None and not _long_match(a, flags):
                return None
            if flags is None and any(n.startswith(a.split("=", 1)[0]) for n in with_value if n.startswith("--")):
                return None  # an ambiguous abbreviation of an option that takes a value
            i += 1
            continue
        if a in with_value:
            i += 2
            continue
        if len(a) > 2 and a[1] in attached:
            i += 1
            continue
        if flags is not None and a not in flags and not all(f"-{c}" in flags for c in a[1:]):
            return None
        i += 1
    return i


def _env(args: Words) -> int | None:
    i = _skip_options(args, {"-u", "--unset", "-C", "--chdir"}, attached="uC",
                      flags={"-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "-"})
    if i is None:
        return None
    while i < len(args) and args[i] is not None and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", args[i]):
        i += 1
    return i


# Every wrapper's own flags are listed, so an option it does not have (or a newer one that takes a
# value) stops the reading: the command inside is then unknown, and a deny rule denies.
_HELP = {"--help", "--version"}


def _timeout(args: Words) -> int | None:
    i = _skip_options(args, {"-s", "--signal", "-k", "--kill-after"},
                      _HELP | {"--preserve-status", "--foreground", "-v", "--verbose"}, attached="sk")
    return None if i is None else i + 1  # the duration


def _time(args: Words) -> int | None:
    return _skip_options(args, {"-f", "--format", "-o", "--output"},
                         _HELP | {"-p", "--portability", "-a", "--append", "-v", "--verbose", "-q", "--quiet", "-V"},
                         attached="fo")


_SUDO_FLAGS = _HELP | {"-A", "-b", "-E", "-H", "-K", "-k", "-l", "-n", "-P", "-S", "-V", "-v", "--askpass",
                       "--background", "--preserve-env", "--set-home", "--remove-timestamp", "--reset-timestamp",
                       "--list", "--non-interactive", "--preserve-groups", "--stdin", "--validate"}


def _sudo(args: Words) -> int | None:
    if any(a in ("-s", "--shell", "-i", "--login", "-e", "--edit") for a in args if a is not None):
        return None  # a shell, or an editor: not a command we can read
    return _skip_options(args, {"-C", "-D", "-g", "-h", "-p", "-R", "-r", "-T", "-t", "-U", "-u", "--user",
                                "--group", "--chdir", "--prompt", "--role", "--type", "--close-from", "--host",
                                "--other-user", "--command-timeout"}, _SUDO_FLAGS, attached="CDghpRrTtUu")


def _xargs(args: Words) -> int | None:
    return _skip_options(args, {"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n", "--max-args",
                                "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var", "--max-lines",
                                "--replace", "--eof"},
                         _HELP | {"-0", "--null", "-o", "--open-tty", "-p", "--interactive", "-r",
                                  "--no-run-if-empty", "-t", "--verbose", "-x", "--exit", "--show-limits", "-e",
                                  "-i", "-l"},
                         attached="adEeIiLlnPs")


_WRAPPERS = {
    "env": _env,
    "command": lambda a: _skip_options(a, set(), flags={"-p", "-v", "-V"}),
    "builtin": lambda a: 0,
    "exec": lambda a: _skip_options(a, {"-a"}, flags={"-c", "-l"}),
    "nice": lambda a: _skip_options(a, {"-n", "--adjustment"}, _HELP, attached="n0123456789"),
    "nohup": lambda a: _skip_options(a, set(), _HELP),
    "timeout": _timeout,
    "time": _time,
    "stdbuf": lambda a: _skip_options(a, {"-i", "-o", "-e", "--input", "--output", "--error"}, _HELP,
                                      attached="ioe"),
    "ionice": lambda a: _skip_options(a, {"-c", "-n", "--class", "--classdata"}, attached="cn",
                                      flags={"-t", "--ignore"}),
    "setsid": lambda a: _skip_options(a, set(), flags={"-c", "-f", "-w", "--ctty", "--fork", "--wait"}),
    "sudo": _sudo,
    "doas": lambda a: _skip_options(a, {"-u", "-C"}, flags={"-n", "-L"}),
    "xargs": _xargs,
    "chroot": lambda a: (lambda i: None if i is None else i + 1)(
        _skip_options(a, {"--userspec", "--groups"}, flags={"--skip-chdir"})),
    "coproc": lambda a: 0,
}


def _shell(name: str, args: Words) -> tuple[list[Words], list[str], str | None]:
    """``bash -c 'code'`` runs code we can parse; ``bash file``, ``bash -s`` and plain ``bash`` (stdin) do not."""
    i = 0
    while i < len(args):
        a = args[i]
        if a is None:
            return [], [], f"`{name}` with options that are not plain"
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if a.startswith("-") and len(a) > 1 and not a.startswith("--") and "c" in a[1:]:
            code = args[i + 1] if i + 1 < len(args) else None
            if code is None:
                return [], [], f"`{name} -c` with code that is not plain"
            return [], [code], None
        if a.startswith(("-", "+")) and len(a) > 1:
            if "s" in a[1:] and not a.startswith("--"):
                break
            i += 1
            continue
        return [], [], f"`{name}` runs the script {a}"
    return [], [], f"`{name}` runs commands from its input"


_GIT_GLOBAL_VALUED = {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--exec-path",
                      "--attr-source", "--list-cmds"}
_GIT_GLOBAL_FLAGS = {"-p", "-P", "--paginate", "--no-pager", "--bare", "--no-replace-objects",
                     "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
                     "--no-optional-locks", "--no-advice", "--html-path", "--man-path", "--info-path", "--version",
                     "--help"}


def _git_inner(args: Words) -> tuple[list[Words], list[str], str | None]:
    """``git -C x push`` runs ``git push``: the level a deny rule for ``git push`` must see."""
    i = _skip_options(args, _GIT_GLOBAL_VALUED | {"-c", "--config-env"}, _GIT_GLOBAL_FLAGS, attached="Cc")
    if i is None:
        return [], [], "git with global options the checker does not read"
    if any(a and (a.startswith("-c") or a.startswith("--config-env")) for a in args[:i]):
        return [], [], "`git -c` can run a command from a setting"
    if why := runs_program("git", args[i:]):
        return [], [], why
    return ([["git", *args[i:]]] if 0 < i < len(args) else []), [], None


def _find_exec(args: Words) -> list[Words]:
    out = []
    for i, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            out.append(args[i + 1:end])
    return out


_WATCH_FLAGS = _HELP | {"-b", "--beep", "-c", "--color", "-C", "--no-color", "-d", "--differences", "-e",
                        "--errexit", "-g", "--chgexit", "-p", "--precise", "-r", "--no-rerun", "-t", "--no-title",
                        "-w", "--no-wrap", "-x", "--exec"}


def _watch(args: Words) -> tuple[list[Words], list[str], str | None]:
    i = _skip_options(args, {"-n", "--interval", "-q", "--equexit"}, _WATCH_FLAGS, attached="nq")
    if i is None or i >= len(args):
        return [], [], None if i is not None else "`watch` with options the checker does not read"
    rest = args[i:]
    if any(a in ("-x", "--exec") for a in args[:i]):
        return [rest], [], None
    if any(a is None for a in rest):
        return [], [], "`watch` of text that is not plain"
    return [], [" ".join(a for a in rest if a is not None)], None


def _flock(args: Words) -> tuple[list[Words], list[str], str | None]:
    for j, a in enumerate(args):
        if a in ("-c", "--command") and j + 1 < len(args):
            return ([], [args[j + 1]], None) if args[j + 1] is not None else ([], [], "`flock -c` of text")
    i = _skip_options(args, {"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"},
                      _HELP | {"-s", "--shared", "-x", "-e", "--exclusive", "-u", "--unlock", "-n", "--nb",
                               "--nonblock", "-o", "--close", "-F", "--no-fork", "--verbose"}, attached="wE")
    if i is None:
        return [], [], "`flock` with options the checker does not read"
    return ([args[i + 1:]] if i + 1 < len(args) else []), [], None


from workflows.permissions.readonly import (  # noqa: E402  (re-exported: one place to ask about a command)
    FILE_COMMANDS,
    READ_ONLY,
    file_command_paths,
    git_finds_workspace_repo,
    read_only,
)
