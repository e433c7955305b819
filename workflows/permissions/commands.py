"""What the checker knows about particular commands.

* **Wrappers** run another command (``timeout 5 rm x``, ``env -i rm x``,
  ``xargs rm``, ``find -exec rm``, ``bash -c 'rm x'``): :func:`unwrap` finds
  every command a command line would run, so a deny rule for ``rm`` sees them,
  and says when that cannot be known (``source``, ``sh`` reading a script,
  ``eval $x``).
* **Safe wrappers** for allow rules: only ``timeout``, ``nice``, ``nohup`` and
  ``time -p`` are looked through (``timeout 30 npm test`` matches
  ``Bash(npm test:*)``); everything else must match a rule as written.
* **Read-only commands** (plan mode, the memory fork): :func:`read_only` says
  whether a command only reads, naming the option that makes it write.
* **File commands** (acceptEdits): ``mkdir``, ``touch``, ``mv``, ``cp`` with
  exact option tables; :func:`file_command_paths` returns every path they
  touch, or None for an option it does not know (fail closed).
* **No-prefix commands**: shells, interpreters and wrappers, for which an
  "(a)lways" answer adds the exact command, never ``Bash(python3:*)``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

__all__ = [
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

_UNSAFE_ENV = re.compile(
    r"(PATH|.*_PATH|LD_.*|DYLD_.*|.*PRELOAD.*|BASH_.*|ENV|IFS|SHELL|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|"
    r".*_OPTIONS|.*_OPTS|PYTHON.*|PERL.*|RUBY.*|GIT_.*|NPM_CONFIG_.*|EDITOR|VISUAL|PAGER|.*_PAGER|BROWSER|"
    r"HOME|XDG_.*|TMPDIR|LESS.*|CC|CXX|LD|MAKEFLAGS|.*_COMMAND|GCONV_.*|HOSTALIASES|SSL_.*|.*_PROXY|"
    r"JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|GLIBC_TUNABLES|CDPATH|OLDPWD|PWD|GLOBIGNORE|POSIXLY_CORRECT|TIMEFORMAT|"
    r"FUNCNEST|HISTFILE|MAIL.*|TERMINFO.*|LOCPATH|NLSPATH|TZDIR)",
    re.IGNORECASE,
)


def safe_env_name(name: str) -> bool:
    """Whether ``NAME=value cmd`` leaves what ``cmd`` does alone (not PATH, LD_*, GIT_*, NODE_OPTIONS...)."""
    return not _UNSAFE_ENV.fullmatch(name)


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
    if name in ("strace", "ltrace", "nsenter", "unshare", "firejail", "bwrap", "unbuffer", "script", "parallel",
                "chrt", "taskset", "expect", "ssh", "trap"):
        return [], [], f"`{name}` runs a command the checker does not read"
    return [], [], None


def _long_match(arg: str, names: set[str]) -> str | None:
    """The long option of ``names`` that ``arg`` (``--name`` or ``--name=v``) names, allowing GNU getopt's
    unique abbreviations (``--adj`` for ``--adjustment``); None when it names none of them."""
    name = arg.split("=", 1)[0]
    if name in names:
        return name
    hits = [n for n in names if n.startswith("--") and n.startswith(name)] if len(name) > 2 else []
    return hits[0] if len(hits) == 1 else None


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


# =========================================================================== read-only commands


def _always(args: Words) -> str | None:
    return None


def _unsafe_options(*names: str, positional_max: int | None = None):
    """A checker refusing the given options: exact, ``--x=v``, attached ``-xV``, and any abbreviation
    of a long one (``--compress-prog`` for ``--compress-program``: GNU getopt accepts unique prefixes).
    ``-`` (standard input or output) counts as an operand."""
    longs = {n for n in names if n.startswith("--")}
    shorts = {n for n in names if not n.startswith("--")}

    def check(args: Words) -> str | None:
        positional = 0
        for a in args:
            if a is None:
                return "an argument that is not plain"
            if a.startswith("--") and len(a) > 2:
                name = a.split("=", 1)[0]
                hit = next((n for n in longs if n.startswith(name)), None)
                if hit:
                    return hit
            elif a.startswith("-") and len(a) > 1:
                hit = next((n for n in shorts if a == n or (len(n) == 2 and n[1] in a[1:])), None)
                if hit:
                    return hit
            else:
                positional += 1
        if positional_max is not None and positional > positional_max:
            return f"more than {positional_max} file argument{'s' if positional_max != 1 else ''}"
        return None

    return check


_GIT_BRANCH_LIST = {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list", "--show-current",
                    "--color", "--no-color", "--column", "--no-column", "-i", "--ignore-case"}
_GIT_WRITING = _unsafe_options("--output", "--open-files-in-pager", "-O", "--ext-diff")


def _git(args: Words) -> str | None:
    """Read-only git: a subcommand that only reads, with no option that writes a file or runs a program.

    (Which repository git opens matters too: :func:`git_finds_workspace_repo` is checked by the caller.)
    """
    if not args or args[0] is None:
        return "git without a subcommand"
    sub, rest = args[0], args[1:]
    if sub.startswith("-"):
        return f"git option {sub} before the subcommand"
    if any(a is None for a in rest):
        return "an argument that is not plain"
    if why := _GIT_WRITING(rest):
        return f"git option {why} writes a file or runs a program"
    if sub in ("status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "describe", "shortlog",
               "cat-file", "ls-tree", "grep", "whatchanged"):
        return None
    if sub == "branch" and all(a in _GIT_BRANCH_LIST or a.startswith(("--sort=", "--format=")) for a in rest):
        return None
    if sub == "tag" and (not rest or all(a in ("-l", "--list", "-n") for a in rest)):
        return None
    if sub == "remote" and (not rest or rest == ["-v"] or rest[:1] in (["show"], ["get-url"])):
        return None
    if sub == "config" and rest[:1] in (["--get"], ["--list"], ["-l"], ["--get-all"]):
        return None
    return f"git {sub}"


def git_finds_workspace_repo(cwd: str, workspace: str) -> bool:
    """Whether git started in ``cwd`` (inside ``workspace``) would use the workspace's own repository
    (or one above it), never one planted inside the workspace: no ``.git`` and no bare-repository
    layout (``HEAD``, ``objects/``, ``refs/``) in ``cwd`` or a folder between it and the workspace.

    A planted repository's config can name programs git runs (``diff.external``, ``core.fsmonitor``,
    textconv and filter drivers), so a git command that would open one is not read-only.
    """
    cwd, workspace = os.path.realpath(cwd), os.path.realpath(workspace)
    d = cwd
    while d != workspace and d.startswith(workspace + "/"):
        if os.path.lexists(os.path.join(d, ".git")) or (
                os.path.exists(os.path.join(d, "HEAD")) and os.path.isdir(os.path.join(d, "objects"))
                and os.path.isdir(os.path.join(d, "refs"))):
            return False
        d = os.path.dirname(d)
    return d == workspace


READ_ONLY: dict[str, callable] = {
    **{name: _always for name in (
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "stat", "du", "df", "which",
        "whereis", "uname", "whoami", "id", "true", "false", "basename", "dirname", "realpath", "readlink",
        "diff", "cmp", "comm", "cut", "nl", "od", "hexdump", "jq", "column", "fold", "fmt", "rev", "tac",
        "paste", "join", "strings", "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum", "nproc",
        "printenv", "locale", "cd", "tr", "expand", "unexpand", "seq", "sleep", "ps", "free",
        "uptime", "file", "less", "more", "type")},
    "rg": _unsafe_options("--pre"),
    "printf": _unsafe_options("-v"),
    "tree": _unsafe_options("-o"),
    "file": _unsafe_options("-C", "--compile"),
    "date": _unsafe_options("-s", "--set"),  # (-f/-r read files: their paths are checked like any argument)
    "sort": _unsafe_options("-o", "--output", "--compress-program"),
    "uniq": _unsafe_options(positional_max=1),
    "xxd": _unsafe_options("-r", "--revert", positional_max=1),
    "hostname": _unsafe_options(positional_max=0),
    "find": _unsafe_options("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                            "-fls"),
    "git": _git,
}
READ_ONLY.pop("less")  # pagers can run commands (!cmd, LESSOPEN)
READ_ONLY.pop("more")


def read_only(words: Words) -> str | None:
    """None when the command only reads; else why not (the command, or the option that writes)."""
    if not words or words[0] is None:
        return "a command name that is not plain"
    name = words[0]
    check = READ_ONLY.get(name)
    if check is None:
        return f"{name} is not a read-only command"
    why = check(words[1:])
    return None if why is None else f"{name}: {why}"


# =========================================================================== file commands (acceptEdits)

# Per command: options without a value, options taking a value that is not a path, options taking a
# path. A short option may be clustered (-pv) and a value attached (-t/dir, -m755, --mode=755).
_FILE_COMMANDS: dict[str, tuple[set[str], set[str], set[str]]] = {
    "mkdir": ({"-p", "-v", "--parents", "--verbose"}, {"-m", "--mode"}, set()),
    "touch": ({"-a", "-c", "-m", "-h", "-f", "--no-create", "--no-dereference"},
              {"-d", "--date", "-t", "--time"}, {"-r", "--reference"}),
    "mv": ({"-f", "-i", "-n", "-u", "-v", "-T", "-b", "--force", "--interactive", "--no-clobber", "--update",
            "--verbose", "--no-target-directory", "--strip-trailing-slashes", "--backup"},
           {"-S", "--suffix"}, {"-t", "--target-directory"}),
    "cp": ({"-a", "-b", "-d", "-f", "-i", "-H", "-L", "-n", "-P", "-p", "-R", "-r", "-u", "-v", "-x", "-T",
            "--archive", "--backup", "--force", "--interactive", "--dereference", "--no-clobber",
            "--no-dereference", "--parents", "--recursive", "--update", "--verbose", "--one-file-system",
            "--no-target-directory", "--remove-destination", "--strip-trailing-slashes", "--attributes-only",
            "--debug"},
           {"-S", "--suffix", "--preserve", "--no-preserve", "--sparse", "--reflink"},
           {"-t", "--target-directory"}),
}
FILE_COMMANDS = frozenset(_FILE_COMMANDS)


def file_command_paths(words: Words) -> list[str] | None:
    """Every path a ``mkdir``/``touch``/``mv``/``cp`` call touches, or None when it cannot be read exactly
    (an option not in its table, a link option, a word that is not plain)."""
    if not words or words[0] not in _FILE_COMMANDS:
        return None
    flags, valued, path_valued = _FILE_COMMANDS[words[0]]
    paths: list[str] = []
    args = words[1:]
    i, options = 0, True
    while i < len(args):
        a = args[i]
        if a is None:
            return None
        if options and a == "--":
            options = False
        elif options and a.startswith("--"):
            name, eq, value = a.partition("=")
            if name in flags and not eq:
                pass
            elif name in valued or name in path_valued:
                if not eq:
                    i += 1
                    if i >= len(args) or args[i] is None:
                        return None
                    value = args[i]
                if name in path_valued:
                    paths.append(value)
            else:
                return None
        elif options and a.startswith("-") and a != "-":
            j = 1
            while j < len(a):
                opt = f"-{a[j]}"
                if opt in flags:
                    j += 1
                    continue
                if opt in valued or opt in path_valued:
                    value = a[j + 1:]
                    if not value:
                        i += 1
                        if i >= len(args) or args[i] is None:
                            return None
                        value = args[i]
                    if opt in path_valued:
                        paths.append(value)
                    break
                return None
        else:
            paths.append(a)
        i += 1
    return paths
