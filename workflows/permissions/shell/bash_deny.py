"""Deny (and ask) rules against every command a line would run, in every form.

:func:`scan` lists every simple command the line runs (nested ones, the inside
of wrappers, ``find -exec``, the code of ``bash -c`` and ``eval`` parsed again),
with the directories each may run in, and the reasons the command that runs
cannot be known (``$cmd``, ``source``, ``sh script``, ``alias``/``hash`` changing
what a name runs, a builtin evaluating code held in an argument, a parse
error). :func:`denied` matches the deny rules against every form of every
command (as written, quotes removed, the basename, each wrapper level); where
anything is unknowable, any Bash deny rule denies ("when unsure, deny").
``Read``/``Edit`` deny rules are matched against every path the line names.
"""

from __future__ import annotations

import glob as globmod
import os
from dataclasses import dataclass

from workflows.permissions.rules import paths
from workflows.permissions.rules.results import Decision, PermissionResult, ask_by_rule, deny_by_rule, rule_source
from workflows.permissions.rules.rules import EDIT_TOOLS, Compiled, bash_matches
from workflows.permissions.shell import commands
from workflows.permissions.shell.bash_parse import Command, Parsed, Word, parse
from workflows.permissions.shell.bash_paths import MAX_GLOB_MATCHES, Cwds, cd_targets, path_texts, resolve_all
from workflows.permissions.shell.bash_vote import DISAGREE, UNCHECKED

__all__ = ["Seen", "asked", "denied", "scan"]

MAX_SCRIPT_DEPTH = 4
MAX_WALK = 5000
#: Parse problems after which a name may run something else than it says (a function named ls,
#: PATH=..., BASH_CMDS[ls]=..., declare -f): for deny rules, the command that runs is unknown.
_UNKNOWABLE = ("a syntax error", "a control character", "a declaration", "unset", "a variable assignment on its own",
               "a function definition", DISAGREE, UNCHECKED)
#: Parse problems after which the words of a line are not known for sure: for deny rules on paths too.
_WORDS_UNKNOWN = ("a syntax error", "a control character", DISAGREE, UNCHECKED)
_CODE_IN_TEXT = ("$(", "`", "${", "$((")


@dataclass(frozen=True)
class Seen:
    """A command the line runs, with its word lists (as written, then inside each wrapper)."""

    cmd: Command
    levels: tuple[tuple[str | None, ...], ...]
    cwds: Cwds


def scan(parsed: Parsed, ws: str, hm: str, *, depth: int = 0, cwds: Cwds | None = None
         ) -> tuple[list[Seen], list[str]]:
    """Every command ``parsed`` runs, with the directories it may run in, and why some are unknowable."""
    cwds = cwds if cwds is not None else Cwds({ws})
    seen: list[Seen] = []
    unsure = [p for p in parsed.problems if p.startswith(_UNKNOWABLE)][:1]
    for cmd in parsed.commands:
        unwrapped = commands.unwrap([w.value for w in cmd.words])
        seen.append(Seen(cmd, tuple(tuple(level) for level in unwrapped.levels), cwds))
        if unwrapped.dynamic:
            unsure.append(unwrapped.dynamic)
        code = [w.value for w in cmd.words if w.value and any(c in w.value for c in _CODE_IN_TEXT)]
        if code:  # test -v 'a[$(cmd)]', read, let, printf -v: the text may be evaluated; look inside it too
            unsure.append("an argument holding shell code that a builtin may evaluate")
        for script in unwrapped.scripts + code:
            if depth >= MAX_SCRIPT_DEPTH:
                unsure.append("shell code nested too deeply")
                continue
            more, why = scan(parse(script), ws, hm, depth=depth + 1, cwds=cwds)
            seen += more
            unsure += why
        for level in unwrapped.levels:
            if level and level[0] in ("cd", "pushd", "popd"):
                cwds = cwds | cd_targets(level, cwds, hm)
    return seen, unsure


def _forms(seen: Seen) -> list[str]:
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


def _rule_hit(seen: list[Seen], rules: Compiled, kind: str) -> tuple[object, str, str] | None:
    for s in seen:
        for form in _forms(s):
            for rule, source in rules.of(kind, "Bash"):
                if bash_matches(rule.specifier, form):
                    return rule, source, " ".join(w.raw for w in s.cmd.words)
    return None


def asked(seen: list[Seen], rules: Compiled) -> PermissionResult | None:
    """The first ask rule matching a form of a command the line runs."""
    if hit := _rule_hit(seen, rules, "ask"):
        rule, source, _ = hit
        return ask_by_rule(rule, source)
    return None


