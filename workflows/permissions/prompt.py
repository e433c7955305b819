"""What a person is shown when a call asks, and what "(a)lways" adds.

:func:`always_rules` is computed once, when the request is made, stored with
the request and shown in the prompt, so the rules added are exactly the rules
the person saw. A command the checker does not fully understand gets none:
"(a)lways" is then not offered (:func:`always_offered`, which every surface asks: the CLI's
prompt, the console's buttons, and the engine, which refuses such an answer).
"""

from __future__ import annotations

import json
import re

from workflows.permissions.rules.hosts import host_of
from workflows.permissions.rules.rules import EDIT_TOOLS, RuleSyntaxError, parse_rule
from workflows.permissions.shell import commands
from workflows.permissions.shell.bash_parse import parse

__all__ = ["always_offered", "always_rules", "answer_choices", "prompt_text", "summary", "visible"]

_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9_:-]*")


def always_rules(tool_name: str, tool_input: dict) -> list[str]:
    """The session rules an "(a)lways" answer adds so the same call no longer asks.

    Bash: for each part of the command (wrappers ``timeout``/``nice``/``nohup``/
    ``time`` stripped), ``Bash(<first> <subcommand>:*)`` when the second word
    looks like a subcommand (``git diff HEAD`` gives ``Bash(git diff:*)``),
    ``Bash(<first>:*)`` when only harmless options follow a read-only command
    (``ls -la``), and the exact part otherwise (``cat notes.txt``, ``tar -tf
    x.tar``, ``sort -o out x``), and always for shells, interpreters, command
    runners and destructive commands (``bash``, ``python3``, ``env``, ``xargs``,
    ``sudo``, ``rm``, ``cp``, ``git`` with options before its subcommand...):
    ``Bash(python3 -c "print(1)")``, ``Bash(rm -rf build)``; with the variables
    it sets when they are not harmless (``Bash(PYTEST_ADDOPTS=-x pytest)``). A
    ``cd`` needs no rule. No rule at all for a command the checker does not
    fully understand (substitutions, expansions, control flow, a parse error),
    nor for an exact command holding a ``*`` (in a rule it is a wildcard). Edit, MultiEdit, Write and
    NotebookEdit: ``Edit``. WebFetch: ``WebFetch(domain:HOST)``. Any other tool: its name.
    """
    if tool_name in EDIT_TOOLS:
        return ["Edit"]
    if tool_name == "WebFetch":  # per host, as Claude Code's "don't ask again for HOST"
        host = host_of(str(tool_input.get("url", ""))) if isinstance(tool_input, dict) else ""
        return [f"WebFetch(domain:{host})"] if host else []
    if tool_name != "Bash":
        return [tool_name]
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        return []
    parsed = parse(command)
    if parsed.problems:
        return []
    out: list[str] = []
    for cmd in parsed.top:
        rule = _part_rule(cmd)
        if rule is None:
            return []  # a part no rule can name safely: approve once, add nothing
        if rule and rule not in out:
            out.append(rule)
    return out


def always_offered(always: list[str]) -> bool:
    """Whether "(a)lways" is offered for a request whose "always" rules (computed when it asked) are
    ``always``: the one answer every surface (prompt, ``pending``, console, API, engine) goes by."""
    return bool(always)


def answer_choices(always: list[str]) -> str:
    """The answers a prompt lists: ``(y)es / (n)o``, and ``/ (a)lways`` only when it is offered."""
    return "(y)es / (n)o / (a)lways" if always_offered(always) else "(y)es / (n)o"


def _part_rule(cmd) -> str | None:
    """The rule for one part; "" for a part that needs none (``cd``), None when no rule is safe."""
    values = [w.value for w in cmd.words]
    inner = commands.strip_safe_wrappers(values)
    words = cmd.words[len(values) - len(inner):]
    if not words or words[0].value == "cd":
        return ""
    name = words[0].value or ""
    second = words[1] if len(words) > 1 else None
    if any(not commands.safe_env_name(n) for n, _ in cmd.assignments):  # the variables were approved too
        exact = " ".join([f"{n}={w.raw}" for n, w in cmd.assignments] + [w.raw for w in cmd.words])
    elif ((commands.needs_exact_rule(name) and name != "git") or any(not w.literal for w in words)
          or (name == "git" and second is not None and (second.value or "-").startswith("-"))
          or (second is not None and not (second.value or "").startswith("-")
              and not _SUBCOMMAND.fullmatch(second.raw))):
        exact = " ".join(w.raw for w in words)  # `cat notes.txt`, `rm -rf build`, `python3 -c ...`
    elif second is not None and not (second.value or "").startswith("-"):
        return _checked(f"Bash({words[0].raw} {second.raw}:*)")  # a subcommand: `npm test`, `git diff`
    elif commands.read_only([w.value for w in words]) is None:
        return _checked(f"Bash({words[0].raw}:*)")  # a reader with harmless options: `ls -la`
    else:  # `tar -tf x`, `sort -o out x`: the options decide what it does
        exact = " ".join(w.raw for w in words)
    if "*" in exact:
        return None  # a * in a rule is a wildcard: Bash(find . -name '*.pyc' -delete) would cover far more
    return _checked(f"Bash({exact})")


def _checked(rule: str) -> str | None:
    try:
        parse_rule(rule)
    except RuleSyntaxError:
        return None
    return rule


def _cut(text: str, n: int = 100) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def summary(tool_name: str, tool_input: dict) -> str:
    """One line for lists (``mainsail pending``, transcripts): ``npm test …`` for a multi-line command."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    if tool_name == "Bash":
        command = str(tool_input.get("command", "")).strip()
        lines = command.splitlines()
        first = lines[0] if lines else ""
        return _cut(first + (" …" if len(lines) > 1 else ""))
    if tool_name in ("Read", *EDIT_TOOLS):
        return str(tool_input.get("notebook_path" if tool_name == "NotebookEdit" else "file_path", ""))
    if tool_name == "WebFetch":
        return _cut(f"fetch {tool_input.get('url', '')}")
    if tool_name == "WebSearch":
        return _cut(f"search the web for {tool_input.get('query', '')!r}")
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


def visible(text: str) -> str:
    """Control characters made visible, so a terminal shows exactly what would run."""
    return "".join(c if c in "\n\t" or (c.isprintable() and c not in "\u202e\u202d\u2066\u2067\u2068\u2069")
                   else repr(c)[1:-1] for c in text)


def prompt_text(tool_name: str, tool_input: dict, always: list[str]) -> str:
    """The whole call as a person must see it before deciding: every line of a command, and what
    "(a)lways" would add."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    if tool_name == "Bash":
        body = visible(str(tool_input.get("command", "")))
        lines = body.split("\n")
        shown = lines[0] if len(lines) == 1 else "\n".join("    " + line for line in lines)
        head = f"Bash: {shown}" if len(lines) == 1 else f"Bash ({len(lines)} lines):\n{shown}"
    else:
        head = f"{tool_name}: {visible(summary(tool_name, tool_input))}"
    if always_offered(always):
        tail = "(a)lways adds: " + ", ".join(always)
    else:
        tail = "(a)lways is not offered: no rule can cover this call safely, so it is approved one at a time"
    return f"{head}\n  {tail}"
