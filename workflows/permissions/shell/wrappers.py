"""How the checker reads each wrapper's own options, to find the command it runs.

:func:`~workflows.permissions.shell.commands.unwrap` asks :data:`WRAPPERS` where the inner command of
``env``, ``timeout``, ``sudo``, ``xargs``... starts, and the functions here what ``bash -c``, ``find
-exec``, ``watch`` and ``flock`` run. Every wrapper's own flags are listed, so an option it does not
have (or a newer one that takes a value) stops the reading: the command inside is then unknown, and a
deny rule denies.
"""

from __future__ import annotations

import re

__all__ = ["GIT_GLOBAL_FLAGS", "GIT_GLOBAL_VALUED", "WRAPPERS", "Words", "find_exec", "flock_inner", "shell_inner",
           "skip_options", "watch_inner"]

Words = list[str | None]  # a command's word values; None where a word is not literal


def _long_match(arg: str, names: set[str]) -> str | None:
    """The long option of ``names`` that ``arg`` (``--name`` or ``--name=v``) names, allowing GNU getopt's
    unique abbreviations (``--adj`` for ``--adjustment``); None when it names none of them."""
    name = arg.split("=", 1)[0]
    if name in names:
        return name
    hits = [n for n in names if n.startswith("--") and n.startswith(name)] if len(name) > 2 else []
    return hits[0] if len(hits) == 1 else None


def skip_options(args: Words, with_value: set[str], flags: set[str] | None = None,
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
    i = skip_options(args, {"-u", "--unset", "-C", "--chdir"}, attached="uC",
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
    i = skip_options(args, {"-s", "--signal", "-k", "--kill-after"},
                      _HELP | {"--preserve-status", "--foreground", "-v", "--verbose"}, attached="sk")
    return None if i is None else i + 1  # the duration


def _time(args: Words) -> int | None:
    return skip_options(args, {"-f", "--format", "-o", "--output"},
                         _HELP | {"-p", "--portability", "-a", "--append", "-v", "--verbose", "-q", "--quiet", "-V"},
                         attached="fo")


_SUDO_FLAGS = _HELP | {"-A", "-b", "-E", "-H", "-K", "-k", "-l", "-n", "-P", "-S", "-V", "-v", "--askpass",
                       "--background", "--preserve-env", "--set-home", "--remove-timestamp", "--reset-timestamp",
                       "--list", "--non-interactive", "--preserve-groups", "--stdin", "--validate"}


def _sudo(args: Words) -> int | None:
    if any(a in ("-s", "--shell", "-i", "--login", "-e", "--edit") for a in args if a is not None):
        return None  # a shell, or an editor: not a command we can read
    return skip_options(args, {"-C", "-D", "-g", "-h", "-p", "-R", "-r", "-T", "-t", "-U", "-u", "--user",
                                "--group", "--chdir", "--prompt", "--role", "--type", "--close-from", "--host",
                                "--other-user", "--command-timeout"}, _SUDO_FLAGS, attached="CDghpRrTtUu")


def _xargs(args: Words) -> int | None:
    return skip_options(args, {"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n", "--max-args",
                                "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var", "--max-lines",
                                "--replace", "--eof"},
                         _HELP | {"-0", "--null", "-o", "--open-tty", "-p", "--interactive", "-r",
                                  "--no-run-if-empty", "-t", "--verbose", "-x", "--exit", "--show-limits", "-e",
                                  "-i", "-l"},
                         attached="adEeIiLlnPs")


WRAPPERS = {
    "env": _env,
    "command": lambda a: skip_options(a, set(), flags={"-p", "-v", "-V"}),
    "builtin": lambda a: 0,
    "exec": lambda a: skip_options(a, {"-a"}, flags={"-c", "-l"}),
    "nice": lambda a: skip_options(a, {"-n", "--adjustment"}, _HELP, attached="n0123456789"),
    "nohup": lambda a: skip_options(a, set(), _HELP),
    "timeout": _timeout,
    "time": _time,
    "stdbuf": lambda a: skip_options(a, {"-i", "-o", "-e", "--input", "--output", "--error"}, _HELP,
                                      attached="ioe"),
    "ionice": lambda a: skip_options(a, {"-c", "-n", "--class", "--classdata"}, attached="cn",
                                      flags={"-t", "--ignore"}),
    "setsid": lambda a: skip_options(a, set(), flags={"-c", "-f", "-w", "--ctty", "--fork", "--wait"}),
    "sudo": _sudo,
    "doas": lambda a: skip_options(a, {"-u", "-C"}, flags={"-n", "-L"}),
    "xargs": _xargs,
    "chroot": lambda a: (lambda i: None if i is None else i + 1)(
        skip_options(a, {"--userspec", "--groups"}, flags={"--skip-chdir"})),
    "coproc": lambda a: 0,
}


def shell_inner(name: str, args: Words) -> tuple[list[Words], list[str], str | None]:
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


GIT_GLOBAL_VALUED = {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--exec-path",
                      "--attr-source", "--list-cmds"}
GIT_GLOBAL_FLAGS = {"-p", "-P", "--paginate", "--no-pager", "--bare", "--no-replace-objects",
                     "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
                     "--no-optional-locks", "--no-advice", "--html-path", "--man-path", "--info-path", "--version",
                     "--help"}


def find_exec(args: Words) -> list[Words]:
    out = []
    for i, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            out.append(args[i + 1:end])
    return out


_WATCH_FLAGS = _HELP | {"-b", "--beep", "-c", "--color", "-C", "--no-color", "-d", "--differences", "-e",
                        "--errexit", "-g", "--chgexit", "-p", "--precise", "-r", "--no-rerun", "-t", "--no-title",
                        "-w", "--no-wrap", "-x", "--exec"}


def watch_inner(args: Words) -> tuple[list[Words], list[str], str | None]:
    i = skip_options(args, {"-n", "--interval", "-q", "--equexit"}, _WATCH_FLAGS, attached="nq")
    if i is None or i >= len(args):
        return [], [], None if i is not None else "`watch` with options the checker does not read"
    rest = args[i:]
    if any(a in ("-x", "--exec") for a in args[:i]):
        return [rest], [], None
    if any(a is None for a in rest):
        return [], [], "`watch` of text that is not plain"
    return [], [" ".join(a for a in rest if a is not None)], None


def flock_inner(args: Words) -> tuple[list[Words], list[str], str | None]:
    for j, a in enumerate(args):
        if a in ("-c", "--command") and j + 1 < len(args):
            return ([], [args[j + 1]], None) if args[j + 1] is not None else ([], [], "`flock -c` of text")
    i = skip_options(args, {"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"},
                      _HELP | {"-s", "--shared", "-x", "-e", "--exclusive", "-u", "--unlock", "-n", "--nb",
                               "--nonblock", "-o", "--close", "-F", "--no-fork", "--verbose"}, attached="wE")
    if i is None:
        return [], [], "`flock` with options the checker does not read"
    return ([args[i + 1:]] if i + 1 < len(args) else []), [], None
