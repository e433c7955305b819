"""Tab completion in interactive mode: ``/`` commands at the start of the line, ``@`` file mentions anywhere.

A mention completes to paths of the session's workspace (and added directories) as the session's Read
would see them: each candidate goes through the one path resolver (workflows/permissions/rules/paths.py) and the
permission function (a file a Read deny rule covers is never offered). ``@"a b.txt"`` quotes a name with spaces,
as the engine's mention syntax reads it (workflows/commands/expand.py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

from prompt_toolkit.completion import Completer, Completion

if TYPE_CHECKING:
    from cli.repl_state import Repl

MAX_OFFERED = 200  # entries of one folder offered at a time
SKIPPED = {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}


class ReplCompleter(Completer):
    def __init__(self, ui: "Repl") -> None:
        self.ui = ui

    def get_completions(self, document, complete_event) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before and "\n" not in before:
            for name in self.ui.command_names():
                if name.startswith(before):
                    yield Completion(name, start_position=-len(before))
            return
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if word.startswith("@"):
            typed = word[1:].lstrip('"')
            for path, is_dir in mention_candidates(self.ui, typed):
                shown = path + ("/" if is_dir else "")
                text = f'@"{shown}"' if " " in shown else f"@{shown}"
                yield Completion(text, start_position=-len(word), display=shown)


def mention_candidates(ui: "Repl", typed: str) -> list[tuple[str, bool]]:
    """``(path as typed, is a folder)`` for the entries of the folder ``typed`` names that start with its last
    part, in the workspace's terms; only what the session's Read may read."""
    from workflows.permissions import Decision, decide
    from workflows.permissions.rules import paths
    from workflows.tools import get_tool

    rec = ui.record()
    folder, _, stem = typed.rpartition("/")
    try:
        base = paths.resolve(folder or ".", cwd=rec.workspace, home=rec.home)
    except paths.Unresolvable:
        return []
    area = paths.WorkArea(rec.workspace, rec.additional_directories)
    if not paths.inside(base, area):
        return []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    read = get_tool("Read")
    out = []
    for name in names:
        if not name.startswith(stem) or (name in SKIPPED and not stem) or (name.startswith(".") and not stem):
            continue
        full = os.path.join(base, name)
        is_dir = os.path.isdir(full)
        if not is_dir and decide(read, {"file_path": full}, rec).decision is Decision.DENY:
            continue
        out.append((f"{folder}/{name}" if folder else name, is_dir))
        if len(out) >= MAX_OFFERED:
            break
    return out


__all__ = ["ReplCompleter", "mention_candidates"]
