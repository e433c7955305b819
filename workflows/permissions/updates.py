"""Permission updates: Claude Code's ``PermissionUpdate`` (an SDK client's ``updated_permissions``, the
``permission_suggestions`` of a ``can_use_tool`` request), in the session and in the settings files.

An update has a ``type`` and a ``destination``. Claude Code 2.1.332 applies every update an approver returns to
the running session, and one whose destination is a settings file to that file as well:

==================  =========================================
``session``         the session alone (``cliArg`` too)
``localSettings``   ``<workspace>/.claude/settings.local.json`` (kept out of git, as Claude Code does)
``projectSettings`` ``<workspace>/.claude/settings.json``
``userSettings``    ``~/.claude/settings.json``
==================  =========================================

Types: ``addRules``, ``replaceRules``, ``removeRules`` (``rules``: ``[{"toolName", "ruleContent"?}]`` and a
``behavior``: allow, deny or ask), ``setMode`` (``mode``; a file gets ``defaultMode``), ``addDirectories`` and
``removeDirectories`` (``directories``; a file's ``permissions.additionalDirectories``). In the session, a
rule from a file keeps the file as its source, so removing it there removes the session's copy too; a
``replaceRules`` replaces the rules of that behavior from that destination. A removed directory stays in the
session (its tools were offered it; a new session reads the file).

:func:`suggestions` words Mainsail's "always" rules as Claude Code suggests them: an ``addRules`` for
``localSettings``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from workflows.exceptions import ConfigurationError
from workflows.models import RuleSet
from workflows.settings.writes import Written, write_settings

__all__ = ["BEHAVIORS", "DESTINATIONS", "SESSION", "SessionChange", "rule_text", "session_change", "suggestions",
           "update_files", "write_updates"]

BEHAVIORS = ("allow", "deny", "ask")
#: The source of the rules an update adds to the session alone (the same as an "always" answer's).
SESSION = "session"
DESTINATIONS = ("session", "cliArg", "localSettings", "projectSettings", "userSettings")


def update_files(workspace: Path, home: Path) -> dict[str, Path]:
    """The settings file of each file destination."""
    return {"localSettings": Path(workspace) / ".claude" / "settings.local.json",
            "projectSettings": Path(workspace) / ".claude" / "settings.json",
            "userSettings": Path(home) / ".claude" / "settings.json"}


def rule_text(value: dict) -> str:
    """``{"toolName": "Bash", "ruleContent": "npm test:*"}`` as a rule: ``Bash(npm test:*)``."""
    tool, content = str(value.get("toolName") or ""), value.get("ruleContent")
    return f"{tool}({content})" if content else tool


def _rules(update: dict) -> list[str]:
    return [rule_text(v) for v in update.get("rules") or () if isinstance(v, dict) and v.get("toolName")]


def suggestions(rules: list[str]) -> list[dict]:
    """The rules "always" would add, as Claude Code suggests them (allow rules for ``localSettings``)."""
    out = []
    for rule in rules:
        tool, _, rest = rule.partition("(")
        value = {"toolName": tool}
        if rest:
            value["ruleContent"] = rest[:-1] if rest.endswith(")") else rest
        out.append(value)
    return [{"type": "addRules", "rules": out, "behavior": "allow", "destination": "localSettings"}] if out else []


@dataclass
class SessionChange:
    """What a list of updates changes in the running session."""

    add: RuleSet = field(default_factory=RuleSet)
    remove: RuleSet = field(default_factory=RuleSet)  # each rule with the source it must have to go
    mode: str | None = None
    directories: list[str] = field(default_factory=list)


def _checked(update) -> tuple[str, str, str]:
    if not isinstance(update, dict):
        raise ConfigurationError(f"A permission update must be an object, not {update!r}.")
    kind, destination = update.get("type"), update.get("destination", "session")
    if destination not in DESTINATIONS:
        raise ConfigurationError(f"Permission update destination {destination!r} is not one of "
                                 f"{', '.join(DESTINATIONS)}.")
    behavior = update.get("behavior") or "allow"
    if kind in ("addRules", "replaceRules", "removeRules") and behavior not in BEHAVIORS:
        raise ConfigurationError(f"Permission update behavior {behavior!r} is not one of {', '.join(BEHAVIORS)}.")
    return kind, destination, behavior


def session_change(updates: Iterable[dict], workspace: Path, home: Path, current: RuleSet) -> SessionChange:
    """What ``updates`` change in a session whose rules are ``current``.

    Raises:
        ConfigurationError: an update names an unknown destination or behavior.
    """
    files = update_files(workspace, home)
    out = SessionChange()
    for update in updates:
        kind, destination, behavior = _checked(update)
        source = str(files[destination]) if destination in files else SESSION
        rules = _rules(update)
        if kind == "replaceRules":
            for spec in getattr(current, behavior):
                if spec.source == source and spec.rule not in rules:
                    out.remove.add(behavior, spec.rule, source)
        if kind in ("addRules", "replaceRules"):
            for rule in rules:
                out.add.add(behavior, rule, source)
        elif kind == "removeRules":
            for rule in rules:
                out.remove.add(behavior, rule, source)
        elif kind == "setMode" and update.get("mode"):
            out.mode = str(update["mode"])
        elif kind == "addDirectories":
            out.directories += [str(d) for d in update.get("directories") or () if isinstance(d, str)]
    return out


def write_updates(updates: Iterable[dict], workspace: Path, home: Path) -> list[Written]:
    """Write the updates whose destination is a settings file to that file (each file once, after all its
    updates); the files written, with their notes.

    Raises:
        ConfigurationError: a destination file is not a JSON object, or an update is malformed.
    """
    files = update_files(workspace, home)
    changed: dict[str, dict] = {}
    for update in updates:
        kind, destination, behavior = _checked(update)
        if destination not in files:
            continue
        if destination not in changed:
            data = _read(files[destination])
            if not isinstance(data, dict):
                raise ConfigurationError(f"{files[destination]} does not hold a JSON object; fix it or move it aside.")
            changed[destination] = data
        _apply(changed[destination], kind, behavior, update)
    return [write_settings(files[d], data, workspace, home) for d, data in changed.items()]


def _read(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"Cannot read {path}: {exc}; fix it or move it aside.") from None
    try:
        return json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path} is not valid JSON ({exc}); fix it or move it aside.") from None


def _apply(data: dict, kind: str, behavior: str, update: dict) -> None:
    perms = data.get("permissions") if isinstance(data.get("permissions"), dict) else {}
    data["permissions"] = perms
    rules = _rules(update)
    listed = [r for r in perms.get(behavior) or () if isinstance(r, str)]
    dirs = [str(d) for d in update.get("directories") or () if isinstance(d, str)]
    added = [d for d in perms.get("additionalDirectories") or () if isinstance(d, str)]
    if kind == "addRules":
        perms[behavior] = listed + [r for r in rules if r not in listed]
    elif kind == "replaceRules":
        perms[behavior] = list(dict.fromkeys(rules))
    elif kind == "removeRules":
        perms[behavior] = [r for r in listed if r not in rules]
    elif kind == "setMode" and update.get("mode"):
        perms["defaultMode"] = str(update["mode"])
    elif kind == "addDirectories":
        perms["additionalDirectories"] = added + [d for d in dirs if d not in added]
    elif kind == "removeDirectories":
        perms["additionalDirectories"] = [d for d in added if d not in dirs]
