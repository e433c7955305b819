"""Whether a pending call may write a protected path: :func:`protected_write`, the one decision every
approval path of the team server asks before a token that is not admin approves.

Protected: ``.claude/``, ``.mainsail/``, ``.git/`` (at any depth of the workspace and of every added
directory, and ``~/.claude``, ``~/.mainsail``; :func:`workflows.permissions.rules.paths.protected`), a file
named ``.mcp.json`` anywhere, ``~/.claude.json``, and every settings file a session reads (the six and
the managed ones). Writing one changes what later sessions may do: the sandbox, hooks, MCP servers,
permissions, or (``.git/``) the programs git runs.

What a call writes, fail closed (a reason is returned unless the call is shown not to write there):

* Edit, MultiEdit, Write, NotebookEdit: the path, resolved by the one resolver (a path that cannot be
  resolved, or a file with other hard links, counts as protected);
* tools that write no file (Read, Glob, Grep, the web and memory tools, TodoWrite, Task, ...): nothing;
* Bash: parsed by the checker's grammar; a command it does not fully understand counts as writing.
  For each simple command: its output redirections are writes; a command that only reads
  (:func:`~workflows.permissions.shell.commands.read_only`) writes nothing else; ``mkdir``, ``cp`` and the like
  write only the paths they name (every path they name is checked); ``git`` (not read-only) writes
  ``.git/``; any other program may write anywhere it can, so it counts as writing unless the session's
  sandbox contains it and keeps every protected name read-only (:func:`uncontained`);
* any other tool (MCP tools, which run outside the sandbox): counts as writing.

:func:`always_problem` asks the same of the rules an "always" answer would add, by probing the real
permission check with calls those rules would then allow.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from workflows.exceptions import ConfigurationError
from workflows.models import SessionRecord
from workflows.permissions.evaluate import PATH_TOOLS
from workflows.permissions.rules import paths
from workflows.permissions.rules.results import Decision
from workflows.permissions.rules.rules import EDIT_TOOLS
from workflows.permissions.shell import commands
from workflows.permissions.shell.bash_parse import Command, Word, parse
from workflows.permissions.shell.bash_paths import (
    SAFE_DEVICES,
    Cwds,
    cd_targets,
    may_match_protected,
    path_texts,
    resolve_all,
)

__all__ = ["PROTECTED_NAMES", "always_problem", "is_protected", "protected_write", "parts",
           "runs_unknown_program", "uncontained", "unsandboxed", "word_paths"]

#: What a non-admin token may not approve writing, as shown in a refusal.
PROTECTED_NAMES = ".claude/, .mcp.json, .mainsail/, .git/ or a settings file"
#: Tools that write no file of the workspace or the host (memory lives in Redis, todos in the session).
NO_FILE_WRITES = frozenset({"Read", "Glob", "Grep", "WebFetch", "WebSearch", "TodoWrite", "Task", "BashOutput",
                            "KillShell", "MemoryRead", "MemoryWrite", "MemoryDelete", "ExitPlanMode"})
#: Commands that write only the paths they name (every path they name is checked, fail closed).
NAMED_WRITERS = frozenset({"mkdir", "touch", "mv", "cp", "ln", "rm", "rmdir", "install", "tee", "truncate",
                           "chmod", "unlink"})
#: The protected names a sandbox must keep read-only before an unknown program in it counts as
#: writing none of them (compared with :data:`~workflows.permissions.sandbox.mounts.ALWAYS_READ_ONLY`).
_SANDBOX_MUST_COVER = (".claude", ".mainsail", ".git", ".mcp.json")


def _home(rec: SessionRecord) -> str:
    return os.path.realpath(rec.home or os.path.expanduser("~"))


def _area(rec: SessionRecord) -> paths.WorkArea:
    return paths.WorkArea(rec.workspace, rec.additional_directories)


def settings_files(rec: SessionRecord) -> set[str]:
    """Every settings file the session's checks read (resolved), and ``~/.claude.json``."""
    from workflows.settings.layers import settings_layers

    home = _home(rec)
    found = {os.path.realpath(os.path.join(home, ".claude.json"))}
    for root in _area(rec).dirs:
        found.update(os.path.realpath(p) for _, p in settings_layers(Path(root), Path(home)))
    return found


def is_protected(path: str, rec: SessionRecord, files: set[str] | None = None) -> bool:
    """Whether resolved ``path`` is protected for session ``rec`` (see the module docstring)."""
    if paths.protected(path, _area(rec), _home(rec)):  # (.mcp.json included, at any depth)
        return True
    return path in (settings_files(rec) if files is None else files)


