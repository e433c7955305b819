"""The named scripts: the ``mainsail demo`` session, the memory forks' default answers, benchmark loops.

A session's model ``scripted:NAME`` runs the script :data:`SCRIPTS` names (see
:func:`demo.scripted.get_api`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from demo.script import FINISHED_TEXT, Script, ToolUse, Turn, TurnFunction, turn_index

DEMO_PROMPT = "Fix the bug in calc.py and run it."

DEMO_FILES: dict[str, str] = {
    "calc.py": (
        "def add(a, b):\n"
        "    return a - b\n"
        "\n"
        "\n"
        'if __name__ == "__main__":\n'
        '    print("2 + 3 =", add(2, 3))\n'
    ),
}


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_block_text(b.get("text", b.get("content", ""))) for b in content if isinstance(b, dict))
    return ""


def last_tool_result(body: dict) -> tuple[str, bool]:
    """The text and ``is_error`` flag of the last ``tool_result`` in the request."""
    for message in reversed(body.get("messages") or []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return _block_text(block.get("content", "")), bool(block.get("is_error"))
    return "", False


def demo_turn(body: dict) -> Turn:
    """The ``mainsail demo`` model: read calc.py, fix add(), run it, summarise."""
    index = turn_index(body)
    if index == 0:
        return Turn(
            text="I'll look at calc.py first.",
            tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})],
        )
    if index == 1:
        return Turn(
            text="`add()` subtracts instead of adding: it returns `a - b`. I'll change it to `a + b`.",
            tool_uses=[
                ToolUse(
                    name="Edit",
                    input={"file_path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
                )
            ],
        )
    if index == 2:
        return Turn(
            text="Now let me run it to check.",
            tool_uses=[ToolUse(name="Bash", input={"command": "python3 calc.py", "description": "Run the calculator"})],
        )
    if index == 3:
        output, _ = last_tool_result(body)
        output = output.strip()
        if "2 + 3 = 5" in output:
            result = "it now prints `2 + 3 = 5`."
        else:
            result = f"but running it printed:\n\n{output or '(no output)'}"
        return Turn(text=f"Fixed the bug in calc.py: `add()` used `-` instead of `+`; {result}")
    return Turn(text=FINISHED_TEXT, stop_reason="end_turn")


_NOTES_PATH = re.compile(r'file_path "([^"]+)"')
_FIRST_PROMPT = re.compile(r"^User: (.+)$", re.M)
_TITLE_PROMPT = re.compile(r"<conversation>\nUser: (.*?)\n\nAssistant: ", re.S)


def default_fork_turn(kind: str, body: dict, index: int) -> Turn:
    """What the scripted model does as a memory fork when its script says nothing.

    The session-memory fork writes the first prompt it sees into "Current State",
    then stops; the extraction saves nothing. Both are one or two turns.
    """
    if kind == "title":  # the title a session has before it: its first prompt on one line
        asked = _TITLE_PROMPT.search(_block_text((body.get("messages") or [{}])[0].get("content")))
        line = " ".join(asked.group(1).split()) if asked else ""
        return Turn(text=line if len(line) <= 60 else line[:57] + "...", stop_reason="end_turn")
    if kind == "session_memory" and index == 0:
        messages = body.get("messages") or [{}]
        prompt = _block_text(messages[0].get("content"))
        path = _NOTES_PATH.search(prompt)
        asked = _FIRST_PROMPT.search(prompt)
        if path and asked:
            line = "_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._"
            return Turn(tool_uses=[ToolUse(name="Edit", input={
                "file_path": path.group(1), "old_string": line,
                "new_string": f"{line}\nWorking on: {asked.group(1).strip()[:200]}"})])
    return Turn(text="Nothing to save." if kind == "extract" else "Notes updated.", stop_reason="end_turn")


def read_loop(n: int, file_path: str = "bench.txt") -> Script:
    """``n`` turns that each Read ``file_path``, then an end_turn. No delays."""
    turns = [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": file_path})]) for _ in range(n)]
    turns.append(Turn(text=f"Read {file_path} {n} times.", stop_reason="end_turn"))
    return Script(turns=turns)


# --------------------------------------------------------------------------- named scripts

#: name -> factory(*string args) -> Script | turn function. ``"read_loop:5"`` calls
#: ``SCRIPTS["read_loop"]("5")``.
SCRIPTS: dict[str, Callable[..., Script | TurnFunction]] = {
    "demo": lambda: demo_turn,
    "read_loop": lambda n="1", file_path="bench.txt": read_loop(int(n), file_path),
}


__all__ = ["DEMO_FILES", "DEMO_PROMPT", "SCRIPTS", "default_fork_turn", "demo_turn", "last_tool_result", "read_loop"]
