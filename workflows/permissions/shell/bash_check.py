"""Deciding one Bash call, fail closed.

Order (the first that applies decides):

1. **Deny**: every command the line would run (nested ones, the inside of
   wrappers, ``find -exec``, ``bash -c``/``eval`` code), in every form
   (quotes removed, ``/bin/rm`` as ``rm``, wrappers stripped), is matched
   against the deny rules. ``Read``/``Edit`` deny rules are matched against
   every path the line names (arguments, option values, redirections, glob
   matches). Where the command that runs cannot be known (``$cmd``,
   ``source``, ``sh`` reading a script, a syntax error), any Bash deny rule
   denies: the checker cannot tell that the denied command is not run.
2. **bypassPermissions** allows the rest.
3. **Ask rules**, matched like deny rules.
4. **Not understood**: any construct the parser does not approve asks (is
   denied in plan mode).
5. **Each part** (simple command) must be allowed by a rule or the mode, and
   name no path outside the workspace (or, unless the command only reads, in a
   protected folder); output redirections likewise. A read-only command (see
   :mod:`workflows.permissions.shell.commands`) whose paths are all inside the
   workspace needs no rule, in every mode, as in Claude Code; acceptEdits adds
   output redirections and ``mkdir``/``touch``/``mv``/``cp`` inside the
   workspace. In plan mode a part must be read-only, whatever the rules say.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from workflows.models import PermissionMode
from workflows.permissions.rules import paths
from workflows.permissions.rules.results import (
    PROTECTED_TEXT,
    Decision,
    PermissionResult,
    allow_by_mode,
    allow_by_rule,
    ask,
    ask_by_mode,
    deny_plan,
    rule_source,
)
from workflows.permissions.rules.rules import Compiled, bash_matches
from workflows.permissions.shell import commands
from workflows.permissions.shell.bash_deny import asked, denied, scan
from workflows.permissions.shell.bash_parse import Command, Word, parse
from workflows.permissions.shell.bash_paths import (
    MAX_GLOB_MATCHES,
    SAFE_DEVICES,
    Cwds,
    cd_targets,
    glob_may_be_option,
    lexical,
    may_match_protected,
    path_texts,
    quoted_glob,
    resolve_all,
)

__all__ = ["evaluate_bash", "SAFE_DEVICES"]

#: Read-only commands whose arguments are not files (their text is never resolved as a path).
NO_FILE_ARGS = frozenset({"echo", "printf", "true", "false", "seq", "sleep", "uname", "whoami", "id",
                          "pwd", "nproc", "printenv", "basename", "dirname", "hostname", "locale",
                          "type", "which", "whereis", "tr"})
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg"})
_MOVERS = frozenset({"mv", "cp", "ln", "install", "rsync"})


@dataclass
class _Line:
    """What the parts before this one may have done: where the shell may be, whether they may have
    created files (a later glob's matches are then unknown), and the paths they moved or copied."""

    cwds: Cwds
    created: bool = False
    touched: set[str] = field(default_factory=set)


# =========================================================================== entry point


def evaluate_bash(tool_input: dict, mode: PermissionMode, rules: Compiled, ws: str, hm: str) -> PermissionResult:
    """Allow, deny or ask for one Bash call (see the module docstring for the order)."""
    command = tool_input.get("command")
    command = command if isinstance(command, str) else ""
    parsed = parse(command)
    seen, unsure = scan(parsed, ws, hm)
    if hit := denied(seen, unsure, rules, ws, hm, command):
        return hit
    if mode is PermissionMode.BYPASS:
        return allow_by_mode(mode)
    if hit := asked(seen, rules):
        return hit
    if parsed.problems:
        if mode is PermissionMode.PLAN:
            return deny_plan("Bash")
        what = parsed.problems[0]
        return ask(f"the command uses {what}, which is never approved automatically", "bash: not understood",
                   f"not auto-approved: {what}"[:80])
    if not parsed.top:
        return _empty(rules, mode)
    return _parts(parsed.top, mode, rules, ws, hm)


def _empty(rules: Compiled, mode: PermissionMode) -> PermissionResult:
    """An empty command runs nothing; only a bare ``Bash`` allow rule (or bypass) approves it."""
    hit = next(((r, s) for r, s in rules.of("allow", "Bash") if r.specifier is None), None)
    if hit:
        return allow_by_rule(*hit)
    if mode is PermissionMode.PLAN:
        return deny_plan("Bash")
    return ask_by_mode("Bash", "", mode)


# =========================================================================== the parts


def _parts(top: tuple[Command, ...], mode: PermissionMode, rules: Compiled, ws: str, hm: str) -> PermissionResult:
    line = _Line(Cwds({ws}))
    hits: list[tuple[object, str]] = []
    for cmd in top:
        verdict = _part(cmd, mode, rules, ws, hm, line)
        if verdict.decision is not Decision.ALLOW:
            return verdict
        if verdict.rule:
            hits.append(next((r, s) for r, s in rules.of("allow", "Bash") if r.raw == verdict.rule))
        _after(cmd, line, hm)
    if not hits:
        return allow_by_mode(mode)
    rule, source = hits[0]
    if len({h[0].raw for h in hits}) == 1:
        return allow_by_rule(rule, source)
    names = ", ".join(dict.fromkeys(rule_source(*h) for h in hits))
    return PermissionResult(Decision.ALLOW, source=names, display=f"allowed by rules ({len(hits)} parts)",
                            rule=rule.raw)


def _after(cmd: Command, line: _Line, hm: str) -> None:
    """What a part leaves for the next: a new working directory (``time cd x`` too), files it may
    have created, paths it moved or copied."""
    inner = commands.strip_safe_wrappers([w.value for w in cmd.words])
    if inner and inner[0] in ("cd", "pushd", "popd"):
        line.cwds = line.cwds | cd_targets(inner, line.cwds, hm)
    if commands.read_only(inner) is not None or _writing_redirect(cmd):
        line.created = True
    if inner and inner[0] in _MOVERS:
        for value in inner[1:]:
            if value and not value.startswith("-"):
                line.touched.update(t for c in line.cwds if c and (t := lexical(value, c, hm)))


def _part(cmd: Command, mode: PermissionMode, rules: Compiled, ws: str, hm: str, line: _Line) -> PermissionResult:
    """One simple command of a fully understood line."""
    values = [w.value for w in cmd.words]
    inner = commands.strip_safe_wrappers(values)
    inner_words = cmd.words[len(values) - len(inner):]
    bare = " ".join(w.raw for w in inner_words)
    full = " ".join([f"{n}={w.raw}" for n, w in cmd.assignments] + [w.raw for w in cmd.words])
    rules_full = next(((r, s) for r, s in rules.of("allow", "Bash") if bash_matches(r.specifier, full)), None)
    unsafe = next((n for n, _ in cmd.assignments if not commands.safe_env_name(n)), None)
    if unsafe and not rules_full:  # a rule that names the variable (Bash(FOO=1 npm test)) is the person's say
        return _ask_part(cmd, f"it sets {unsafe}, which may change what the command runs or where it writes")
    hit = rules_full if unsafe else next(((r, s) for r, s in rules.of("allow", "Bash")
                                          if bash_matches(r.specifier, bare) or bash_matches(r.specifier, full)),
                                         None)
    reads = commands.read_only(list(inner))  # None: the command itself only reads
    if reads is None and inner[0] == "git" and not all(
            cwd is not None and commands.git_finds_workspace_repo(cwd, ws) for cwd in line.cwds):
        reads = "git would open a repository planted inside the workspace (its config can run programs)"
    if cmd.assignments and inner and inner[0] in ("cd", "pushd", "popd"):
        return _ask_part(cmd, "a variable set for cd changes where it goes")
    redirect = _writing_redirect(cmd)
    if mode is PermissionMode.PLAN and (reads or redirect):
        return deny_plan("Bash")
    if problem := _path_problem(cmd, inner_words, reads is None, line, ws, hm):
        return _ask_part(cmd, problem)
    if hit:
        return allow_by_rule(*hit)
    if inner and inner[0] == "cd":
        return allow_by_mode(mode)  # a cd inside the workspace changes nothing (its target was checked)
    if reads is None and redirect is None:
        return allow_by_mode(mode)  # a read-only command whose every path is inside the workspace
    if mode is PermissionMode.ACCEPT_EDITS and (
            (reads is None and redirect) or _file_command_ok(inner_words, line.cwds, ws, hm)):
        return allow_by_mode(mode)  # an edit inside the workspace: a redirection or mkdir/touch/mv/cp
    return ask_by_mode("Bash", bare, mode)


def _writing_redirect(cmd: Command) -> str | None:
    """The output redirection that makes a part write a file (anything but /dev/null and the like)."""
    for r in cmd.redirects:
        if r.writes and not (r.target is not None and r.target.value in SAFE_DEVICES):
            return f"writes to {r.target.raw if r.target else 'a file'}"
    return None


def _ask_part(cmd: Command, why: str) -> PermissionResult:
    text = " ".join(w.raw for w in cmd.words)
    return ask(f"`{text[:80]}` needs approval: {why}", "bash: paths", why[:80])


def _path_problem(cmd: Command, words: tuple[Word, ...], reads_only: bool, line: _Line, ws: str, hm: str
                  ) -> str | None:
    """Why the paths of this part stop an automatic approval, or None.

    Every argument that may name a file must resolve inside the workspace (a
    command that may write must also stay out of .git/, .mainsail/, .claude/);
    output redirections likewise; a read redirection must stay inside. A glob
    must not be able to expand to an option, and no path may lie under one an
    earlier part of the line moved or copied.
    """
    name = words[0].value if words else None
    args = list(words[1:])
    if brace := next((w for w in args if w.brace), None):  # a path or not (a pattern, a string), bash makes
        return f"{brace.raw} may expand to several words (brace expansion)"  # other words of it
    if name in NO_FILE_ARGS:
        args = []
    elif name in _PATTERN_FIRST and not any(_names_a_pattern(w.value or "") for w in args):
        positional = next((i for i, w in enumerate(args) if not (w.value or "-").startswith("-")), None)
        if positional is not None:
            args.pop(positional)  # the pattern, not a file (unless -e/-f gave it)
    if name == "cd" and (why := _cd_problem(args, line.cwds, ws, hm)):
        return why
    options_ended = False
    checks: list[tuple[Word, bool]] = []
    for w in args:
        if not options_ended and glob_may_be_option(w, line.cwds, hm, line.created):
            return f"the pattern {w.raw} may expand to an option (a file name starting with -)"
        options_ended = options_ended or w.value == "--"
        checks.append((w, not reads_only))
    for r in cmd.redirects:
        if r.target is None or not (r.reads or r.writes):
            continue
        if not r.target.literal:
            return f"a redirection to {r.target.raw}, which bash would expand"
        checks.append((r.target, r.writes))
    for word, writes in checks:
        if why := _word_problem(word, writes, line, ws, hm):
            return why
    return None


def _word_problem(word: Word, writes: bool, line: _Line, ws: str, hm: str) -> str | None:
    if word.brace:
        return f"{word.raw} may expand to several words (brace expansion)"
    if word.glob and (quoted_glob(word) or any(bad in (word.value or "") for bad in ("[^", "[:", "[=", "[."))):
        return f"the pattern {word.raw} is one the checker does not expand"
    if word.glob and writes and may_match_protected(word.value or ""):
        return f"the pattern {word.raw} may match {PROTECTED_TEXT}"
    for text in path_texts(word):
        for cwd in line.cwds:
            found, unknown = resolve_all(word, text, cwd, hm)
            if unknown:
                return f"{text} cannot be resolved" + (" after a cd" if cwd is None else "")
            if len(found) > MAX_GLOB_MATCHES:
                return f"{word.raw} matches too many files to check"
            for path in found:
                if path in SAFE_DEVICES:
                    continue
                if not paths.inside(path, ws):
                    return f"{text} is outside the workspace"
                if writes and paths.protected(path, ws, hm):
                    return f"{text} is {PROTECTED_TEXT}"
            if line.touched and (t := lexical(text, cwd, hm)) and any(
                    t == moved or t.startswith(moved.rstrip("/") + "/") for moved in line.touched):
                return f"{text} is under a path an earlier part of the line moves or copies"
    return None


def _cd_problem(args: list[Word], cwds: Cwds, ws: str, hm: str) -> str | None:
    """``cd link/../..``: bash removes ``..`` as text before resolving symlinks; both readings must stay in."""
    if not args or not args[0].literal or (args[0].value or "").strip("/") in ("", "-"):
        return None
    for cwd in cwds:
        if cwd is None:
            continue
        target = lexical(args[0].value, cwd, hm)
        if target is None:
            return f"{args[0].raw} cannot be resolved"
        if not paths.inside(os.path.realpath(target), ws):
            return f"cd {args[0].raw} leaves the workspace (bash resolves .. before symlinks)"
    return None


def _names_a_pattern(arg: str) -> bool:
    """A grep/rg option giving the pattern itself (``-e P``, ``-f FILE``, ``--regexp``, ``--file``, their
    abbreviations, or a short cluster holding e or f), or rg's ``--files``: then every operand is a file."""
    if arg.startswith("--"):
        name = arg[2:].split("=", 1)[0]
        return bool(name) and ("regexp".startswith(name) or "file".startswith(name) or name in ("files",
                                                                                              "type-list"))
    return arg.startswith("-") and any(c in "ef" for c in arg[1:])


def _file_command_ok(words: tuple[Word, ...], cwds: Cwds, ws: str, hm: str) -> bool:
    """acceptEdits: ``mkdir``/``touch``/``mv``/``cp`` whose every path is inside the workspace, unprotected."""
    values = ["./" + w.value if w.value and w.value.startswith("~") and not w.tilde else w.value for w in words]
    touched = commands.file_command_paths(values)
    if not touched:
        return False
    for text in touched:
        for cwd in cwds:
            if cwd is None:
                return False
            try:
                path = paths.resolve(text, cwd=cwd, home=hm)
            except paths.Unresolvable:
                return False
            if not paths.inside(path, ws) or paths.protected(path, ws, hm):
                return False
            if ".." in text.split("/") and not paths.inside(os.path.realpath(lexical(text, cwd, hm) or "/"), ws):
                return False
    return True
