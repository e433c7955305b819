"""Which commands only read, and exactly which paths acceptEdits' file commands touch.

* **Read-only commands** (run without a rule when their paths stay in the
  workspace; the only commands plan mode runs): :func:`read_only` says whether
  a command only reads, naming the option that makes it write, run a program,
  follow links out of the workspace or read a list of files. Long options are
  matched with GNU getopt's abbreviations (``--compress-prog``).
* **git** is read-only for listed subcommands, and only where it would open the
  workspace's own repository (:func:`git_finds_workspace_repo`).
* **File commands** (acceptEdits): ``mkdir``, ``touch``, ``mv``, ``cp`` with
  exact option tables; :func:`file_command_paths` returns every path they
  touch, or None for an option it does not know (fail closed).
"""

from __future__ import annotations

import os
import re

Words = list[str | None]

__all__ = ["FILE_COMMANDS", "READ_ONLY", "file_command_paths", "git_finds_workspace_repo", "read_only"]


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
    if sub == "remote" and (not rest or rest == ["-v"] or rest[:1] == ["get-url"]):  # show reaches the network
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


_HOSTNAME_READS = {"-s", "--short", "-f", "--fqdn", "--long", "-d", "--domain", "-i", "--ip-address", "-I",
                   "--all-ip-addresses", "-A", "--all-fqdns", "-a", "--alias"}


def _jq(args: Words) -> str | None:
    """jq reads modules from paths its program names (``import "x" as $x {search: "~/"}``)."""
    if any(a is None for a in args):
        return "an argument that is not plain"
    if any(a in ("-L", "--library-path") or a.startswith("-L") for a in args):
        return "-L (a module path)"
    if any(re.search(r"\b(import|include)\b", a) for a in args if not a.startswith("-")):
        return "a program that imports a module"
    return None


READ_ONLY: dict[str, callable] = {
    **{name: _always for name in (
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "stat", "du", "df", "which",
        "whereis", "uname", "whoami", "id", "true", "false", "basename", "dirname", "realpath", "readlink",
        "diff", "cmp", "comm", "cut", "nl", "od", "hexdump", "jq", "column", "fold", "fmt", "rev", "tac",
        "paste", "join", "strings", "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum", "nproc",
        "printenv", "locale", "cd", "tr", "expand", "unexpand", "seq", "sleep", "ps", "free",
        "uptime", "file", "less", "more", "type")},
    "rg": _unsafe_options("--pre", "--hostname-bin", "-L", "--follow"),  # following links reads outside
    "diff": _unsafe_options("-l", "--paginate"),  # passes its output through `pr` (a program it runs)
    "printf": _unsafe_options("-v"),
    "tree": _unsafe_options("-o", "-R", "-l", "--fromfile"),  # -R writes 00Tree.html into every folder
    # -z/-Z look inside compressed files, which libmagic may do by running gzip, xz... (programs it runs)
    "file": _unsafe_options("-C", "--compile", "-z", "-Z", "--uncompress", "--uncompress-noreport"),
    "date": _unsafe_options("-s", "--set"),  # (-f/-r read files: their paths are checked like any argument)
    "sort": _unsafe_options("-o", "--output", "--compress-program", "-T", "--temporary-directory",
                            "--files0-from"),
    "du": _unsafe_options("--files0-from", "-L", "--dereference"),
    "wc": _unsafe_options("--files0-from"),
    "grep": _unsafe_options("-R", "--dereference-recursive"),  # follows symlinks out of the workspace
    "egrep": _unsafe_options("-R", "--dereference-recursive"),
    "fgrep": _unsafe_options("-R", "--dereference-recursive"),
    "jq": lambda args: _jq(args),
    "uniq": _unsafe_options(positional_max=1),
    "xxd": _unsafe_options("-r", "--revert", positional_max=1),
    "hostname": lambda args: None if all(a in _HOSTNAME_READS for a in args) else "an option that sets the name",
    "find": _unsafe_options("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                            "-fls", "-L", "-follow", "-files0-from"),
    "git": _git,
}
READ_ONLY.pop("less")  # pagers can run commands (!cmd, LESSOPEN)
READ_ONLY.pop("more")
READ_ONLY.pop("ps")  # `ps e` shows other processes' environments (the worker's secrets)


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
