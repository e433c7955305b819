"""Permission settings from Claude Code-style settings files and the CLI flags.

Layers, lowest first (a later one wins for scalar settings; rules from every
layer are combined, each remembering where it came from)::

    ~/.claude/settings.json            user
    ~/.mainsail/settings.json          user (Mainsail beats Claude at the same level)
    <ws>/.claude/settings.json         project
    <ws>/.mainsail/settings.json       project
    <ws>/.claude/settings.local.json   local
    <ws>/.mainsail/settings.local.json local
    --allowedTools / --disallowedTools flags

A ``settings.local.json`` that git tracks is a project file, not a local one (a clone brought it). The
project files' keys that can run code or widen access (hooks, sandbox, env, allow rules, added
directories, MCP approvals: :mod:`workflows.settings.gated`) are read only for a workspace the person
trusted (``trusted=True``, decided by :func:`workflows.trust.decide.workspace_trust`).

Format (Claude Code's; unknown keys are ignored)::

    {"model": "opus", "env": {"NODE_ENV": "test"},
     "permissions": {"allow": ["Bash(npm test:*)"], "ask": [], "deny": ["Read(./.env)"],
                     "defaultMode": "acceptEdits", "additionalDirectories": ["../shared"],
                     "disableBypassPermissionsMode": "disable"},
     "approvalTimeoutSeconds": 300,
     "sandbox": {"enabled": true, "failIfUnavailable": false, "excludedCommands": ["docker"],
                 "network": {"allowedDomains": ["pypi.org", "*.pythonhosted.org"],
                             "allowAllUnixSockets": false},
                 "filesystem": {"allowWrite": ["~/.cache"], "denyWrite": ["./dist"],
                                "denyRead": ["~/.ssh"]}},
     "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]}}

``approvalTimeoutSeconds`` may also sit inside ``permissions`` (the top-level
one wins when a file has both). In ``sandbox``, lists from every file are
combined and a later file's boolean wins; its paths are resolved when read
(Claude Code's prefixes): ``//abs`` is ``/abs``, ``~/x`` is in the home,
``/x`` is relative to the settings file's directory, ``./x`` or ``x`` to the
workspace. ``hooks`` from every file run (see :mod:`workflows.hooks`).
``disableBypassPermissionsMode`` only restricts: any file (or ``--settings``) that sets it wins
(:mod:`workflows.permissions.bypass`). Every mistake is a :class:`SettingsError` naming the file and line;
missing files are skipped.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from workflows.hooks.settings import HookConfigError, parse_hooks
from workflows.mcp.settings import McpSettings, apply_mcp_keys
from workflows.models import PermissionMode, RuleSet, RuleSpec, SandboxSettings
from workflows.models.hooks import HookSet
from workflows.permissions.bypass import apply_bypass_key
from workflows.permissions.rules.rules import RuleSyntaxError, parse_rule, split_rules
from workflows.sessions.session_keys import apply_session_keys
from workflows.settings.errors import EXAMPLES, SettingsError, Where, at_line, describe, key_at, line_of, strings
from workflows.settings.gated import strip_gated
from workflows.settings.layers import settings_layers
from workflows.settings.managed import DROP_IN

__all__ = ["PermissionSettings", "load_permission_settings"]

MODES = ", ".join(m.value for m in PermissionMode)
KINDS = ("allow", "ask", "deny")


@dataclass
class PermissionSettings:
    rules: RuleSet = field(default_factory=RuleSet)
    default_mode: PermissionMode | None = None
    default_mode_source: str | None = None  # the file whose defaultMode won
    default_mode_layer: str | None = None  # ... and its layer: user, project, local or flag (--settings)
    bypass_disabled_by: list[str] = field(default_factory=list)  # files setting disableBypassPermissionsMode
    approval_timeout_seconds: float | None = None
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    hooks: HookSet = field(default_factory=HookSet)  # every file's hooks, lowest precedence first
    files: list[str] = field(default_factory=list)  # the files actually read, in order
    # The session keys (workflows.sessions.session_keys): model, env, additionalDirectories.
    model: str | None = None
    output_style: str | None = None  # outputStyle: a style's name (workflows.styles)
    env: dict[str, str] = field(default_factory=dict)  # for the session's tool processes
    model_env: dict[str, str] = field(default_factory=dict)  # ANTHROPIC_MODEL, ANTHROPIC_DEFAULT_*_MODEL
    additional_directories: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # keys read but not applied, for the user
    mcp: McpSettings = field(default_factory=McpSettings)  # .mcp.json approvals, Mainsail's own servers


def load_permission_settings(workspace: Path, home: Path, *, allowed_tools: list[str] | None = None,
                             disallowed_tools: list[str] | None = None, sources: Iterable[str] | None = None,
                             extra: list[tuple[str, str]] | None = None, trusted: bool = False) -> PermissionSettings:
    """Read every settings layer and the flags into one :class:`PermissionSettings`.

    ``sources``: only these of :data:`SOURCES` (Claude Code's ``--setting-sources``). ``extra``:
    ``(name, JSON text)`` layers read last, above the files (Claude Code's ``--settings``). ``trusted``:
    whether the person trusted the workspace (:func:`workflows.trust.decide.workspace_trust`); until then
    the gated keys of its project files (:mod:`workflows.settings.gated`) are left out.

    Raises:
        SettingsError: invalid JSON, a rule that does not parse, a value of the
            wrong type, an unknown defaultMode, a bad approvalTimeoutSeconds, a
            bad ``sandbox`` value, a directory or unreadable file in place of a
            settings file, or a flag rule that does not parse.
    """
    out = PermissionSettings()
    layers = [(source, path, _read(path)) for source, path in settings_layers(workspace, home, sources)]
    flags = [("flag", Path(name), text) for name, text in (extra or [])]
    # The managed (policy) files come last, above --settings: nothing overrides an organisation's policy.
    for source, path, text in [*(la for la in layers if la[0] != "policy"), *flags,
                               *(la for la in layers if la[0] == "policy")]:
        if text is None:
            continue
        out.files.append(str(path))
        data = _apply_file(out, path, text, gate=source == "project" and not trusted)
        if out.default_mode_source == str(path):
            out.default_mode_layer = source
        if data is not None:
            apply_mcp_keys(out.mcp, data, str(path), source, path, out.warnings)
            _apply_sandbox(out.sandbox, data.get("sandbox"), Where(path, text), str(workspace), str(home))
            out.hooks = out.hooks.merged(_hooks(data.get("hooks"), Where(path, text)))
            apply_session_keys(out, data, Where(path, text), str(workspace), str(home))
            apply_bypass_key(out, data, Where(path, text))
    for flag, kind, values in (("--allowedTools", "allow", allowed_tools),
                               ("--disallowedTools", "deny", disallowed_tools)):
        for rule in split_rules(values):
            try:
                parse_rule(rule)
            except RuleSyntaxError as exc:
                raise SettingsError(f"Invalid permission rule {rule!r} in {flag}: {exc.why}") from None
            getattr(out.rules, kind).append(RuleSpec(rule=rule, source=flag))
    return out


# --------------------------------------------------------------------------- one file


def _read(path: Path) -> str | None:
    if path.name == DROP_IN:  # (managed.policy_layers: a drop-in directory that cannot be listed)
        raise SettingsError(f"Cannot list the managed settings directory {path}: its policy cannot be read, so "
                            "nothing starts. Ask the machine's administrator to make it readable.")
    if path.is_dir():
        raise SettingsError(f"{path} is a directory, not a settings file. Remove it or move it aside.")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}). "
                            "Fix the file or move it aside.") from None
    except OSError as exc:
        raise SettingsError(f"Cannot read {path}: {exc.strerror or exc}. Fix its permissions or move it "
                            "aside.") from None


def _apply_file(out: PermissionSettings, path: Path, text: str, gate: bool = False) -> dict | None:
    """Apply one file's permission keys; returns its parsed object (None: an empty file), without its gated
    keys when ``gate`` (an untrusted workspace's project file)."""
    if not text.strip():
        return None  # an empty file holds no settings
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"Invalid JSON in {path}, line {exc.lineno}, column {exc.colno}: {exc.msg}. "
                            "Fix the file or move it aside.") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}, line 1: the settings must be a JSON object like "
                            f'{{"permissions": {{"allow": [...]}}}}, not a {describe(data)}. '
                            "Fix the file or move it aside.")
    start = max(key_at(text, "permissions"), 0)

    def key_line(key: str, inside: bool) -> int | None:
        at = key_at(text, key, start if inside else 0)
        if at < 0 and inside:
            at = key_at(text, key)
        return None if at < 0 else text.count("\n", 0, at) + 1

    perms = data.get("permissions")
    if perms is None:
        perms = {}
    if not isinstance(perms, dict):
        raise SettingsError(f"{at_line(path, key_line('permissions', False))}: 'permissions' must be an "
                            f'object like {{"allow": ["Bash(npm test:*)"], "deny": []}}, '
                            f"not a {describe(perms)}.")
    for kind in KINDS:
        rules = perms.get(kind)
        if rules is None:
            continue
        fix = 'like ["Bash(npm test:*)", "Read"]'
        if not isinstance(rules, list):
            raise SettingsError(f"{at_line(path, key_line(kind, True))}: 'permissions.{kind}' must be a list of "
                                f"rule strings {fix}, not a {describe(rules)}.")
        for n, rule in enumerate(rules, 1):
            if not isinstance(rule, str):
                raise SettingsError(f"{at_line(path, key_line(kind, True))}: 'permissions.{kind}' must be a list "
                                    f"of rule strings {fix}; item {n} is a {describe(rule)}.")
            try:
                parse_rule(rule)
            except RuleSyntaxError as exc:
                at = max(key_at(text, kind, start), start)
                line = line_of(text, json.dumps(rule), at) or line_of(text, json.dumps(rule, ensure_ascii=False), at)
                raise SettingsError(f"Invalid permission rule {rule!r} in {at_line(path, line)}: {exc.why}") from None
            if not (gate and kind == "allow"):  # (checked all the same: a broken file stops the session)
                getattr(out.rules, kind).append(RuleSpec(rule=rule, source=str(path)))

    mode = perms.get("defaultMode")
    if mode is not None:
        try:
            out.default_mode = PermissionMode(mode)
            out.default_mode_source = str(path)
        except (ValueError, TypeError):
            raise SettingsError(f"{at_line(path, key_line('defaultMode', True))}: 'permissions.defaultMode' is "
                                f"{json.dumps(mode)}, which is not a permission mode. Use one of: {MODES}."
                                ) from None

    for key, value, inside in (("permissions.approvalTimeoutSeconds", perms.get("approvalTimeoutSeconds"), True),
                               ("approvalTimeoutSeconds", data.get("approvalTimeoutSeconds"), False)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise SettingsError(f"{at_line(path, key_line('approvalTimeoutSeconds', inside))}: '{key}' must be a "
                                f"positive number of seconds, like 300; it is {json.dumps(value)}.")
        out.approval_timeout_seconds = float(value)
    return strip_gated(data) if gate else data


# --------------------------------------------------------------------------- the hooks key


_INDEX = re.compile(r"\[\d+\]")  # hooks.Stop[0].hooks[1] -> hooks.Stop.hooks: the keys to find lines by


def _hooks(raw: Any, where: "Where") -> HookSet:
    try:
        return parse_hooks(raw, str(where.path))
    except HookConfigError as exc:
        raise SettingsError(f"{where.key(_INDEX.sub('', exc.key))}: {exc}") from None


# --------------------------------------------------------------------------- the sandbox key

_DOMAIN = re.compile(r"(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.?",
                     re.IGNORECASE)
_BOOLS = (("enabled", "enabled"), ("failIfUnavailable", "fail_if_unavailable"))
_PATH_LISTS = (("allowWrite", "allow_write"), ("denyWrite", "deny_write"), ("denyRead", "deny_read"))


def _apply_sandbox(out: SandboxSettings, raw: Any, where: Where, workspace: str, home: str) -> None:
    """Layer one file's ``sandbox`` object onto ``out``: lists grow, booleans are replaced."""
    if raw is None:
        return
    box = _object(raw, "sandbox", where)
    for key, attr in _BOOLS:
        if box.get(key) is not None:
            setattr(out, attr, _boolean(box[key], f"sandbox.{key}", where))
    for command in strings(box.get("excludedCommands"), "sandbox.excludedCommands", where):
        _add(out.excluded_commands, " ".join(command.split()))
    network = _object(box.get("network"), "sandbox.network", where)
    for domain in strings(network.get("allowedDomains"), "sandbox.network.allowedDomains", where):
        _add(out.allowed_domains, _domain(domain, where))
    if network.get("allowAllUnixSockets") is not None:
        out.allow_unix_sockets = _boolean(network["allowAllUnixSockets"], "sandbox.network.allowAllUnixSockets",
                                          where)
    fs = _object(box.get("filesystem"), "sandbox.filesystem", where)
    for key, attr in _PATH_LISTS:
        name = f"sandbox.filesystem.{key}"
        for n, raw_path in enumerate(strings(fs.get(key), name, where), 1):
            if any(ch in raw_path for ch in "*?["):
                raise SettingsError(f"{where.key(name)}: '{name}' item {n} is {json.dumps(raw_path)}: patterns are "
                                    "not supported in sandbox paths. Name the file or directory itself, like "
                                    '"~/.ssh" or "./secrets".')
            _add(getattr(out, attr), _sandbox_path(raw_path, str(where.path.parent), workspace, home))


def _add(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)


def _object(value: Any, name: str, where: Where) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SettingsError(f"{where.key(name)}: '{name}' must be an object like {EXAMPLES[name]}, "
                            f"not a {describe(value)}.")
    return value


def _boolean(value: Any, name: str, where: Where) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(f"{where.key(name)}: '{name}' must be true or false, not a {describe(value)}.")
    return value


def _domain(domain: str, where: Where) -> str:
    if domain == "*" or _DOMAIN.fullmatch(domain):
        return domain.lower().rstrip(".")
    name = "sandbox.network.allowedDomains"
    raise SettingsError(f"{where.key(name)}: '{name}' holds {json.dumps(domain)}, which is not a domain name. "
                        'Use a bare host name like "example.com", "*.example.com" for its subdomains, or "*" for '
                        "any host.")


def _sandbox_path(raw: str, settings_dir: str, workspace: str, home: str) -> str:
    """An absolute path from a settings path (Claude Code's prefixes: ``//``, ``~/``, ``/``, ``./``)."""
    if raw.startswith("//"):
        path = "/" + raw.lstrip("/")
    elif raw == "~" or raw.startswith("~/"):
        path = home + raw[1:]
    elif raw.startswith("~"):
        path = os.path.expanduser(raw)  # ~user/...
    elif raw.startswith("/"):
        path = os.path.join(settings_dir, raw.lstrip("/"))
    else:
        path = os.path.join(workspace, raw)
    return os.path.normpath(path)
