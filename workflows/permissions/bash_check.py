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
   :mod:`workflows.permissions.commands`) whose paths are all inside the
   workspace needs no rule, in every mode, as in Claude Code; acceptEdits adds
   output redirections and ``mkdir``/``touch``/``mv``/``cp`` inside the
   workspace. In plan mode a part must be read-only, whatever the rules say.
"""

from __future__ import annotations

import fnmatch
import glob as globmod
import os
from dataclasses import dataclass

from workflows.models import PermissionMode
from workflows.permissions import commands, paths
from workflows.permissions.bash_parse import Command, Parsed, Word, parse
from workflows.permissions.rules import (
    PROTECTED_TEXT,
    Compiled,
    Decision,
    PermissionResult,
    allow_by_mode,
    allow_by_rule,
    ask,
    ask_by_mode,
    ask_by_rule,
    bash_matches,
    deny_by_rule,
    deny_plan,
    rule_source,
)

__all__ = ["evaluate_bash", "SAFE_DEVICES"]

SAFE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/zero", "/dev/urandom",
                          "/dev/random", "/dev/tty"})
MAX_SCRIPT_DEPTH = 4
MAX_GLOB_MATCHES = 2000
#: Read-only commands whose arguments are not files (their text is never resolved as a path).
NO_FILE_ARGS = frozenset({"echo", "printf", "true", "false", "seq", "sleep", "uname", "whoami", "id",
                          "pwd", "nproc", "printenv", "basename", "dirname", "hostname", "locale",
                          "type", "which", "whereis", "tr"})
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg"})

Cwds = frozenset  # of str | None (None: a directory the checker could not resolve)


@dataclass(frozen=True)
class _Seen:
    """A command the line runs, with its word lists (as written, then inside each wrapper)."""

    cmd: Command
    levels: tuple[tuple[str | None, ...], ...]
    cwds: Cwds


# =========================================================================== entry point


def evaluate_bash(tool_input: dict, mode: PermissionMode, rules: Compiled, ws: str, hm: str) -> PermissionResult:
    """Allow, deny or ask for one Bash call (see the module docstring for the order)."""
    command = tool_input.get("command")
    command = command if isinstance(command, str) else ""
    parsed = parse(command)
    seen, unsure = _scan(parsed, ws, hm, depth=0)
    if hit := _denied(seen, unsure, rules, ws, hm, command):
        return hit
    if mode is PermissionMode.BYPASS:
        return allow_by_mode(mode)
    if hit := _asked(seen, rules):
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


# =========================================================================== scan: every command, every cwd


def _scan(parsed: Parsed, ws: str, hm: str, *, depth: int, cwds: Cwds | None = None
          ) -> tuple[list[_Seen], list[str]]:
    """Every command ``parsed`` runs, with the directories it may run in, and why some are unknowable."""
    cwds = cwds if cwds is not None else Cwds({ws})  # logical paths: see _cd_targets
    seen: list[_Seen] = []
    unsure: list[str] = []
    if any(p.startswith("a syntax error") for p in parsed.problems):
        unsure.append("a command the bash grammar cannot fully parse")
    elif parsed.problems and parsed.problems[0].startswith("a control character"):
        unsure.append(parsed.problems[0])
    for cmd in parsed.commands:
        unwrapped = commands.unwrap([w.value for w in cmd.words])
        seen.append(_Seen(cmd, tuple(tuple(level) for level in unwrapped.levels), cwds))
        if unwrapped.dynamic:
            unsure.append(unwrapped.dynamic)
        for script in unwrapped.scripts:
            if depth >= MAX_SCRIPT_DEPTH:
                unsure.append("shell code nested too deeply")
                continue
            more, why = _scan(parse(script), ws, hm, depth=depth + 1, cwds=cwds)
            seen += more
            unsure += why
        for level in unwrapped.levels:
            if level and level[0] in ("cd", "pushd", "popd"):
                cwds = cwds | _cd_targets(level, cwds, hm)
    return seen, unsure


def _cd_targets(level: tuple[str | None, ...] | list[str | None], cwds: Cwds, hm: str) -> Cwds:
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


# =========================================================================== 1. deny


def _forms(seen: _Seen) -> list[str]:
    """The texts a rule is matched against: as written, quotes removed, each wrapper level, basenames."""
    cmd = seen.cmd
    out = [" ".join(w.raw for w in cmd.words),
           " ".join([f"{n}={w.raw}" for n, w in cmd.assignments] + [w.raw for w in cmd.words])]
    for level in seen.levels:
        values = ["\0" if v is None else v for v in level]
        if not values:
            continue
        out.append(" ".join(values))
        if "/" in values[0]:
            out.append(" ".join([values[0].rsplit("/", 1)[-1], *values[1:]]))
    return list(dict.fromkeys(f for f in out if f))


def _rule_hit(seen: list[_Seen], rules: Compiled, kind: str) -> tuple[object, str, str] | None:
    for s in seen:
        for form in _forms(s):
            for rule, source in rules.of(kind, "Bash"):
                if bash_matches(rule.specifier, form):
                    return rule, source, " ".join(w.raw for w in s.cmd.words)
    return None


def _denied(seen: list[_Seen], unsure: list[str], rules: Compiled, ws: str, hm: str,
            command: str) -> PermissionResult | None:
    bash_denies = rules.of("deny", "Bash")
    for rule, source in bash_denies:
        if rule.specifier is None:
            return deny_by_rule("Bash", rule, source)
    if hit := _rule_hit(seen, rules, "deny"):
        rule, source, what = hit
        return deny_by_rule("Bash", rule, source, what=what if what.strip() != command.strip() else "")
    if unsure and bash_denies:
        rule, source = bash_denies[0]
        return _deny(f"the checker cannot tell whether it runs a command the deny rule {rule.raw} names "
                     f"({unsure[0]})", rule_source(rule, source), rule.raw)
    if rules.of("deny", ("Read", "Edit", "Write")):
        return _path_denied(seen, rules, ws, hm)
    return None


def _deny(why: str, source: str, rule: str | None = None) -> PermissionResult:
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use Bash was denied: {why}. Do not retry this call or try to work around the "
                "rule; continue without it, or tell the user what you need and why."),
        source=source, display=f"denied: {why}"[:100], rule=rule)


def _path_denied(seen: list[_Seen], rules: Compiled, ws: str, hm: str) -> PermissionResult | None:
    """A Read/Edit deny rule covering a path the line names (reads: any; edits: commands that may write)."""
    for s in seen:
        words = s.cmd.words[1:]
        writes = commands.read_only([w.value for w in s.cmd.words]) is not None
        targets: list[tuple[Word, bool]] = [(w, writes) for w in words]
        targets += [(r.target, r.writes) for r in s.cmd.redirects if r.target is not None and (r.reads or r.writes)]
        for word, may_write in targets:
            if word.value is None:
                rule, source = rules.of("deny", ("Read", "Edit", "Write"))[0]
                return _deny(f"it names {word.raw}, which expands when it runs, so the checker cannot tell "
                             f"whether the deny rule {rule.raw} covers it", rule_source(rule, source), rule.raw)
            for text in _path_texts(word):
                for cwd in s.cwds:
                    found, unknown = _resolve_all(word, text, cwd, hm)
                    if unknown and cwd is None:
                        rule, source = rules.of("deny", ("Read", "Edit", "Write"))[0]
                        return _deny(f"it names {text!r} after a `cd` to a directory the checker cannot resolve, "
                                     f"so it cannot tell whether the deny rule {rule.raw} covers it",
                                     rule_source(rule, source), rule.raw)
                    for path in found:
                        kinds = ("Read", "Edit", "Write") if may_write else ("Read",)
                        hit = rules.path_hit("deny", kinds, path, ws, hm)
                        if hit:
                            rule, source = hit
                            return _deny(f"it names {text} ({path}), which the deny rule {rule.raw} covers",
                                         rule_source(rule, source), rule.raw)
    return None


def _path_texts(word: Word) -> list[str]:
    """The texts in one argument that may name a file: the whole word (``--x/../../y`` is a path too),
    and for an option a ``--opt=value`` value and every place a ``-xVALUE`` value may start."""
    v = word.value
    if v is None:
        return []
    out = [v]
    if v.startswith("-") and v != "-":
        if "=" in v:
            out.append(v.split("=", 1)[1])
        if not v.startswith("--"):
            out += [v[i:] for i in range(2, len(v))]  # -tDIR, -ft/dir, -o/x
    return [t for t in dict.fromkeys(out) if t]


def _resolve_all(word: Word, text: str, cwd: str | None, hm: str) -> tuple[list[str], bool]:
    """The resolved paths ``text`` may name under ``cwd`` (glob matches included); True when unknowable."""
    if not text:
        return [], False
    if text.startswith("~") and not (word.tilde and text == word.value):
        text = "./" + text  # a quoted ~ (or one inside an option value) is a literal name
    if cwd is None and not (os.path.isabs(text) or text.startswith("~")):
        return [], True
    base = cwd or "/"
    try:
        if word.glob and text == word.value:
            pattern = paths.expand(text, cwd=base, home=hm)
            # Python's glob skips dotfiles unless the segment starts with a dot, as bash does (no dotglob).
            matches = globmod.glob(pattern)[:MAX_GLOB_MATCHES + 1]
            return [os.path.realpath(m) for m in matches] + [os.path.realpath(pattern)], False
        return [paths.resolve(text, cwd=base, home=hm)], False
    except paths.Unresolvable:
        return [], True


# =========================================================================== 3. ask rules


def _asked(seen: list[_Seen], rules: Compiled) -> PermissionResult | None:
    if hit := _rule_hit(seen, rules, "ask"):
        rule, source, _ = hit
        return ask_by_rule(rule, source)
    return None


# =========================================================================== 5. the parts


def _parts(top: tuple[Command, ...], mode: PermissionMode, rules: Compiled, ws: str, hm: str) -> PermissionResult:
    cwds = Cwds({ws})
    hits: list[tuple[object, str]] = []
    for cmd in top:
        verdict = _part(cmd, mode, rules, ws, hm, cwds)
        if verdict.decision is not Decision.ALLOW:
            return verdict
        if verdict.rule:
            hits.append(next((r, s) for r, s in rules.of("allow", "Bash") if r.raw == verdict.rule))
        values = [w.value for w in cmd.words]
        if values and values[0] in ("cd", "pushd", "popd"):
            cwds = cwds | _cd_targets(values, cwds, hm)
    if not hits:
        return allow_by_mode(mode)
    rule, source = hits[0]
    if len({h[0].raw for h in hits}) == 1:
        return allow_by_rule(rule, source)
    names = ", ".join(dict.fromkeys(rule_source(*h) for h in hits))
    return PermissionResult(Decision.ALLOW, source=names, display=f"allowed by rules ({len(hits)} parts)",
                            rule=rule.raw)


def _part(cmd: Command, mode: PermissionMode, rules: Compiled, ws: str, hm: str, cwds: Cwds) -> PermissionResult:
    """One simple command of a fully understood line."""
    values = [w.value for w in cmd.words]
    for name, _ in cmd.assignments:
        if not commands.safe_env_name(name):
            return _ask_part(cmd, f"it sets {name}, which changes what the command runs")
    inner = commands.strip_safe_wrappers(values)
    inner_words = cmd.words[len(values) - len(inner):]
    bare = " ".join(w.raw for w in inner_words)
    full = " ".join([f"{n}={w.raw}" for n, w in cmd.assignments] + [w.raw for w in cmd.words])
    hit = next(((r, s) for r, s in rules.of("allow", "Bash")
                if bash_matches(r.specifier, bare) or bash_matches(r.specifier, full)), None)
    reads = commands.read_only(list(inner))  # None: the command itself only reads
    if reads is None and inner[0] == "git" and not all(
            cwd is not None and commands.git_finds_workspace_repo(cwd, ws) for cwd in cwds):
        reads = "git would open a repository planted inside the workspace (its config can run programs)"
    if cmd.assignments and inner and inner[0] in ("cd", "pushd", "popd"):
        return _ask_part(cmd, "a variable set for cd changes where it goes")
    redirect = _writing_redirect(cmd)
    if mode is PermissionMode.PLAN and (reads or redirect):
        return deny_plan("Bash")
    if problem := _path_problem(cmd, inner_words, reads is None, cwds, ws, hm):
        return _ask_part(cmd, problem)
    if hit:
        return allow_by_rule(*hit)
    if inner and inner[0] == "cd":
        return allow_by_mode(mode)  # a cd inside the workspace changes nothing (its target was checked)
    if reads is None and redirect is None:
        return allow_by_mode(mode)  # a read-only command whose every path is inside the workspace
    if mode is PermissionMode.ACCEPT_EDITS and (
            (reads is None and redirect) or _file_command_ok(inner_words, cwds, ws, hm)):
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


def _path_problem(cmd: Command, words: tuple[Word, ...], reads_only: bool, cwds: Cwds, ws: str, hm: str
                  ) -> str | None:
    """Why the paths of this part stop an automatic approval, or None.

    Every argument that may name a file must resolve inside the workspace (a
    command that may write must also stay out of .git/, .mainsail/, .claude/);
    output redirections likewise; a read redirection must stay inside.
    """
    name = words[0].value if words else None
    args = list(words[1:])
    if name in NO_FILE_ARGS:
        args = []
    elif name in _PATTERN_FIRST and not any(_names_a_pattern(w.value or "") for w in args):
        positional = next((i for i, w in enumerate(args) if not (w.value or "-").startswith("-")), None)
        if positional is not None:
            args.pop(positional)  # the pattern, not a file (unless -e/-f gave it)
    if name == "cd" and args and args[0].literal and (args[0].value or "").strip("/") not in ("", "-"):
        for cwd in cwds:
            if cwd is None:
                continue
            try:
                logical = os.path.realpath(os.path.normpath(paths.expand(args[0].value, cwd=cwd, home=hm)))
            except paths.Unresolvable:
                return f"{args[0].raw} cannot be resolved"
            if not paths.inside(logical, ws):
                return f"cd {args[0].raw} leaves the workspace (bash resolves .. before symlinks)"
    checks = [(w, not reads_only) for w in args]
    for r in cmd.redirects:
        if r.target is None or not (r.reads or r.writes):
            continue
        if not r.target.literal:
            return f"a redirection to {r.target.raw}, which bash would expand"
        checks.append((r.target, r.writes))
    for word, writes in checks:
        if word.brace:
            return f"{word.raw} may expand to several words (brace expansion)"
        if word.glob and any(bad in (word.value or "") for bad in ("[^", "[:", "[=", "[.")):
            return f"the pattern {word.raw} is one the checker does not expand"
        if word.glob and writes and _may_match_protected(word.value or ""):
            return f"the pattern {word.raw} may match {PROTECTED_TEXT}"
        for text in _path_texts(word):
            for cwd in cwds:
                found, unknown = _resolve_all(word, text, cwd, hm)
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
    return None


def _names_a_pattern(arg: str) -> bool:
    """A grep/rg option giving the pattern itself (``-e P``, ``-f FILE``, ``--regexp``, ``--file``, their
    abbreviations, or a short cluster holding e or f): then every operand is a file."""
    if arg.startswith("--"):
        name = arg[2:].split("=", 1)[0]
        return bool(name) and ("regexp".startswith(name) or "file".startswith(name))
    return arg.startswith("-") and any(c in "ef" for c in arg[1:])


def _may_match_protected(pattern: str) -> bool:
    """Whether a segment of a glob could match .git, .claude or .mainsail, whatever is on disk now."""
    return any(fnmatch.fnmatchcase(name, seg) for seg in pattern.split("/") for name in paths.PROTECTED_DIRS)


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
    return True
