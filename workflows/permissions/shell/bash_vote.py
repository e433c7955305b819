"""A second, independent shell parser that must agree with the first.

tree-sitter-bash is a grammar for editors: where it reads a line differently
from bash, the checker approves one thing and bash runs another (issue 25:
``ls\\<newline>#;touch x``). :func:`vote` parses the original command again
with mvdan/sh (``shfmt --to-json -ln bash``, a separate parser written from
bash's behaviour, shipped by the ``shfmt-py`` package) and compares the simple
commands both found: their words (the literal value after quote removal, or
"not literal"), their ``NAME=value`` assignments and their redirections. Where
they differ, the line gets a *problem*: it is never approved automatically,
and any Bash deny rule denies it (the command that runs is unknown). shfmt
missing, failing or slow is a problem too (fail closed), with the fix.

On a line the first parser already rejects (a problem of its own), only the
words are compared, one way: every command shfmt finds must be among those
tree-sitter found, so the deny rules see every command that may run (but a
``[ … ]`` test and a bare assignment, which tree-sitter reports as problems of
their own).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workflows.permissions.shell.bash_model import Command

__all__ = ["DISAGREE", "UNCHECKED", "shfmt_path", "vote"]

TIMEOUT = 10.0
#: The start of every problem :func:`vote` reports (deny rules treat them as "unknowable").
DISAGREE = "a command the two shell parsers read differently"
UNCHECKED = "a command the second shell parser (shfmt) could not check"
FIX = ("shfmt comes with Mainsail's Python dependencies (the shfmt-py package): reinstall Mainsail, or "
       "pip install shfmt-py in its environment")
NOT_LITERAL = None

#: shfmt node types the first parser reports as a problem (so they must not appear on a line it approved).
_CONSTRUCTS = {"Subshell", "Block", "IfClause", "WhileClause", "ForClause", "CaseClause", "FuncDecl",
               "ArithmCmd", "TestClause", "DeclClause", "LetClause", "CoprocClause", "TestDecl", "CmdSubst",
               "ParamExp", "ArithmExp", "ProcSubst", "ExtGlob", "BraceExp"}
_SKIP = {"Pos", "End", "ValuePos", "ValueEnd", "Position", "Semicolon", "OpPos", "Left", "Right"}

Sig = tuple  # (assignments, words, redirects), each a tuple of hashable parts


def shfmt_path() -> str | None:
    """The shfmt next to this Python (the shfmt-py package installs it there), else the one on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "shfmt")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("shfmt")


def vote(command: str, commands: tuple[Command, ...], approved: bool) -> str | None:
    """The problem with ``command`` if shfmt reads it differently from ``commands`` (tree-sitter's), else None.

    ``approved``: the first parser found no problem (then everything must agree exactly).
    """
    theirs: list[Sig] = []
    constructs: list[str] = []
    try:
        tree = _shfmt(command)
        if isinstance(tree, str):
            return tree
        _walk(tree, theirs, constructs)
    except RecursionError:
        return f"{UNCHECKED}: it is nested too deeply"
    ours = [_ours(c) for c in commands]
    if approved:
        if constructs:
            return f"{DISAGREE}: shfmt reads {constructs[0]} in it"
        extra, missing = Counter(theirs) - Counter(ours), Counter(ours) - Counter(theirs)
    else:  # only: does tree-sitter know every command shfmt found?
        extra = Counter(s[1] for s in theirs if s[1] and s[1][:1] != ("[",)) - Counter(s[1] for s in ours)
        missing = Counter()
    if extra:
        sig = next(iter(extra))
        if approved and any(o[1] == sig[1] for o in ours):
            return f"{DISAGREE}: they read the redirections or assignments of {_show(sig, True)} differently"
        return f"{DISAGREE}: shfmt finds {_show(sig, approved)}, tree-sitter-bash does not"
    if missing:
        return f"{DISAGREE}: tree-sitter-bash finds {_show(next(iter(missing)), approved)}, shfmt does not"
    return None


def _show(sig: tuple, whole: bool) -> str:
    words = sig[1] if whole else sig
    text = " ".join("…" if w is NOT_LITERAL else w for w in words)
    return f"`{text[:60]}`" if words else "a command without words"


