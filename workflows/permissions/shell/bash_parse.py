"""Shell commands as the tree-sitter-bash grammar parses them, reduced to what the checker understands.

:func:`parse` walks the concrete syntax tree with an explicit allow-list of
node types: lists (``;`` ``&&`` ``||`` ``&`` newlines), pipelines, simple
commands with literal words (unquoted, ``'…'``, ``"…"`` without expansions),
redirections, and here-documents whose body cannot
expand. Every other construct (substitutions, ``${…}`` operators, arithmetic,
subshells, groups, functions, control flow, declarations, a parse error, a
control character) is recorded as a *problem*: the checker never approves a
command with a problem, in any mode but bypass. The walk still descends into
those constructs and collects the simple commands inside them, so deny rules
see ``rm`` in ``echo $(rm x)`` or ``if true; then rm x; fi``.

Before the grammar, bash's line continuations are removed as bash removes them
(:mod:`~workflows.permissions.shell.bash_splice`); after it, a second parser must
find the same commands (:mod:`~workflows.permissions.shell.bash_vote`), or the line
has a problem.

Word values are computed from the grammar's nodes with bash's quote-removal
rules (backslash escapes, single quotes, the four escapes of double quotes);
anything bash would expand (an unescaped ``$`` or backtick, a glob character,
a brace, a leading ``~``) is flagged, never guessed.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from workflows.permissions.shell.bash_model import Command, Parsed, Redirect, Word
from workflows.permissions.shell.bash_splice import splice
from workflows.permissions.shell.bash_vote import vote

if TYPE_CHECKING:  # (the grammar loads with the first parse, not with every command that imports the checker)
    from tree_sitter import Node, Parser

__all__ = ["Command", "Parsed", "Redirect", "Word", "parse"]

MAX_COMMAND_CHARS = 100_000
MAX_DEPTH = 64

_local = threading.local()

# Characters bash reads as something other than text when unquoted.
_GLOB = set("*?[")
_BRACE = set("{}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")  # and lone surrogates
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: An argument that looks like an assignment with a ``~`` right after its ``=`` or after a ``:`` (bash
#: expands those, quoted or not around it: this errs on the side of a problem).
_ASSIGNMENT_TILDE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=(?:.*:)?~", re.S)
_SEPARATORS = {";", "&", "&&", "||", "|", "|&", "\n"}
_LIST_NODES = {"program", "list", "pipeline"}

#: What each construct the checker does not approve is called in a message.
_NAMES = {
    "command_substitution": "command substitution",
    "process_substitution": "process substitution",
    "arithmetic_expansion": "arithmetic expansion",
    "expansion": "parameter expansion",
    "ansi_c_string": "an ANSI-C quoted string ($'…')",
    "translated_string": "a translated string ($\"…\")",
    "brace_expression": "brace expansion",
    "subshell": "a subshell ( … )",
    "compound_statement": "a group { … } or arithmetic (( … ))",
    "function_definition": "a function definition",
    "if_statement": "an if statement",
    "for_statement": "a for loop",
    "c_style_for_statement": "a for loop",
    "while_statement": "a while loop",
    "case_statement": "a case statement",
    "test_command": "a test [ … ] / [[ … ]]",
    "negated_command": "a negated command (!)",
    "declaration_command": "a declaration (export/declare/local/readonly/typeset)",
    "unset_command": "unset",
    "variable_assignment": "a variable assignment on its own",
    "ERROR": "a syntax error",
}


@dataclass
class _Walk:
    source: bytes
    commands: list[Command] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def text(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", errors="replace")

    def problem(self, what: str, node: Node | None = None) -> None:
        shown = ""
        if node is not None:
            text = " ".join(self.text(node).split())
            shown = f" `{text[:60]}{'…' if len(text) > 60 else ''}`"
        entry = what + shown
        if entry not in self.problems:
            self.problems.append(entry)


def _parser() -> Parser:
    p = getattr(_local, "parser", None)
    if p is None:
        p = _local.parser = _new_parser()
    return p


@lru_cache(maxsize=1)
def _language():
    import tree_sitter_bash
    from tree_sitter import Language

    return Language(tree_sitter_bash.language())


def _new_parser() -> Parser:
    from tree_sitter import Parser

    return Parser(_language())


@lru_cache(maxsize=2048)
def parse(command: str) -> Parsed:
    """Parse one Bash tool ``command``. Never raises: whatever is not understood is a problem."""
    if not isinstance(command, str):
        return Parsed((), ("a command that is not text",))
    if len(command) > MAX_COMMAND_CHARS:
        return Parsed((), (f"a command of {len(command):,} characters (too long to check)",))
    if m := _CONTROL.search(command):
        return Parsed((), (f"a control character ({m.group()!r}) in the command",))
    source = splice(command).encode("utf-8", errors="surrogatepass")
    try:
        tree = _parser().parse(source)
    except Exception as exc:  # the grammar failed: nothing is understood
        return Parsed((), (f"a command the bash grammar could not parse ({type(exc).__name__})",))
    walk = _Walk(source)
    root = tree.root_node
    if root.has_error:
        walk.problem("a syntax error (or a construct the bash grammar reads differently)")
    _statement_list(walk, root, top=True, depth=0)
    if differs := vote(command, tuple(walk.commands), approved=not walk.problems):
        walk.problems.append(differs)
    return Parsed(tuple(walk.commands), tuple(walk.problems))


# =========================================================================== statements


def _statement_list(walk: _Walk, node: Node, *, top: bool, depth: int) -> None:
    for child in node.children:
        if not child.is_named:
            if child.type not in _SEPARATORS:
                walk.problem(f"the operator {child.type!r}", child)
            continue
        if child.type == "comment":
            _comment(walk, child)
        else:
            _statement(walk, child, top=top, depth=depth)


def _comment(walk: _Walk, node: Node) -> None:
    """Bash starts a comment only at the start of a word; anywhere else the grammar and bash disagree."""
    before = walk.source[node.start_byte - 1:node.start_byte] if node.start_byte else b"\n"
    if before not in (b" ", b"\t", b"\n", b";", b"&", b"|", b"(", b")"):
        walk.problem("a '#' the grammar reads as a comment", node)


def _statement(walk: _Walk, node: Node, *, top: bool, depth: int) -> None:
    if depth > MAX_DEPTH:
        walk.problem("constructs nested too deeply")
        return
    kind = node.type
    if kind in _LIST_NODES:
        _statement_list(walk, node, top=top, depth=depth + 1)
    elif kind == "command":
        walk.commands.append(_command(walk, node, (), top=top, depth=depth))
    elif kind == "redirected_statement":
        _redirected(walk, node, top=top, depth=depth)
    else:
        walk.problem(_NAMES.get(kind, f"a {kind.replace('_', ' ')}"), node)
        _nested(walk, node, depth + 1)


def _redirected(walk: _Walk, node: Node, *, top: bool, depth: int) -> None:
    body = node.child_by_field_name("body")
    redirects = []
    heredocs = 0
    for i, child in enumerate(node.children):
        if node.field_name_for_child(i) != "redirect":
            continue
        if child.type == "heredoc_redirect":
            heredocs += 1
        redirects.extend(_redirect(walk, child, depth))
    if heredocs > 1:
        walk.problem("several here-documents on one command", node)
    if body is not None and body.type == "command":
        walk.commands.append(_command(walk, body, tuple(redirects), top=top, depth=depth))
    else:
        walk.problem("a redirection of a compound command", node)
        if redirects:  # `{ cat; } < .env`: no words, but Read/Edit deny rules must see the targets
            walk.commands.append(Command((), (), tuple(redirects), walk.text(node), top=False))
        if body is not None:
            _nested(walk, body, depth + 1)


def _collect(walk: _Walk, node: Node, depth: int) -> None:
    """Collect ``node`` itself if it is a command, else the commands under it (for deny rules)."""
    if node.type == "command":
        walk.commands.append(_command(walk, node, (), top=False, depth=depth))
    elif node.type == "redirected_statement":
        _redirected(walk, node, top=False, depth=depth)
    else:
        _nested(walk, node, depth)


def _nested(walk: _Walk, node: Node, depth: int) -> None:
    """Collect the simple commands anywhere under ``node`` (for deny rules); approve nothing."""
    if depth > MAX_DEPTH:
        walk.problem("constructs nested too deeply")
        return
    for child in node.named_children:
        _collect(walk, child, depth + 1)


# =========================================================================== commands


def _command(walk: _Walk, node: Node, redirects: tuple[Redirect, ...], *, top: bool, depth: int) -> Command:
    words: list[Word] = []
    assignments: list[tuple[str, Word]] = []
    extra: list[Redirect] = []
    for i, child in enumerate(node.children):
        fieldname = node.field_name_for_child(i)
        if child.type == "variable_assignment" and not words:
            assignments.append(_assignment(walk, child, depth))
        elif fieldname == "redirect":
            extra.extend(_redirect(walk, child, depth))
        elif fieldname == "name":
            inner = child.named_children
            words.append(_word(walk, inner[0], depth) if len(inner) == 1 else _word(walk, child, depth))
        elif fieldname == "argument" or child.is_named:
            words.append(_word(walk, child, depth))
        else:
            walk.problem(f"the token {child.type!r}", child)
    for w in words[1:]:
        if _ASSIGNMENT_TILDE.match(w.raw):  # bash expands it there: `dd of=~/x` writes to the home
            walk.problem("a ~ after = in an argument (bash expands it)", node)
    if not words:
        walk.problem("a command without a name", node)
    elif not words[0].literal:
        walk.problem("a command name that is not plain text", node)
    return Command(tuple(words), tuple(assignments), redirects + tuple(extra), walk.text(node), top)


def _assignment(walk: _Walk, node: Node, depth: int) -> tuple[str, Word]:
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    op = next((c.type for c in node.children if not c.is_named), "=")
    if name is None or name.type != "variable_name" or op != "=":
        walk.problem("an assignment the checker does not read", node)
    word = _word(walk, value, depth) if value is not None else Word("", "")
    return (walk.text(name) if name is not None else "", word)


# =========================================================================== redirections


def _redirect(walk: _Walk, node: Node, depth: int) -> list[Redirect]:
    fd_node = node.child_by_field_name("descriptor")
    fd = walk.text(fd_node) if fd_node is not None else None
    op = next((c.type for c in node.children if not c.is_named), "")
    if node.type == "file_redirect":
        targets = [node.children[i] for i in range(node.child_count) if node.field_name_for_child(i) == "destination"]
        if op == "<&-" or op == ">&-":
            return [Redirect(op, fd, Word("-", "-"))]
        if len(targets) != 1:
            walk.problem("a redirection followed by more words (write arguments before redirections)", node)
            words = tuple(_word(walk, t, depth) for t in targets)
            return [Redirect(op, fd, words[0] if words else None, extra=words[1:])]
        return [Redirect(op, fd, _word(walk, targets[0], depth))]
    if node.type == "herestring_redirect":
        target = node.named_children[-1] if node.named_children else None
        word = _word(walk, target, depth) if target is not None else Word("", "")
        if not word.literal:
            walk.problem("a here-string that expands", node)
        return [Redirect("<<<", fd, word)]
    if node.type == "heredoc_redirect":
        return _heredoc(walk, node, depth)
    walk.problem(f"a {node.type.replace('_', ' ')}", node)
    return []


def _heredoc(walk: _Walk, node: Node, depth: int) -> list[Redirect]:
    """A here-document: approved only with a plain delimiter, a body that cannot expand, and an end
    line that bash would see exactly where the grammar saw it."""
    out: list[Redirect] = []
    start = end = body = None
    op = next((c.type for c in node.children if not c.is_named), "<<")
    for child in node.named_children:
        if child.type == "heredoc_start":
            start = child
        elif child.type == "heredoc_end":
            end = child
        elif child.type == "heredoc_body":
            body = child
        elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
            out.extend(_redirect(walk, child, depth))
        else:
            walk.problem("a here-document with a command after its delimiter", child)
            _collect(walk, child, depth + 1)
    if start is None or end is None:
        walk.problem("a here-document without an end", node)
        return out
    raw = walk.text(start)
    quoted = len(raw) > 2 and raw[0] == raw[-1] and raw[0] in "'\""
    delim = raw[1:-1] if quoted else raw
    if not _IDENT.fullmatch(delim):
        walk.problem("a here-document delimiter that is not a plain word", start)
    elif not _heredoc_lines_agree(walk, start, end, delim, strip_tabs=op == "<<-"):
        walk.problem("a here-document whose end bash may read differently", node)
    if body is not None:
        if not quoted and re.search(r"[$`\\]", walk.text(body)):
            walk.problem("a here-document that expands ($, ` or \\ with an unquoted delimiter)", node)
        _nested(walk, body, depth + 1)  # substitutions in an expanding body run: deny rules must see them
    out.insert(0, Redirect(op, None, None, quoted_heredoc=quoted))
    return out


def _heredoc_lines_agree(walk: _Walk, start: Node, end: Node, delim: str, *, strip_tabs: bool) -> bool:
    """Bash ends a here-document at the first line that is exactly the delimiter (tabs stripped
    for ``<<-``): check that this is the line the grammar ended it on."""
    src = walk.source
    first = src.find(b"\n", start.end_byte)
    if first < 0 or end.start_byte <= first:
        return False
    line_start = src.rfind(b"\n", 0, end.start_byte) + 1
    line_end = src.find(b"\n", end.end_byte)
    line_end = len(src) if line_end < 0 else line_end
    lines = src[first + 1:line_end].decode("utf-8", errors="replace").split("\n")
    if line_start != first + 1 + sum(len(x.encode()) + 1 for x in lines[:-1]):
        return False
    for i, line in enumerate(lines):
        if (line.lstrip("\t") if strip_tabs else line) == delim:
            return i == len(lines) - 1
    return False


# =========================================================================== words


def _word(walk: _Walk, node: Node, depth: int) -> Word:
    """The word ``node`` is; anything bash would expand (but a glob, a brace or a tilde) is a problem."""
    raw = walk.text(node)
    kind = node.type
    if kind in ("word", "number"):
        word = _unquoted(raw)
        if word.value is None:
            walk.problem("an expansion ($ or `)", node)
        return word
    if kind == "raw_string":
        return Word(raw, raw[1:-1])
    if kind == "string":
        return _double_quoted(walk, node, raw, depth)
    if kind == "concatenation":
        parts = [_word(walk, c, depth) for c in node.children]
        value = None if any(p.value is None for p in parts) else "".join(p.value or "" for p in parts)
        return Word(raw, value, glob=any(p.glob for p in parts), brace=any(p.brace for p in parts),
                    tilde=bool(parts) and parts[0].tilde)
    if kind == "simple_expansion" or (kind == "expansion" and _plain_expansion(node)):
        walk.problem("a variable expansion", node)
        return Word(raw, None)
    walk.problem(_NAMES.get(kind, f"a {kind.replace('_', ' ')}"), node)
    _nested(walk, node, depth + 1)
    return Word(raw, None)


def _plain_expansion(node: Node) -> bool:
    """``${NAME}`` with no operator."""
    kids = node.children
    return (len(kids) == 3 and kids[0].type == "${" and kids[1].type == "variable_name" and kids[2].type == "}")


def _unquoted(raw: str) -> Word:
    """Quote removal of an unquoted word: ``\\x`` is ``x``; an unescaped ``$`` or backtick expands."""
    out: list[str] = []
    glob = brace = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            if i + 1 < len(raw) and raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        if c in "$`":
            return Word(raw, None)
        glob = glob or c in _GLOB
        brace = brace or c in _BRACE
        out.append(c)
        i += 1
    return Word(raw, "".join(out), glob=glob, brace=brace, tilde=raw.startswith("~"))


def _double_quoted(walk: _Walk, node: Node, raw: str, depth: int) -> Word:
    out: list[str] = []
    literal = True
    for child in node.named_children:
        if child.type != "string_content":
            _word(walk, child, depth)  # records the problem, collects nested commands
            literal = False
            continue
        text = walk.text(child)
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`\n':
                if text[i + 1] != "\n":
                    out.append(text[i + 1])
                i += 2
                continue
            if c in "$`":
                walk.problem("an expansion ($ or `) in a double-quoted string", node)
                literal = False
            out.append(c)
            i += 1
    return Word(raw, "".join(out) if literal else None)
