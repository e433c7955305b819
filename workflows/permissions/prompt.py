"""What a person is shown when a call asks, and what "(a)lways" adds.

:func:`always_rules` is computed once, when the request is made, stored with
the request and shown in the prompt, so the rules added are exactly the rules
the person saw. A command the checker does not fully understand gets none:
"(a)lways" then approves it once.
"""

from __future__ import annotations

import json
import re

from workflows.permissions import commands
from workflows.permissions.bash_parse import parse
from workflows.permissions.rules import RuleSyntaxError, parse_rule

__all__ = ["always_rules", "prompt_text", "summary"]

_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9_:-]*")


def always_rules(tool_name: str, tool_input: dict) -> list[str]:
    """The session rules an "(a)lways" answer adds so the same call no longer asks.

    Bash: for each part of the command (wrappers ``timeout``/``nice``/``nohup``/
    ``time`` stripped), ``Bash(<first> <subcommand>:*)`` when the second word
    looks like a subcommand (``git diff HEAD`` gives ``Bash(git diff:*)``),
    ``Bash(<first>:*)`` when only options follow a read-only command (``ls
    -la``), and the exact part otherwise (``cat notes.txt``, ``tar -tf x.tar``), and always for shells, interpreters,
    command runners and destructive commands (``bash``, ``python3``, ``env``,
    ``xargs``, ``sudo``, ``rm``, ``cp``, ``git`` with options before its
    subcommand...): ``Bash(python3 -c "print(1)")``, ``Bash(rm -rf build)``. A ``cd`` inside the
    workspace needs no rule. A command with anything the checker does not
    approve (substitutions, expansions, control flow, a parse error) gets no
    rule at all. Edit and Write: ``Edit``. Any other tool: its name.
    """
    if tool_name in ("Edit", "Write"):
        return ["Edit"]
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
        values = [w.value for w in cmd.words]
        inner = commands.strip_safe_wrappers(values)
        words = cmd.words[len(values) - len(inner):]
        if not words or words[0].value == "cd":
            continue
        name = words[0].value or ""
        git_global = name == "git" and len(words) > 1 and (words[1].value or "-").startswith("-")
        second = words[1] if len(words) > 1 else None
        if (commands.needs_exact_rule(name) and name != "git") or git_global or any(not w.literal for w in words) \
                or (second is not None and not (second.value or "").startswith("-")
                    and not _SUBCOMMAND.fullmatch(second.raw)):
            rule = f"Bash({' '.join(w.raw for w in words)})"  # exact: `cat notes.txt`, `rm -rf build`
        elif second is not None and not (second.value or "").startswith("-"):
            rule = f"Bash({words[0].raw} {second.raw}:*)"  # a subcommand: `npm test`, `git diff`
        elif name in commands.READ_ONLY:
            rule = f"Bash({words[0].raw}:*)"  # a reader with options: `ls -la`
        else:  # `tar -tf x`: options decide what it does (tar --checkpoint-action=exec=...)
            rule = f"Bash({' '.join(w.raw for w in words)})"
        try:
            parse_rule(rule)
        except RuleSyntaxError:
            return []  # a part no rule can name: approve once, add nothing
        if rule not in out:
            out.append(rule)
    return out


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


def _visible(text: str) -> str:
    """Control characters made visible, so a terminal shows exactly what would run."""
    return "".join(c if c in "\n\t" or (c.isprintable() and c not in "\u202e\u202d\u2066\u2067\u2068\u2069")
                   else repr(c)[1:-1] for c in text)


def prompt_text(tool_name: str, tool_input: dict, always: list[str]) -> str:
    """The whole call as a person must see it before deciding: every line of a command, and what
    "(a)lways" would add."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    if tool_name == "Bash":
        body = _visible(str(tool_input.get("command", "")))
        lines = body.split("\n")
        shown = lines[0] if len(lines) == 1 else "\n".join("    " + line for line in lines)
        head = f"Bash: {shown}" if len(lines) == 1 else f"Bash ({len(lines)} lines):\n{shown}"
    else:
        head = f"{tool_name}: {_visible(summary(tool_name, tool_input))}"
    if always:
        tail = "(a)lways adds: " + ", ".join(always)
    else:
        tail = "(a)lways is not offered: this call is approved one at a time"
    return f"{head}\n  {tail}"
