"""Claude Code-compatible permission rules and modes, as pure functions.

A rule is ``Tool`` or ``Tool(specifier)``, kept in three lists (``allow``,
``ask``, ``deny``) of a :class:`RuleSet`. :func:`evaluate` decides one tool
call:

1. a matching **deny** rule denies (in every mode, bypassPermissions too);
2. in ``bypassPermissions`` everything else is allowed (ask rules included);
3. a matching **ask** rule asks;
4. a matching **allow** rule allows;
5. otherwise the **mode** decides (see :func:`evaluate`).

Writes into ``.git/``, ``.mainsail/`` and ``.claude/`` are never approved by a
rule or a mode (they ask), and ``dontAsk`` turns every ask into a deny.

Specifiers:

* ``Bash(spec)`` matches a command (see :func:`bash_matches`): exact text,
  ``*`` wildcards (`` *`` is a word boundary and also matches the bare
  command), and the legacy ``prefix:*``. Compound commands are split and every
  part must pass; wrappers and env assignments are stripped first.
* ``Read(path)``, ``Edit(path)``: gitignore-style patterns (see
  :func:`path_matches`). ``Edit`` rules cover Write too; ``Read`` rules cover
  Glob and Grep (their ``path``) on a best-effort basis.

The only I/O is ``os.path.realpath`` (paths are matched resolved).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Iterable

from workflows.models import PermissionMode, RuleSet, RuleSpec

__all__ = [
    "Decision",
    "PermissionResult",
    "Rule",
    "RuleSet",
    "RuleSpec",
    "RuleSyntaxError",
    "always_rules",
    "bash_matches",
    "evaluate",
    "parse_rule",
    "path_matches",
    "summary",
]


class Decision(str, Enum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True)
class PermissionResult:
    """The outcome for one tool call.

    ``reason``: for DENY, the message for the model (why, and what to do); for
    ASK, one line saying why it asks. ``source``: what decided (``rule X from
    FILE`` or ``mode M``). ``display``: one short line for the user. ``rule``:
    the raw rule text that decided, if a rule did.
    """

    decision: Decision
    reason: str = ""
    source: str = ""
    display: str = ""
    rule: str | None = None


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
    if not _TOOL_NAME.fullmatch(tool):
        raise RuleSyntaxError(raw, f"invalid tool name {tool!r}: tool names contain only letters, "
                                   "digits, '_' and '-'")
    return Rule(tool=tool, specifier=spec, raw=raw)


# =========================================================================== bash: tokenizer


class _ParseError(Exception):
    pass


@dataclass
class _Word:
    value: str  # quotes removed
    raw: str  # as written
    quoted: bool = False


@dataclass
class _Redirect:
    op: str
    fd: str
    target: _Word


@dataclass
class _Part:
    words: list[_Word] = field(default_factory=list)
    redirects: list[_Redirect] = field(default_factory=list)


@dataclass
class _Parsed:
    parts: list[_Part]  # the top-level simple commands, in order
    sub_parts: list[_Part]  # the commands inside $(...), `...`, <(...), >(...), at any depth
    substitution: bool
    error: str | None


_OPERATORS = (";;&", "&&", "||", "|&", ";;", ";&", ";", "|", "&", "(", ")")
_REDIRECTS = ("&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<&", "<>", ">", "<")
_WORD_END = " \t\n;&|()<>"


class _Lexer:
    """A small shell tokenizer: simple commands, their words and redirections.

    Quotes are respected (operators inside '...' or "..." do not split);
    command and process substitutions are recorded (their bodies parsed too);
    here-document bodies are skipped; ``(``/``)`` split like ``;``.
    """

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.parts: list[_Part] = []
        self.subs: list[str] = []
        self.cur = _Part()
        self.heredocs: list[tuple[str, bool, bool]] = []

    def run(self) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\\" and s.startswith("\n", self.i + 1):
                self.i += 2
            elif c == "\n":
                self._end_part()
                self.i += 1
                self._skip_heredocs()
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            elif s.startswith("&>", self.i):
                self._redirect("")
            elif c in ";&|()":
                op = next(o for o in _OPERATORS if s.startswith(o, self.i))
                self._end_part()
                self.i += len(op)
            elif c in "<>" and not s.startswith("(", self.i + 1):
                self._redirect("")
            else:
                w = self._word()
                if not w.raw:  # cannot happen; never loop forever on a tokenizer slip
                    raise _ParseError(f"unexpected character {c!r}")
                if (w.raw.isdigit() and self.i < len(s) and s[self.i] in "<>"
                        and not s.startswith("(", self.i + 1)):
                    self._redirect(w.raw)
                else:
                    self.cur.words.append(w)
        self._end_part()

    def _end_part(self) -> None:
        if self.cur.words or self.cur.redirects:
            self.parts.append(self.cur)
        self.cur = _Part()

    # -- pieces

    def _match_paren(self, start: int) -> int:
        """Index of the ``)`` closing a ``(`` just before ``start`` (quotes respected)."""
        s, depth, i = self.s, 1, start
        while i < len(s):
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    raise _ParseError("unterminated single quote")
                i = end + 1
                continue
            if c == '"':
                i += 1
                while i < len(s) and s[i] != '"':
                    i += 2 if s[i] == "\\" else 1
                if i >= len(s):
                    raise _ParseError("unterminated double quote")
                i += 1
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        raise _ParseError("unterminated command substitution")

    def _paren_subst(self, val: list[str], skip: int) -> None:
        """``$(...)``, ``<(...)`` or ``>(...)`` at ``self.i`` (``skip`` chars before the body)."""
        end = self._match_paren(self.i + skip)
        self.subs.append(self.s[self.i + skip:end])
        val.append(self.s[self.i:end + 1])
        self.i = end + 1

    def _backtick(self, val: list[str]) -> None:
        s, i = self.s, self.i + 1
        while i < len(s) and s[i] != "`":
            i += 2 if s[i] == "\\" else 1
        if i >= len(s):
            raise _ParseError("unterminated backtick")
        self.subs.append(s[self.i + 1:i].replace("\\`", "`"))
        val.append(s[self.i:i + 1])
        self.i = i + 1

    def _word(self) -> _Word:
        s, start = self.s, self.i
        val: list[str] = []
        quoted = False
        while self.i < len(s):
            c = s[self.i]
            nxt = s[self.i + 1] if self.i + 1 < len(s) else ""
            if c in "<>" and nxt == "(" and self.i == start:
                self._paren_subst(val, 2)
            elif c in _WORD_END:
                break
            elif c == "\\":
                if nxt and nxt != "\n":
                    val.append(nxt)
                    quoted = True
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise _ParseError("unterminated single quote")
                val.append(s[self.i + 1:end])
                quoted = True
                self.i = end + 1
            elif c == '"':
                quoted = True
                self._double_quoted(val)
            elif c == "$" and nxt == "(":
                self._paren_subst(val, 2)
            elif c == "$" and nxt == "{":
                end = s.find("}", self.i + 2)
                if end < 0:
                    raise _ParseError("unterminated ${")
                val.append(s[self.i:end + 1])
                self.i = end + 1
            elif c == "`":
                self._backtick(val)
            else:
                val.append(c)
                self.i += 1
        return _Word("".join(val), s[start:self.i], quoted)

    def _double_quoted(self, val: list[str]) -> None:
        s = self.s
        self.i += 1
        while True:
            if self.i >= len(s):
                raise _ParseError("unterminated double quote")
            c = s[self.i]
            nxt = s[self.i + 1] if self.i + 1 < len(s) else ""
            if c == '"':
                self.i += 1
                return
            if c == "\\" and nxt:
                if nxt in '"\\$`':
                    val.append(nxt)
                elif nxt != "\n":
                    val.append(c + nxt)
                self.i += 2
            elif c == "$" and nxt == "(":
                self._paren_subst(val, 2)
            elif c == "`":
                self._backtick(val)
            else:
                val.append(c)
                self.i += 1

    def _redirect(self, fd: str) -> None:
        s = self.s
        op = next(o for o in _REDIRECTS if s.startswith(o, self.i))
        self.i += len(op)
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        if self.i >= len(s) or s[self.i] in "\n;&|()<>":
            raise _ParseError(f"redirection {op!r} without a target")
        target = self._word()
        if op in ("<<", "<<-"):
            self.heredocs.append((target.value, op == "<<-", target.quoted))
        self.cur.redirects.append(_Redirect(op, fd, target))

    def _skip_heredocs(self) -> None:
        """After a newline: skip the bodies of pending here-documents."""
        s = self.s
        for delim, strip_tabs, quoted in self.heredocs:
            body: list[str] = []
            while self.i < len(s):
                end = s.find("\n", self.i)
                end = len(s) if end < 0 else end
                line = s[self.i:end]
                self.i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                body.append(line)
            if not quoted:
                self._scan_expansions("\n".join(body))
        self.heredocs = []

    def _scan_expansions(self, text: str) -> None:
        """Record the substitutions in text that expands like a double-quoted string."""
        sub = _Lexer(text)
        while sub.i < len(text):
            c = text[sub.i]
            if c == "\\":
                sub.i += 2
            elif c == "$" and text.startswith("(", sub.i + 1):
                sub._paren_subst([], 2)
            elif c == "`":
                sub._backtick([])
            else:
                sub.i += 1
        self.subs.extend(sub.subs)


@lru_cache(maxsize=2048)
def _parse(command: str, depth: int = 0) -> _Parsed:
    lexer = _Lexer(command)
    error = None
    try:
        lexer.run()
    except _ParseError as exc:
        error = str(exc)
        lexer._end_part()
    sub_parts: list[_Part] = []
    for body in lexer.subs:
        if depth > 8:
            error = error or "command substitutions nested too deeply"
            break
        inner = _parse(body, depth + 1)
        sub_parts += inner.parts + inner.sub_parts
        error = error or inner.error
    return _Parsed(lexer.parts, sub_parts, bool(lexer.subs), error)


# =========================================================================== bash: commands

_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Assignments that change what an allowed command does; never stripped, so the
# command with them does not match a rule written for the bare command.
_UNSAFE_ENV = re.compile(
    r"(PATH|LD_\w*|DYLD_\w*|BASH_ENV|ENV|IFS|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|NODE_OPTIONS|"
    r"PYTHON(PATH|STARTUP|HOME)|PERL5(OPT|LIB)|RUBY(OPT|LIB)|GIT_\w*|EDITOR|VISUAL|PAGER)="
)
_KEYWORDS = {"!", "{", "if", "then", "else", "elif", "do", "while", "until"}
_CLOSERS = {"fi", "done", "}", "esac"}
_DURATION = re.compile(r"\d+(\.\d+)?[smhd]?")


def _strip_wrapper(words: list[_Word]) -> list[_Word] | None:
    """The command inside one leading wrapper / env assignment / keyword, or None if there is none."""
    if not words:
        return None
    first = words[0]
    if _ENV_ASSIGNMENT.match(first.raw) and not _UNSAFE_ENV.match(first.raw):
        return words[1:]
    name, rest = first.value, words[1:]
    if name in _KEYWORDS and not first.quoted:
        return rest
    i = 0
    if name == "timeout":
        while i < len(rest) and rest[i].value.startswith("-"):
            opt = rest[i].value
            i += 2 if opt in ("-s", "--signal", "-k", "--kill-after") else 1
        if i < len(rest) and _DURATION.fullmatch(rest[i].value):
            i += 1
        else:
            return None
    elif name == "nice":
        if rest and rest[0].value in ("-n", "--adjustment"):
            i = 2
        elif rest and re.fullmatch(r"-n?-?\d+|--adjustment=-?\d+", rest[0].value):
            i = 1
    elif name == "nohup":
        pass
    elif name == "time":
        while i < len(rest) and rest[i].value.startswith("-"):
            opt = rest[i].value
            if opt in ("-p", "-v", "-q", "--verbose", "--quiet", "--portability") or opt.startswith("--format="):
                i += 1
            elif opt in ("-f", "--format"):
                i += 2
            else:  # -o/--output/-a write a file: do not look through this wrapper
                return None
    else:
        return None
    return rest[i:] if i < len(rest) else None


def _command_words(words: list[_Word]) -> list[_Word]:
    """The words of the command proper.

    Strips, repeatedly: leading environment assignments (``FOO=bar cmd``;
    except variables that change what a command runs, such as ``PATH``,
    ``LD_PRELOAD``, ``GIT_*``, ``NODE_OPTIONS``), the wrappers ``timeout``
    (with its options and duration), ``nice`` (``-n N``, ``-N``), ``nohup`` and
    ``time`` (``-p``), and leading shell keywords (``if``, ``then``, ``do``,
    ``!``, ``{``...). A part that is only a closing keyword (``fi``, ``done``,
    ``}``) has no command.
    """
    while True:
        inner = _strip_wrapper(words)
        if inner is None:
            break
        words = inner
    if all(w.value in _CLOSERS and not w.quoted for w in words):
        return []
    return words


@dataclass(frozen=True)
class _Cmd:
    full: str  # the part as written (without redirections), words joined by one space
    bare: str  # the same without wrappers / env assignments
    words: tuple[_Word, ...]  # the bare words
    part: _Part


def _commands(parts: Iterable[_Part]) -> list[_Cmd]:
    out = []
    for p in parts:
        words = _command_words(p.words)
        if not words:
            continue
        out.append(_Cmd(" ".join(w.raw for w in p.words), " ".join(w.raw for w in words), tuple(words), p))
    return out


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

_PROTECTED = (".git", ".mainsail", ".claude")
_PATH_TOOLS = {"Read": "file_path", "Edit": "file_path", "Write": "file_path", "Glob": "path", "Grep": "path"}
_RULE_TOOLS = {"Read": ("Read",), "Glob": ("Read", "Glob"), "Grep": ("Read", "Grep"), "Edit": ("Edit",),
               "Write": ("Edit", "Write"), "Bash": ("Bash",)}
_GLOB_CHARS = re.compile(r"[*?\[]")
_SAFE_DEVICES = {"/dev/null", "/dev/stdout", "/dev/stderr"}


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _expand(path: str, workspace: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    if not os.path.isabs(path):
        path = os.path.join(workspace, path)
    return os.path.realpath(path)


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
def _path_regex(spec: str, workspace: str, home: str) -> re.Pattern[str]:
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
    return bool(_path_regex(specifier, ws, hm).fullmatch(path))


def _protected(path: str, workspace: str, home: str) -> bool:
    if _inside(path, workspace):
        return any(seg in _PROTECTED for seg in os.path.relpath(path, workspace).split(os.sep))
    return bool(home) and any(_inside(path, os.path.join(home, d)) for d in (".mainsail", ".claude"))


def _input_path(tool: str, tool_input: dict, workspace: str, home: str) -> str | None:
    key = _PATH_TOOLS.get(tool)
    if key is None:
        return None
    value = tool_input.get(key)
    if tool in ("Glob", "Grep") and not value:
        value = workspace
    if not isinstance(value, str) or not value:
        return None
    return _expand(value, workspace, home)


# =========================================================================== results

_PROTECTED_TEXT = "a protected path: .git/, .mainsail/ and .claude/ are never auto-approved"


def _from(source: str) -> str:
    return f" (from {source})" if source else ""


def _rule_source(rule: Rule, source: str) -> str:
    return f"rule {rule.raw}" + (f" from {source}" if source else "")


def _deny_by_rule(tool: str, rule: Rule, source: str, what: str = "") -> PermissionResult:
    what = f": `{what}` matches" if what else " by"
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use {tool} was denied{what} the deny rule {rule.raw}{_from(source)}. "
                "Do not retry this call or try to work around the rule; continue without it, "
                "or tell the user what you need and why."),
        source=_rule_source(rule, source), display=f"denied by rule {rule.raw}", rule=rule.raw)


def _ask_by_rule(rule: Rule, source: str) -> PermissionResult:
    return PermissionResult(Decision.ASK, reason=f"matches ask rule {rule.raw}{_from(source)}",
                            source=_rule_source(rule, source), display=f"asks: rule {rule.raw}", rule=rule.raw)


def _allow_by_rule(rule: Rule, source: str) -> PermissionResult:
    return PermissionResult(Decision.ALLOW, source=_rule_source(rule, source),
                            display=f"allowed by rule {rule.raw}", rule=rule.raw)


def _allow_by_mode(mode: PermissionMode) -> PermissionResult:
    return PermissionResult(Decision.ALLOW, source=f"mode {mode.value}", display=f"allowed ({mode.value} mode)")


def _ask(reason: str, source: str, display: str = "") -> PermissionResult:
    return PermissionResult(Decision.ASK, reason=reason, source=source, display=display or reason[:80])


def _ask_by_mode(tool: str, what: str, mode: PermissionMode) -> PermissionResult:
    what = what if len(what) <= 80 else what[:79] + "…"
    return _ask(f"{tool}({what}) needs approval in {mode.value} mode", f"mode {mode.value}",
                f"needs approval ({mode.value} mode)")


def _deny_plan(tool: str) -> PermissionResult:
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use {tool} was denied: the session is in plan mode, which is read-only. "
                "Do not make changes or run commands that change anything; explore with read-only tools "
                "and present your plan instead. The user will leave plan mode to carry it out."),
        source="mode plan", display="denied: plan mode (read-only)")


def _dont_ask(tool: str, asked: PermissionResult) -> PermissionResult:
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use {tool} was denied: this session does not ask for permission "
                f"(dontAsk mode) and only pre-approved tools run; this call needs approval "
                f"({asked.reason}). Do not retry it; continue without it, or tell the user which "
                "permission rule would allow it."),
        source="mode dontAsk" + (f" ({asked.source})" if asked.source else ""),
        display="denied: not pre-approved (dontAsk mode)")


# =========================================================================== evaluate

_Compiled = dict[str, list[tuple[Rule, str]]]


def _compile(rules: RuleSet) -> _Compiled:
    """Rules by kind, parsed. A rule that does not parse never matches (the loader rejects them)."""
    out: _Compiled = {}
    for kind in ("deny", "ask", "allow"):
        out[kind] = []
        for spec in getattr(rules, kind):
            try:
                out[kind].append((parse_rule(spec.rule), spec.source))
            except RuleSyntaxError:
                continue
    return out


def evaluate(tool_name: str, tool_input: dict, *, mode: PermissionMode, rules: RuleSet, workspace: str,
             home: str, read_only: bool) -> PermissionResult:
    """Allow, deny or ask for one tool call.

    Deny rules first, then ask rules, then allow rules (compound Bash commands
    part by part); only when no rule matches does the mode decide:

    * ``default``: read-only tools run, everything else asks;
    * ``acceptEdits``: read-only tools, Edit/Write inside the workspace, and
      Bash commands that are only ``mkdir``/``touch``/``mv``/``cp`` on paths
      inside the workspace run; the rest asks;
    * ``plan``: read-only tools run, everything else is denied;
    * ``dontAsk``: like default, but every ask (from a rule too) is a deny;
    * ``bypassPermissions``: everything runs except what a deny rule names
      (ask rules, protected paths, substitutions are not asked about).

    Writes into ``.git/``, ``.mainsail/``, ``.claude/`` (in the workspace) and
    ``~/.mainsail``, ``~/.claude`` ask even when a rule or the mode allows them.
    """
    mode = PermissionMode(mode)
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    ws = os.path.realpath(workspace)
    hm = os.path.realpath(home) if home else ""
    compiled = _compile(rules)
    if tool_name == "Bash":
        result = _evaluate_bash(tool_input, mode, compiled, ws, hm)
    else:
        result = _evaluate_tool(tool_name, tool_input, mode, compiled, ws, hm, read_only)
    if mode is PermissionMode.DONT_ASK and result.decision is Decision.ASK:
        return _dont_ask(tool_name, result)
    return result


def _evaluate_tool(tool: str, tool_input: dict, mode: PermissionMode, compiled: _Compiled, ws: str, hm: str,
                   read_only: bool) -> PermissionResult:
    names = _RULE_TOOLS.get(tool, (tool,))
    path = _input_path(tool, tool_input, ws, hm)

    def first(kind: str) -> tuple[Rule, str] | None:
        for rule, source in compiled[kind]:
            if rule.tool not in names:
                continue
            if rule.specifier is None:
                return rule, source
            if path and tool in _PATH_TOOLS and _path_regex(rule.specifier, ws, hm or ws).fullmatch(path):
                return rule, source
        return None

    if hit := first("deny"):
        return _deny_by_rule(tool, *hit)
    if mode is PermissionMode.BYPASS:
        return _allow_by_mode(mode)
    if hit := first("ask"):
        return _ask_by_rule(*hit)
    if hit := first("allow"):
        result = _allow_by_rule(*hit)
    elif read_only:
        result = _allow_by_mode(mode)
    elif mode is PermissionMode.PLAN:
        return _deny_plan(tool)
    elif mode is PermissionMode.ACCEPT_EDITS and tool in ("Edit", "Write") and path and _inside(path, ws):
        result = _allow_by_mode(mode)
    else:
        return _ask_by_mode(tool, summary(tool, tool_input), mode)
    if tool in ("Edit", "Write") and path and _protected(path, ws, hm):
        shown = os.path.relpath(path, ws) if _inside(path, ws) else path
        return _ask(f"writing to {shown} ({_PROTECTED_TEXT})", result.source + "; protected path",
                    f"protected path {shown}")
    return result


def _changes_dir(words: list[_Word]) -> bool:
    return bool(words) and words[0].value in ("cd", "pushd", "popd")


def redirects_output(command: str) -> bool:
    """Whether ``command`` writes through an output redirection (other than to /dev/null and the like),
    or cannot be parsed well enough to tell."""
    parsed = _parse(command)
    if parsed.error or parsed.substitution:
        return True
    for part in list(parsed.parts) + list(parsed.sub_parts):
        for r in part.redirects:
            if r.op not in (">", ">>", ">|", "&>", "&>>", "<>", ">&"):
                continue
            target = r.target.value
            if r.op == ">&" and (target.isdigit() or target == "-"):
                continue
            if target not in _SAFE_DEVICES:
                return True
    return False


def _redirect_problem(parts: list[_Part], ws: str, hm: str) -> str | None:
    """Why an output redirection of these (top-level, in order) parts needs approval, or None."""
    cwd_known = True
    for part in parts:
        for r in part.redirects:
            if r.op not in (">", ">>", ">|", "&>", "&>>", "<>", ">&"):
                continue
            target = r.target.value
            if r.op == ">&" and (target.isdigit() or target == "-"):
                continue  # 2>&1: fd duplication
            if "$" in target or "`" in target:
                return f"output redirection to {target} (cannot be resolved) needs approval"
            if target in _SAFE_DEVICES:
                continue
            if not cwd_known and not (os.path.isabs(target) or target.startswith("~")):
                return f"output redirection to {target} after cd needs approval"
            path = _expand(target, ws, hm or ws)
            if not _inside(path, ws):
                return f"output redirection to {target} (outside the workspace) needs approval"
            if _protected(path, ws, hm):
                return f"output redirection to {target} ({_PROTECTED_TEXT}) needs approval"
        if _changes_dir(_command_words(part.words)):
            cwd_known = False
    return None


_FILE_COMMANDS = {"mkdir", "touch", "mv", "cp"}


def _is_file_command(cmd: _Cmd, ws: str, hm: str, cwd_known: bool) -> bool:
    """acceptEdits: ``mkdir``/``touch``/``mv``/``cp`` whose path arguments are all inside the workspace."""
    if cmd.words[0].value not in _FILE_COMMANDS:
        return False
    options_done = False
    for w in cmd.words[1:]:
        arg = w.value
        if not options_done and arg == "--":
            options_done = True
            continue
        if not options_done and arg.startswith("-"):
            if arg.startswith("--") and "=" in arg:
                arg = arg.split("=", 1)[1]
            elif arg.startswith("-t") and len(arg) > 2:
                arg = arg[2:]
            else:
                continue
        if "$" in arg or "`" in arg:
            return False
        if not cwd_known and not os.path.isabs(arg):
            return False
        path = _expand(arg, ws, hm or ws)
        if not _inside(path, ws) or _protected(path, ws, hm):
            return False
    return True


def _evaluate_bash(tool_input: dict, mode: PermissionMode, compiled: _Compiled, ws: str,
                   hm: str) -> PermissionResult:
    command = tool_input.get("command")
    command = command if isinstance(command, str) else ""
    parsed = _parse(command)
    top = _commands(parsed.parts)
    every = top + _commands(parsed.sub_parts)

    def first(kind: str, cmd: _Cmd) -> tuple[Rule, str] | None:
        for rule, source in compiled[kind]:
            if rule.tool == "Bash" and (bash_matches(rule.specifier, cmd.bare)
                                        or bash_matches(rule.specifier, cmd.full)):
                return rule, source
        return None

    for cmd in every:
        if hit := first("deny", cmd):
            return _deny_by_rule("Bash", *hit, what=cmd.bare if len(every) > 1 else "")
    if not every:  # an empty command: no part can match a rule with a specifier
        for rule, source in compiled["deny"]:
            if rule.tool == "Bash" and rule.specifier is None:
                return _deny_by_rule("Bash", rule, source)
    if mode is PermissionMode.BYPASS:
        return _allow_by_mode(mode)
    for cmd in every:
        if hit := first("ask", cmd):
            return _ask_by_rule(*hit)
    allowed = [(cmd, first("allow", cmd)) for cmd in every]
    unmatched = [cmd for cmd, hit in allowed if hit is None]
    if not every:
        hit = next(((r, s) for r, s in compiled["allow"] if r.tool == "Bash" and r.specifier is None), None)
        allowed = [(None, hit)]
        if hit is None:
            unmatched = [None]
    if unmatched and mode is PermissionMode.PLAN:
        return _deny_plan("Bash")
    if parsed.error:
        return _ask(f"the command could not be parsed ({parsed.error}); it needs approval", "bash: unparsed",
                    "unparsed command")
    if parsed.substitution:
        return _ask("command substitution needs approval", "bash: command substitution",
                    "command substitution")
    if problem := _redirect_problem(parsed.parts, ws, hm):
        return _ask(problem, "bash: output redirection", problem.replace(" needs approval", ""))
    if unmatched:
        if mode is PermissionMode.ACCEPT_EDITS and all(unmatched):
            cwd_known = True
            ok = True
            for cmd in top:
                if cmd in unmatched and not _is_file_command(cmd, ws, hm, cwd_known):
                    ok = False
                    break
                if _changes_dir(list(cmd.words)):
                    cwd_known = False
            if ok:
                return _allow_by_mode(mode)
        what = unmatched[0].bare if unmatched[0] is not None else command.strip()
        return _ask_by_mode("Bash", what, mode)
    hits = [hit for _, hit in allowed if hit is not None]
    rule, source = hits[0]
    if len({h[0].raw for h in hits}) == 1:
        return _allow_by_rule(rule, source)
    names = ", ".join(dict.fromkeys(_rule_source(*h) for h in hits))
    return PermissionResult(Decision.ALLOW, source=names, display=f"allowed by rules ({len(hits)} parts)",
                            rule=rule.raw)


# =========================================================================== always / summary


def always_rules(tool_name: str, tool_input: dict) -> list[str]:
    """The session rules an "(a)lways" answer adds so the same call no longer asks.

    Bash: one ``Bash(<prefix>:*)`` per part of a compound command, the prefix
    being the command's first word (wrappers and env assignments stripped)
    plus its second word unless that starts with ``-`` (``git diff HEAD`` →
    ``Bash(git diff:*)``, ``ls -la`` → ``Bash(ls:*)``). An unparsable command
    gives no rule. Edit and Write: ``Edit``. Any other tool: its name.
    """
    if tool_name in ("Edit", "Write"):
        return ["Edit"]
    if tool_name != "Bash":
        return [tool_name]
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        return []
    parsed = _parse(command)
    if parsed.error:
        return []
    out: list[str] = []
    for cmd in _commands(parsed.parts):
        words = [cmd.words[0].raw]
        if len(cmd.words) > 1 and not cmd.words[1].value.startswith("-"):
            words.append(cmd.words[1].raw)
        rule = f"Bash({' '.join(words)}:*)"
        try:
            parse_rule(rule)
        except RuleSyntaxError:
            continue
        if rule not in out:
            out.append(rule)
    return out


def _cut(text: str, n: int = 100) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def summary(tool_name: str, tool_input: dict) -> str:
    """One line for a prompt such as ``⚡ Bash: npm test``."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    if tool_name == "Bash":
        command = str(tool_input.get("command", "")).strip()
        lines = command.splitlines()
        first = lines[0] if lines else ""
        return _cut(first + (" …" if len(lines) > 1 else ""))
    if tool_name in ("Read", "Edit", "Write"):
        return str(tool_input.get("file_path", ""))
    if tool_name in ("Glob", "Grep"):
        text = str(tool_input.get("pattern", ""))
        if tool_input.get("path"):
            text += f" in {tool_input['path']}"
        return _cut(text)
    try:
        text = json.dumps(tool_input, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = str(tool_input)
    return _cut(text)
