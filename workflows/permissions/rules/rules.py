"""Claude Code's permission rule language (the results a check returns: :mod:`workflows.permissions.rules.results`).

A rule is ``Tool`` or ``Tool(specifier)``, kept in three lists (``allow``,
``ask``, ``deny``) of a :class:`~workflows.models.RuleSet`. This module parses
rules and matches their specifiers; :mod:`workflows.permissions.evaluate`
applies them to a call.

Specifiers:

* ``Bash(spec)`` (see :func:`bash_matches`): exact text, ``*`` wildcards
  (`` *`` is a word boundary and also matches the bare command), and the legacy
  ``prefix:*``.
* ``Read(path)``, ``Edit(path)`` (see :func:`path_matches`): gitignore-style
  patterns; ``//abs``, ``~/x``, ``/x`` (the workspace root), ``./x``.

MCP tools (``mcp__server__tool``) take Claude Code's forms, without a specifier:
``mcp__server`` (every tool of the server), ``mcp__server__tool``, and ``*`` wildcards
(``mcp__server__*``, ``mcp__server__get_*``); see :mod:`workflows.permissions.rules.mcp_rules`.

:func:`split_rules` splits a flag's value (``--allowedTools``, a command file's ``allowed-tools``) into rules.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from workflows.models import RuleSet, RuleSpec
from workflows.permissions.rules.mcp_rules import MCP, mcp_covers, mcp_rule_problem

__all__ = [
    "Compiled",
    "EDIT_TOOLS",
    "Rule",
    "RuleSet",
    "RuleSpec",
    "RuleSyntaxError",
    "bash_matches",
    "compile_rules",
    "parse_rule",
    "path_matches",
    "split_rules",
]


class RuleSyntaxError(ValueError):
    """A permission rule does not parse; ``rule`` is its text, ``why`` what is wrong."""

    def __init__(self, rule: str, why: str) -> None:
        self.rule = rule
        self.why = why
        super().__init__(f"Invalid permission rule {rule!r}: {why}")


# =========================================================================== parsing

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Rule:
    """A parsed rule: ``Bash(npm test:*)`` → tool ``Bash``, specifier ``npm test:*``."""

    tool: str
    specifier: str | None
    raw: str


def _paren_depth_error(spec: str) -> str | None:
    """Why the parentheses of ``spec`` do not balance (quoted ones ignored), or None."""
    depth, quote = 0, ""
    for ch in spec:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return "unbalanced parentheses: a ')' has no matching '('"
    if depth > 0:
        return "unbalanced parentheses: a '(' inside the specifier is never closed"
    return None


@lru_cache(maxsize=4096)
def parse_rule(text: str) -> Rule:
    """Parse ``Tool`` or ``Tool(specifier)``.

    The specifier is everything between the first ``(`` and the last ``)``,
    which must end the rule. ``Tool(*)`` is the same as ``Tool``.

    Raises:
        RuleSyntaxError: empty rule, empty ``()``, unbalanced parentheses, text
            after the closing parenthesis, or a tool name with characters other
            than letters, digits, ``_`` and ``-``.
    """
    if not isinstance(text, str):
        raise RuleSyntaxError(str(text), f"a rule must be a string, not {type(text).__name__}")
    raw = text.strip()
    if not raw:
        raise RuleSyntaxError(text, "the rule is empty; write a tool name such as Read, "
                                    "or Tool(specifier) such as Bash(npm test:*)")
    open_at = raw.find("(")
    if open_at < 0:
        if ")" in raw:
            raise RuleSyntaxError(raw, "unbalanced parentheses: ')' without a matching '('")
        tool, spec = raw, None
    else:
        tool = raw[:open_at]
        close_at = raw.rfind(")")
        if close_at < open_at:
            raise RuleSyntaxError(raw, "unbalanced parentheses: '(' is never closed; "
                                       "write Tool(specifier) with a closing ')'")
        if close_at != len(raw) - 1:
            raise RuleSyntaxError(raw, f"unexpected text {raw[close_at + 1:]!r} after the closing ')'; "
                                       "a rule must end with ')'")
        if not tool:
            raise RuleSyntaxError(raw, "missing tool name before '('; write e.g. Bash(npm test:*)")
        spec = raw[open_at + 1:close_at].strip()
        why = _paren_depth_error(spec)
        if why:
            raise RuleSyntaxError(raw, why)
        if not spec:
            raise RuleSyntaxError(raw, f"empty specifier '()'; write {tool} alone (or {tool}(*)) "
                                       "to match every call")
        if spec == "*":
            spec = None
    if tool.startswith(MCP):
        why = mcp_rule_problem(tool, spec)
        if why:
            raise RuleSyntaxError(raw, why)
        return Rule(tool=tool, specifier=None, raw=raw)
    if not _TOOL_NAME.fullmatch(tool):
        raise RuleSyntaxError(raw, f"invalid tool name {tool!r}: tool names contain only letters, "
                                   "digits, '_' and '-'")
    return Rule(tool=tool, specifier=spec, raw=raw)


# =========================================================================== Bash specifiers


@lru_cache(maxsize=4096)
def _bash_regex(spec: str) -> re.Pattern[str]:
    spec = spec.strip()
    if spec.endswith(":*"):
        spec = spec[:-2].rstrip() + " *"
    tail = ""
    if spec.endswith(" *"):
        spec, tail = spec[:-2], "(?: .*)?"
    body = ".*".join(re.escape(piece) for piece in spec.split("*"))
    return re.compile(body + tail, re.DOTALL)


def bash_matches(specifier: str | None, command: str) -> bool:
    """Whether one simple command (no operators) matches a ``Bash(...)`` specifier.

    ``None`` (the bare ``Bash`` rule) matches everything. ``*`` matches any
    characters; a trailing `` *`` also matches the bare command
    (``npm run *`` matches ``npm run`` but not ``npm runx``); ``prefix:*`` is
    the same as ``prefix *``. Without ``*`` the whole command must be equal.
    """
    if specifier is None:
        return True
    return bool(_bash_regex(specifier).fullmatch(command.strip()))


# =========================================================================== paths

_GLOB_CHARS = re.compile(r"[*?\[]")


def _segment_regex(seg: str) -> str:
    out, i = [], 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            while i < len(seg) and seg[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in seg[i + 2:]:
            end = seg.index("]", i + 2)
            body = seg[i + 1:end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def path_regex(spec: str, workspace: str, home: str) -> re.Pattern[str]:
    """The regex a resolved absolute path must fully match for ``Read(spec)``/``Edit(spec)``."""
    if spec.startswith("//"):
        pattern = spec[1:]
    elif spec == "~" or spec.startswith("~/"):
        pattern = home + spec[1:]
    elif spec.startswith("/"):
        pattern = workspace + spec
    elif spec.startswith("./"):
        pattern = workspace + spec[1:]
    elif "/" in spec.rstrip("/"):
        pattern = workspace + "/" + spec
    else:  # gitignore: a pattern without a slash matches at any depth
        pattern = workspace + "/**/" + spec
    if pattern.endswith("/"):
        pattern += "**"
    segs = pattern.split("/")[1:]
    k = next((n for n, seg in enumerate(segs) if _GLOB_CHARS.search(seg)), len(segs))
    literal = os.path.realpath("/" + "/".join(segs[:k]))
    rx = "" if literal == "/" else re.escape(literal)
    for seg in segs[k:]:
        rx += "(?:/.*)?" if seg == "**" else "/" + _segment_regex(seg)
    return re.compile(rx or "/.*", re.DOTALL)


def path_matches(specifier: str | None, path: str, *, workspace: str, home: str) -> bool:
    """Whether an absolute, resolved ``path`` matches a ``Read(...)``/``Edit(...)`` specifier.

    ``//abs`` is absolute from the filesystem root, ``~/x`` from ``home``,
    ``/x`` from the workspace (the project root), ``./x`` and ``x/y`` from the
    workspace (the current directory); a pattern without a slash (``.env``,
    ``*.pem``) matches at any depth under the workspace. ``*`` stays within one
    path segment, ``**`` spans any number (``src/**`` matches everything under
    ``src``, and ``src`` itself); ``?`` and ``[...]`` work as in globs.
    """
    if specifier is None:
        return True
    ws = os.path.realpath(workspace)
    hm = os.path.realpath(home) if home else ws
    return bool(path_regex(specifier, ws, hm).fullmatch(path))


# =========================================================================== compiled rules


@dataclass(frozen=True)
class Compiled:
    """A session's rules, parsed once: ``(rule, source)`` pairs by kind."""

    deny: tuple[tuple[Rule, str], ...]
    ask: tuple[tuple[Rule, str], ...]
    allow: tuple[tuple[Rule, str], ...]

    def of(self, kind: str, tools: tuple[str, ...] | str) -> list[tuple[Rule, str]]:
        names = (tools,) if isinstance(tools, str) else tools
        return [(r, s) for r, s in getattr(self, kind)
                if r.tool in names or (r.tool.startswith(MCP) and any(mcp_covers(r.tool, n) for n in names))]

    def path_hit(self, kind: str, tools: tuple[str, ...] | str, path: str, ws: str, hm: str
                 ) -> tuple[Rule, str] | None:
        """The first ``kind`` rule of ``tools`` whose path specifier covers resolved ``path`` (a bare
        ``Tool`` rule covers every path)."""
        for rule, source in self.of(kind, tools):
            if rule.specifier is None or path_regex(rule.specifier, ws, hm or ws).fullmatch(path):
                return rule, source
        return None


def compile_rules(rules: RuleSet) -> Compiled:
    """Rules by kind, parsed. A rule that does not parse never matches (the loader rejects them)."""
    out: dict[str, list[tuple[Rule, str]]] = {}
    for kind in ("deny", "ask", "allow"):
        out[kind] = []
        for spec in getattr(rules, kind):
            try:
                out[kind].append((parse_rule(spec.rule), spec.source))
            except RuleSyntaxError:
                continue
    return Compiled(tuple(out["deny"]), tuple(out["ask"]), tuple(out["allow"]))


# =========================================================================== tools

#: The tools that change files. ``Edit(path)`` rules speak for all of them (a tool's own rules for itself
#: too), acceptEdits allows them inside the workspace, and a write to a protected path always asks.
EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")


def split_rules(values: str | Iterable[str] | None) -> list[str]:
    """Split flag values into rules: on commas and whitespace outside parentheses.

    ``"Bash(git diff:*) Edit, Read"`` → three rules; ``"Bash(npm run test *)"``
    stays one (neither spaces nor commas inside parentheses split).
    """
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        cur: list[str] = []
        depth = 0
        for ch in str(value):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if depth == 0 and (ch == "," or ch.isspace()):
                if cur:
                    out.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
        if cur:
            out.append("".join(cur))
    return out