def protected_write(tool: str, tool_input: dict, rec: SessionRecord) -> str | None:
    """Why approving ``tool`` with ``tool_input`` in session ``rec`` may write a protected path; None when
    the call is shown not to (see the module docstring)."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    if tool in NO_FILE_WRITES:
        return None
    if tool in EDIT_TOOLS:
        return _edit(tool, tool_input.get(PATH_TOOLS[tool]), rec)
    if tool == "Bash":
        command = tool_input.get("command")
        return _bash(command if isinstance(command, str) else "", rec)
    return f"{tool} may write any file (what it writes is not known to the checker)"


def _edit(tool: str, value, rec: SessionRecord) -> str | None:
    if not isinstance(value, str) or not value:
        return f"{tool} names no path"
    try:
        path = paths.resolve(value, cwd=rec.workspace, home=_home(rec))
    except paths.Unresolvable as exc:
        return f"{tool} writes {value!r}, which cannot be resolved ({exc})"
    if is_protected(path, rec):
        return f"{tool} writes {path}"
    if _linked(path):
        return f"{tool} writes {path}, which has other hard links (one may be a protected file)"
    return None


def _linked(path: str) -> bool:
    """A file with other hard links: writing it writes them too, wherever they are."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode)


def _bash(command: str, rec: SessionRecord) -> str | None:
    parsed = parse(command)
    if parsed.problems:
        return f"the command uses {parsed.problems[0]}, so what it writes is not known"
    hm, files = _home(rec), settings_files(rec)
    for cmd, cwds in parts(parsed.top, _area(rec), hm):
        if why := _part(cmd, command, rec, cwds, hm, files):
            return why
    return None


def parts(top, ws: str, hm: str):
    """Each simple command of a fully understood line with the directories the shell may be in when
    it runs (``None``: unknown), tracked through ``cd`` as the checker tracks them."""
    cwds = Cwds({ws})
    for cmd in top:
        yield cmd, cwds
        inner = commands.strip_safe_wrappers([w.value for w in cmd.words])
        if inner and inner[0] in ("cd", "pushd", "popd"):
            cwds = cwds | cd_targets(inner, cwds, hm)


def runs_unknown_program(cmd: Command, rec: SessionRecord, cwds: Cwds) -> bool:
    """Whether this part runs a program that may read or write files it does not name: anything but
    a read-only command or one of :data:`NAMED_WRITERS`, with no variable that may change what runs
    (``git`` opening a repository planted in the workspace counts: its config can run programs)."""
    inner = commands.strip_safe_wrappers([w.value for w in cmd.words])
    if not inner:
        return False
    if any(not commands.safe_env_name(n) for n, _ in cmd.assignments):
        return True
    if inner[0] == "git" and not all(c is not None and commands.git_finds_workspace_repo(c, rec.workspace)
                                     for c in cwds):
        return True
    return commands.read_only(list(inner)) is not None and inner[0] not in NAMED_WRITERS


def _part(cmd: Command, command: str, rec: SessionRecord, cwds: Cwds, hm: str, files: set[str]) -> str | None:
    """Why one simple command may write a protected path, or None."""
    values = [w.value for w in cmd.words]
    inner = commands.strip_safe_wrappers(values)
    words = cmd.words[len(values) - len(inner):]
    shown = (cmd.text or " ".join(w.raw for w in cmd.words))[:80]
    for r in cmd.redirects:
        if r.writes and r.target is not None and r.target.value not in SAFE_DEVICES:
            if why := _word(r.target, rec, cwds, hm, files):
                return f"`{shown}` sends its output to {why}"
        elif r.writes and r.target is None:
            return f"`{shown}` writes to a file the checker cannot name"
    if not inner:
        return None
    if inner[0] == "git" and commands.read_only(list(inner)) is not None:
        return f"`{shown}` may write the repository's .git/ (git {inner[1] if len(inner) > 1 else ''})".rstrip()
    if runs_unknown_program(cmd, rec, cwds):
        if why := uncontained(command, rec):
            return f"`{shown}` may write any file ({why})"
        return None
    if inner[0] in NAMED_WRITERS:
        for w in words[1:]:
            if why := _word(w, rec, cwds, hm, files):
                return f"`{shown}` writes {why}"
    return None


def _word(word: Word, rec: SessionRecord, cwds: Cwds, hm: str, files: set[str]) -> str | None:
    """Why a path this word names may be protected (or cannot be known), or None."""
    if word.glob and may_match_protected(word.value or ""):
        return f"{word.raw}, which may match a protected path"
    found = word_paths(word, cwds, hm)
    if isinstance(found, str):
        return found
    if hit := next((p for p in found if is_protected(p, rec, files)), None):
        return hit
    return next((f"{p}, which has other hard links" for p in found if _linked(p)), None)