def denied(seen: list[Seen], unsure: list[str], rules: Compiled, ws: str, hm: str,
           command: str) -> PermissionResult | None:
    """The denial for this line, if a deny rule (or an unknowable command under one) calls for it."""
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
    if path_rules := rules.of("deny", ("Read", *EDIT_TOOLS)):
        if blind := next((u for u in unsure if u.startswith(_WORDS_UNKNOWN)), None):
            rule, source = path_rules[0]
            return _deny(f"the checker cannot tell which paths it names ({blind}), so it cannot tell whether the "
                         f"deny rule {rule.raw} covers what it reads or writes", rule_source(rule, source), rule.raw)
        return _path_denied(seen, rules, ws, hm)
    return None


def _deny(why: str, source: str, rule: str | None = None) -> PermissionResult:
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use Bash was denied: {why}. Do not retry this call or try to work around the "
                "rule; continue without it, or tell the user what you need and why."),
        source=source, display=f"denied: {why}"[:100], rule=rule)


def _path_denied(seen: list[Seen], rules: Compiled, ws: str, hm: str) -> PermissionResult | None:
    """A Read/Edit deny rule covering a path the line names (reads: any; edits: commands that may write).

    What the checker cannot see there (an expanding word, a directory after an unknown ``cd``, a
    glob with too many matches) denies; what a program reads on its own (a script) is the sandbox's.
    """
    first = rules.of("deny", ("Read", *EDIT_TOOLS))[0]

    def unsure_deny(what: str) -> PermissionResult:
        rule, source = first
        return _deny(f"{what}, so the checker cannot tell whether the deny rule {rule.raw} covers what it "
                     "reads or writes", rule_source(rule, source), rule.raw)

    for s in seen:
        writes = commands.read_only([w.value for w in s.cmd.words]) is not None
        targets: list[tuple[Word, bool]] = [(w, writes) for w in s.cmd.words[1:]]
        targets += [(w, False) for _, w in s.cmd.assignments]  # MAGIC=.env file x
        targets += [(r.target, r.writes) for r in s.cmd.redirects if r.target is not None and (r.reads or r.writes)]
        targets += [(w, writes) for r in s.cmd.redirects for w in r.extra]  # bash's arguments (cat < a .env)
        for word, may_write in targets:
            if word.value is None:
                return unsure_deny(f"it names {word.raw}, which expands when it runs")
            kinds = ("Read", *EDIT_TOOLS) if may_write else ("Read",)
            for text in path_texts(word):
                for cwd in s.cwds:
                    found, unknown = resolve_all(word, text, cwd, hm)
                    if unknown:
                        return unsure_deny(f"it names {text!r}, which cannot be resolved"
                                           + (" after a `cd` to an unknown directory" if cwd is None else ""))
                    if len(found) > MAX_GLOB_MATCHES:
                        return unsure_deny(f"{word.raw} matches more files than the checker reads")
                    found += _program_globs(word, text, cwd or "/", hm)
                    for path in found:
                        if hit := rules.path_hit("deny", kinds, path, ws, hm):
                            rule, source = hit
                            return _deny(f"it names {text} ({path}), which the deny rule {rule.raw} covers",
                                         rule_source(rule, source), rule.raw)
        if hit := _folder_holding_denied(s, rules, ws, hm):
            return hit
    return None


def _program_globs(word: Word, text: str, cwd: str, hm: str) -> list[str]:
    """A quoted pattern a program expands itself (``git grep -- '.e*'``, ``find -name '.e*'``): its
    matches at any depth, dotfiles included."""
    if word.glob or not any(c in text for c in "*?["):
        return []
    try:
        pattern = paths.expand(text, cwd=cwd, home=hm)
    except paths.Unresolvable:
        return []
    base = os.path.join(os.path.dirname(pattern) or cwd, "**", os.path.basename(pattern))
    return [os.path.realpath(m) for m in globmod.glob(base, recursive=True, include_hidden=True)[:MAX_WALK]]


def _folder_holding_denied(s: Seen, rules: Compiled, ws: str, hm: str) -> PermissionResult | None:
    """``mv sub s2; cat s2/.env``: moving or copying a folder that holds a denied file is reading it."""
    name = (s.levels[-1][0] if s.levels and s.levels[-1] else None) or ""
    if name.rsplit("/", 1)[-1] not in ("mv", "cp", "ln", "rsync", "tar", "zip", "install"):
        return None
    for word in s.cmd.words[1:]:
        for cwd in s.cwds:
            if word.value is None or cwd is None:
                continue
            try:
                folder = paths.resolve(word.value, cwd=cwd, home=hm)
            except paths.Unresolvable:
                continue
            if not os.path.isdir(folder):
                continue
            for n, (dirpath, dirnames, filenames) in enumerate(os.walk(folder)):
                if n > MAX_WALK:
                    break
                for f in filenames + dirnames:
                    path = os.path.realpath(os.path.join(dirpath, f))
                    if hit := rules.path_hit("deny", ("Read",), path, ws, hm):
                        rule, source = hit
                        return _deny(f"it moves or copies {word.raw}, which holds {path}, covered by the deny "
                                     f"rule {rule.raw}", rule_source(rule, source), rule.raw)
    return None
