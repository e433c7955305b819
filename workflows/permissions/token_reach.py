"""What a workspace-scoped API token's approval may reach: :func:`reach_problem`, and the other teams'
workspaces a scoped token's sessions hide (:func:`hidden_from`).

A token restricted to workspaces (``mainsail token create --workspace DIR``) sees only sessions there;
approving a call is letting it run, so the call must stay there too. The server knows the other teams'
directories only as the other tokens' ``workspaces``; those are the ones kept out of reach:

* at creation, a session started by a scoped token gets every other token's workspace (one not
  inside the caller's) as a sandbox ``denyRead`` path (:func:`hidden_from`), stored in its record;
* at approval, a scoped token may approve a call only if every path it names (as the checker resolves
  them) lies inside the token's workspaces, and a command that runs a program whose reads are not
  known (``python3``, ``make``: anything but a read-only command or one that writes only what it
  names) runs in the session's sandbox with every other token's workspace hidden *now* (a token made
  after the session started is checked too). A tool whose reach is not known (an MCP tool, which runs
  outside the sandbox) is refused. Fail closed: a path that cannot be resolved, a command the checker
  does not fully understand, counts as outside.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

from workflows.models import SessionRecord
from workflows.permissions.evaluate import PATH_TOOLS
from workflows.permissions.protected_writes import NO_FILE_WRITES, parts, runs_unknown_program, unsandboxed, word_paths
from workflows.permissions.rules import paths
from workflows.permissions.shell.bash_parse import parse

if TYPE_CHECKING:
    from workflows.models import TokenRecord

__all__ = ["hidden_from", "hide_other_workspaces", "reach_problem"]

#: Tools that touch no file: their reach is the web or the session itself.
_NO_FILES = NO_FILE_WRITES - {"Read", "Glob", "Grep"}


def _inside_any(path: str, dirs: Iterable[str]) -> bool:
    return any(paths.inside(path, d) for d in dirs)


def hidden_from(token: "TokenRecord", others: Iterable["TokenRecord"]) -> list[str]:
    """The other tokens' workspaces that sessions of ``token`` must not see: each one not inside
    ``token``'s own (none for a token that may use every workspace)."""
    if not token.workspaces:
        return []
    out: list[str] = []
    for other in others:
        if other.name == token.name:
            continue
        for ws in other.workspaces:
            real = os.path.realpath(ws)
            if not _inside_any(real, token.workspaces) and real not in out:
                out.append(real)
    return out


def hide_other_workspaces(perms: dict, token: "TokenRecord | None", records: Iterable["TokenRecord"]) -> dict:
    """``perms`` (:func:`~workflows.sessions.setup.session_options`'s) with the sandbox's ``denyRead`` holding
    every workspace :func:`hidden_from` gives for ``token`` (unchanged for none, or an unscoped token)."""
    from workflows.models import SandboxSettings

    hidden = hidden_from(token, records) if token is not None else []
    if hidden:
        box = perms.get("sandbox") or SandboxSettings()
        perms = {**perms, "sandbox": box.model_copy(update={"deny_read": [*box.deny_read, *hidden]})}
    return perms


def reach_problem(tool: str, tool_input: dict, rec: SessionRecord, token: "TokenRecord",
                  others: Iterable["TokenRecord"]) -> str | None:
    """Why ``token`` (restricted to workspaces) may not approve this call of session ``rec``: it names
    a path outside the token's workspaces, or runs a program that could read another token's
    workspace; None when it may (and for a token that may use every workspace)."""
    if not token.workspaces:
        return None
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    mine = [os.path.realpath(d) for d in token.workspaces]
    home = os.path.realpath(rec.home or os.path.expanduser("~"))
    if tool in _NO_FILES:
        return None
    if tool in PATH_TOOLS:
        value = tool_input.get(PATH_TOOLS[tool]) or (rec.workspace if tool in ("Glob", "Grep") else None)
        try:
            path = paths.resolve(value, cwd=rec.workspace, home=home)
        except paths.Unresolvable as exc:
            return f"{tool}'s path cannot be resolved ({exc})"
        return None if _inside_any(path, mine) else f"{tool} reaches {path}, outside the token's workspaces"
    if tool != "Bash":
        return f"{tool} may reach any file (it is not confined to the token's workspaces)"
    command = tool_input.get("command") if isinstance(tool_input.get("command"), str) else ""
    parsed = parse(command)
    if parsed.problems:
        return f"the command uses {parsed.problems[0]}, so what it reaches is not known"
    hidden = set(rec.sandbox.deny_read)
    for cmd, cwds in parts(parsed.top, paths.WorkArea(rec.workspace, rec.additional_directories), home):
        shown = (cmd.text or " ".join(w.raw for w in cmd.words))[:80]
        for word in [*cmd.words, *(r.target for r in cmd.redirects if r.target is not None)]:
            found = word_paths(word, cwds, home)
            if isinstance(found, str):
                return f"`{shown}` names {found}"
            if outside := next((p for p in found if not _inside_any(p, mine)), None):
                return f"`{shown}` reaches {outside}, outside the token's workspaces"
        if runs_unknown_program(cmd, rec, cwds):
            if why := unsandboxed(command, rec):
                return f"`{shown}` may read any file ({why})"
            shown_dirs = [d for d in hidden_from(token, others) if not _hides(hidden, d)]
            if shown_dirs:
                return (f"`{shown}` may read any file its sandbox shows, and the session's sandbox does not hide "
                        f"{', '.join(shown_dirs)} (another token's workspace)")
    return None


def _hides(deny_read: set[str], path: str) -> bool:
    """Whether one of the sandbox's ``denyRead`` paths is ``path`` or a folder holding it."""
    return any(paths.inside(path, os.path.realpath(d)) for d in deny_read if os.path.isabs(d))