def _shfmt(command: str) -> dict | str:
    """shfmt's syntax tree of ``command`` (JSON), or the problem."""
    path = shfmt_path()
    if path is None:
        return f"{UNCHECKED}: shfmt is not installed ({FIX})"
    try:
        proc = subprocess.run([path, "--to-json", "-ln", "bash"], input=command.encode("utf-8", "surrogatepass"),
                              capture_output=True, timeout=TIMEOUT, cwd="/", env={})
    except subprocess.TimeoutExpired:
        return f"{UNCHECKED}: shfmt did not answer within {TIMEOUT:g}s"
    except OSError as exc:
        return f"{UNCHECKED}: shfmt at {path} could not be run ({exc.strerror or exc}; {FIX})"
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{DISAGREE}: shfmt cannot parse it ({why[-1][:80] if why else f'exit {proc.returncode}'})"
    import json

    try:
        return json.loads(proc.stdout)
    except ValueError:
        return f"{UNCHECKED}: shfmt printed something that is not JSON ({FIX})"


# =========================================================================== shfmt's tree


def _walk(node: object, out: list[Sig], constructs: list[str]) -> None:
    """Every simple command under ``node`` (with the redirections of its statement), and the constructs."""
    if isinstance(node, list):
        for x in node:
            _walk(x, out, constructs)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("Type")
    if kind in _CONSTRUCTS or (kind in ("SglQuoted", "DblQuoted") and node.get("Dollar")):
        constructs.append(kind)
    if "Cmd" in node:  # a statement
        if node.get("Negated") or node.get("Coprocess"):
            constructs.append("a negated command (!)" if node.get("Negated") else "coproc")
        cmd, redirs, prefix = node.get("Cmd"), node.get("Redirs") or [], ()
        while isinstance(cmd, dict) and cmd.get("Type") == "TimeClause" and isinstance(cmd.get("Stmt"), dict):
            prefix += ("time", "-p") if cmd.get("PosixFormat") else ("time",)
            inner = cmd["Stmt"]
            cmd, redirs = inner.get("Cmd"), (inner.get("Redirs") or []) + redirs
        if cmd is None or (isinstance(cmd, dict) and cmd.get("Type") == "CallExpr"):
            cmd = cmd or {}
            assigns = tuple((a.get("Name", {}).get("Value", ""), _assign_value(a)) for a in cmd.get("Assigns") or [])
            words = prefix + tuple(_value(w) for w in cmd.get("Args") or [])
            out.append((assigns, words, tuple(sorted(_redirect(r) for r in redirs))))
            _walk([cmd.get("Assigns"), cmd.get("Args"), redirs], out, constructs)
            return
    for key, value in node.items():
        if key not in _SKIP:
            _walk(value, out, constructs)


def _assign_value(a: dict) -> str | None:
    if a.get("Append") or a.get("Naked") or a.get("Index") or a.get("Array"):
        return NOT_LITERAL
    return _value(a["Value"]) if a.get("Value") else ""


def _redirect(redir: dict) -> tuple:
    op = redir.get("Op", "")
    fd = (redir.get("N") or {}).get("Value")
    word = redir.get("Word") or {}
    if op in ("<<", "<<-"):
        quoted = any(p.get("Type") != "Lit" or "\\" in p.get("Value", "") for p in word.get("Parts") or [])
        return (op, fd or "", "'" if quoted else "")
    return (op, fd or "", _value(word) or "")


def _value(word: dict) -> str | None:
    """A word's value after quote removal, or NOT_LITERAL if bash expands any part of it."""
    out: list[str] = []
    for part in word.get("Parts") or []:
        kind = part.get("Type")
        if kind == "Lit":
            out.append(_unescape(part.get("Value", ""), "any"))
        elif kind == "SglQuoted" and not part.get("Dollar"):
            out.append(part.get("Value", ""))
        elif kind == "DblQuoted" and not part.get("Dollar"):
            for inner in part.get("Parts") or []:
                if inner.get("Type") != "Lit":
                    return NOT_LITERAL
                out.append(_unescape(inner.get("Value", ""), '$`"\\\n'))
        else:
            return NOT_LITERAL
    return "".join(out)


def _unescape(text: str, escapable: str) -> str:
    """Remove the backslashes bash removes (``any`` unquoted; in double quotes before ``escapable``)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and (escapable == "any" or text[i + 1] in escapable):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


# =========================================================================== tree-sitter's side


def _ours(cmd: Command) -> Sig:
    assigns = tuple((name, w.value) for name, w in cmd.assignments)
    words = tuple(w.value for w in cmd.words)
    redirects = []
    for r in cmd.redirects:
        if r.target is None:
            redirects.append((r.op, r.fd or "", "'" if r.quoted_heredoc else ""))
        elif r.op in (">&-", "<&-"):
            redirects.append((r.op[:2], r.fd or "", "-"))
        else:
            redirects.append((r.op, r.fd or "", r.target.value or ""))
    return (assigns, words, tuple(sorted(redirects)))