def word_paths(word: Word, cwds: Cwds, hm: str) -> list[str] | str:
    """Every resolved path one word may name under any of ``cwds``, as the checker reads it
    (:func:`~workflows.permissions.shell.bash_paths.path_texts`, glob matches and the pattern, both readings
    of ``..``), devices like /dev/null left out; or why that cannot be known."""
    if word.brace:
        return f"{word.raw}, which may expand to several names"
    if word.value is None:
        return f"{word.raw}, which bash would expand"
    out: list[str] = []
    for text in path_texts(word):
        for cwd in cwds:
            found, unknown = resolve_all(word, text, cwd, hm)
            if unknown:
                return f"{text}, which cannot be resolved"
            out += [p for p in found if p not in SAFE_DEVICES]
    return out


def uncontained(command: str, rec: SessionRecord) -> str | None:
    """Why the session's sandbox would not keep ``command`` from writing a protected path; None when
    it runs sandboxed (:func:`unsandboxed`) and the sandbox keeps every protected name read-only."""
    from workflows.permissions.sandbox.mounts import ALWAYS_READ_ONLY

    if why := unsandboxed(command, rec):
        return why
    left = [name for name in _SANDBOX_MUST_COVER if name not in ALWAYS_READ_ONLY]
    if left:
        return f"the sandbox leaves {', '.join(left)} writable"
    return None


def unsandboxed(command: str, rec: SessionRecord) -> str | None:
    """Why ``command`` would run outside the session's sandbox; None when it runs in it.

    Judged on the server's machine: a worker elsewhere with another ``MAINSAIL_SANDBOX`` or without
    bwrap is not seen (unless ``sandbox.failIfUnavailable`` makes it refuse to run unsandboxed)."""
    from workflows.permissions.sandbox import is_excluded, sandbox_env_enabled, sandbox_status

    s = rec.sandbox
    if not s.enabled:
        return "the session's sandbox is off"
    try:
        if not sandbox_env_enabled():
            return "MAINSAIL_SANDBOX=false turns the sandbox off"
    except ConfigurationError:
        return "MAINSAIL_SANDBOX is not a boolean"
    if is_excluded(command, s.excluded_commands):
        return "it is in sandbox.excludedCommands, which run unsandboxed"
    if not s.fail_if_unavailable and not sandbox_status().available:
        return "the sandbox is unavailable here, so commands run unsandboxed"
    return None


def _probes(rule: str, rec: SessionRecord) -> list[tuple[str, dict]]:
    """Calls that ``rule`` (an "always" rule) would let through which write each protected target."""
    hm = _home(rec)
    targets = sorted(settings_files(rec) | {os.path.join(hm, ".claude.json")})
    for root in _area(rec).dirs:
        targets += [os.path.join(root, rel) for rel in (".mcp.json", ".git/config", ".claude/settings.json",
                                                       ".mainsail/settings.json")]
    name, _, spec = rule.partition("(")
    spec = spec[:-1] if spec.endswith(")") else spec
    if name in EDIT_TOOLS:
        return [(tool, {"file_path": t, "content": "", "old_string": "a", "new_string": "b", "edits": []})
                for tool in EDIT_TOOLS if tool != "NotebookEdit" for t in targets]
    if name == "Bash" and spec.endswith(":*"):
        prefix = spec[:-2].strip()
        return ([("Bash", {"command": f"{prefix} x > {t}"}) for t in targets]
                + [("Bash", {"command": f"{prefix} x"})])
    return []


def always_problem(rules: list[str], rec: SessionRecord) -> str | None:
    """Why adding ``rules`` (an "always" answer) to session ``rec`` would let a later call write a
    protected path without asking; None when none would. Probed with the real permission check."""
    from workflows.permissions.bypass import effective_mode
    from workflows.permissions.evaluate import evaluate

    wider = rec.rules.model_copy(deep=True)
    for rule in rules:
        wider.add("allow", rule, "always")
    for rule in rules:
        for tool, probe in _probes(rule, rec):
            result = evaluate(tool, probe, mode=effective_mode(rec), rules=wider, workspace=rec.workspace,
                              home=_home(rec), read_only=False, additional_dirs=rec.additional_directories)
            if result.decision is Decision.ALLOW and (why := protected_write(tool, probe, rec)):
                return f"the rule {rule} would let a later call through without asking ({why})"
    return None
