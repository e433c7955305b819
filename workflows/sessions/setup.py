"""What a new session starts with: mode, rules, timeout, sandbox, hooks, model, env, added
directories and MCP servers, read from the flags a client gave, then ``MAINSAIL_*``, then the
settings files of the workspace and of the user.

One path for every client that starts a session: the CLI (``mainsail run``/``submit``), the team
server's ``POST /api/sessions`` and a schedule's firing all call :func:`session_options`, so a
session started from a browser gets the same rules, hooks and sandbox as one started at a terminal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from workflows.exceptions import ScopeMissing
from workflows.mcp.sources import McpFlags, load_mcp
from workflows.models import OutputStyle, PermissionMode, SessionRecord
from workflows.models.model_names import model_overrides
from workflows.models.model_names import session_model as new_session_model
from workflows.models.model_names import valid_name
from workflows.models.options import SessionOptions, SessionSetup
from workflows.permissions.bypass import choose_mode, file_refusals, trusted_default
from workflows.permissions.protected_writes import PROTECTED_NAMES, always_problem
from workflows.permissions.rules.rules import split_rules
from workflows.plugins import load_plugins, plugin_hooks
from workflows.plugins.load import plugin_servers
from workflows.sessions.session_keys import resolve_added_dir
from workflows.sessions.settings_files import load_permission_settings
from workflows.settings.errors import SettingsError
from workflows.styles import DEFAULT_STYLE, load_styles
from workflows.trust.decide import vouches, workspace_trust


def session_options(workspace: Path, settings, *, permission_mode=None, allowed_tools=(), disallowed_tools=(),
                    approval_timeout=None, add_dirs=(), fallback_model: str | None = None, setting_sources=None,
                    extra_settings=None, mcp: McpFlags = McpFlags(), agents=None, home: Path | None = None,
                    environ: Mapping[str, str] | None = None, cwd: str | None = None, token=None,
                    mode_given_by: str = "--permission-mode", trust: str | None = None, plugin_dirs=(),
                    ask_trust: Callable[[list[str]], bool] | None = None) -> tuple[dict, list[str]]:
    """The keyword arguments of :meth:`Engine.create_session` for a new session in ``workspace``, and the
    warnings to show (settings keys read but not applied, hooks for events that never run).

    ``add_dirs`` are resolved from ``cwd`` (default: this process's); ``agents``: sub-agent types
    given by the client (``--agents``, the SDK's ``agents``).

    The mode is the first of ``permission_mode`` (given by ``mode_given_by``), ``MAINSAIL_PERMISSION_MODE``
    and the files' ``defaultMode`` that :mod:`workflows.permissions.bypass` allows, else ``default``: a
    bypassPermissions that ``disableBypassPermissionsMode`` refuses is skipped with a warning, as in
    Claude Code, and so is a project's (or local) file's ``defaultMode: bypassPermissions`` (only the
    user's files and ``--settings`` may grant it). ``token``: the team server's caller (its scope is
    checked, never fallen back from).

    Workspace trust (:func:`workflows.trust.decide.workspace_trust`): the project's settings that can run
    code or widen access apply only to a trusted workspace. ``trust``: who vouches for it now (``--trust-project``,
    an API token or a schedule made with it); else a token made with ``--trust-project`` vouches for its
    workspaces; ``ask_trust``: the trust prompt (interactive mode).

    Raises:
        SettingsError: a settings file, a rule, an --add-dir or the model name is wrong.
        McpConfigError: an MCP configuration is malformed.
        BypassDisabled: ``token`` may not start a session in the bypassPermissions mode asked for.
        ScopeMissing: ``token`` (without the admin scope) gives ``allowed_tools`` that would let a call
            write a protected path without asking (:func:`require_admin_for_rules`).
    """
    home = home or Path.home()
    environ = os.environ if environ is None else environ
    ws = workspace.resolve()
    if (trust is None and token is not None and token.trust_project and token.workspaces
            and token.allows_workspace(str(ws))):
        trust = f"API token {token.name!r} (made with --trust-project)"
    trusted = workspace_trust(ws, home, grant=trust, ask=ask_trust)
    files = load_permission_settings(ws, home, allowed_tools=list(allowed_tools),
                                     disallowed_tools=list(disallowed_tools), sources=setting_sources,
                                     extra=extra_settings, trusted=trusted.opens)
    plugins = load_plugins(list(plugin_dirs), cwd or os.getcwd())
    vouched = vouches(trusted, str(ws), home, trust)
    hooks, plugin_warnings = plugin_hooks(plugins, str(ws), vouched)
    plugin_mcp, withheld = plugin_servers(plugins, str(ws), vouched, environ)
    servers = load_mcp(ws, home, files.mcp, flags=list(mcp.configs), strict=mcp.strict,
                       trusted=trusted.mcp_trusted, plugins=plugin_mcp)
    trusted.check_unchanged(ws)
    plugin_warnings += withheld
    # Kept in the session: every file (whatever --setting-sources chose) and --settings layer disabling bypass.
    disabled = list(dict.fromkeys([*files.bypass_disabled_by,
                                   *(r.source for r in file_refusals(str(ws), str(home)) if not r.problem)]))
    default_mode, untrusted = trusted_default(files.default_mode, files.default_mode_layer, files.default_mode_source)
    mode, refused = choose_mode([(permission_mode, mode_given_by),
                                 (settings.permission_mode, "MAINSAIL_PERMISSION_MODE"),
                                 (default_mode, f"defaultMode in {files.default_mode_source}")],
                                workspace=str(ws), home=str(home), recorded=disabled, token=token)
    if mode is not PermissionMode.DEFAULT:
        untrusted = []  # (another mode was asked for: the ignored defaultMode changed nothing)
    style, style_warnings = pick_style(ws, home, files.output_style, plugins)
    warnings = (trusted.warnings + refused + untrusted + files.warnings + servers.warnings + unrun_hooks(files.hooks)
                + style_warnings + plugin_warnings)
    timeout = approval_timeout or settings.approval_timeout_seconds or files.approval_timeout_seconds
    explicit = settings.model if "model" in settings.model_fields_set else None
    model = new_session_model(explicit, environ, files.model, files.model_env, settings.model)
    if not valid_name(model):
        raise SettingsError(f"Invalid model name {model!r}: use an alias (opus, sonnet, haiku, opusplan, default) "
                            "or a model id like claude-opus-5-5.")
    perms = {"permission_mode": mode, "rules": files.rules, "approval_timeout_seconds": timeout,
             "home": str(home), "sandbox": files.sandbox, "hooks": files.hooks.merged(hooks), "model": model,
             "env": files.env,
             "model_overrides": model_overrides(environ, files.model_env),
             "additional_directories": added_dirs(files.additional_directories, add_dirs, cwd=cwd, home=home),
             "fallback_model": checked_fallback(fallback_model, model), "agents": agents,
             "mcp_servers": servers.servers, "bypass_disabled_by": disabled,
             "untrusted_workspace": not trusted.trusted, "output_style": style, "plugins": plugins}
    if token is not None and not token.admin and allowed_tools:
        require_admin_for_rules(token, split_rules(list(allowed_tools)), ws, perms)
    return perms, warnings


def require_admin_for_rules(token, rules: list[str], ws: Path, perms: dict) -> None:
    """Refuse allow rules given by ``token`` (without the admin scope) that would let a call of the new
    session write a protected path without asking (:func:`~workflows.permissions.protected_writes.
    always_problem`, as for an "always" answer).

    Raises:
        ScopeMissing: one would; the message names the token, the rule, the path and the fix.
    """
    probe = SessionRecord(id="new-session", model=perms["model"], workspace=str(ws), home=perms["home"],
                          permission_mode=perms["permission_mode"], rules=perms["rules"], sandbox=perms["sandbox"],
                          additional_directories=perms["additional_directories"])
    why = always_problem(rules, probe)
    if why is not None:
        raise ScopeMissing(f"Token {token.name!r} may not give its session the allowed tools {', '.join(rules)}: "
                           f"{why}, and allowing a write to {PROTECTED_NAMES} needs the admin scope, which the "
                           f"token lacks. Leave the rule out (the session then asks, and a person approves), or "
                           f"have the server's admin give the token the scope: `mainsail token update "
                           f"{token.name} --admin`.")


def unrun_hooks(hooks) -> list[str]:
    """A line for each configured hook event Mainsail does not run yet (never ignored silently)."""
    from workflows.models.hooks import RUN_EVENTS

    events = sorted(e.value for e, groups in hooks.events.items()
                    if e not in RUN_EVENTS and any(g.hooks for g in groups))
    if not events:
        return []
    return [f"hooks for {', '.join(events)} are configured, but Mainsail does not run that event, so they never "
            "fire; every other hook event runs."]


def pick_style(ws: Path, home: Path, name: str | None, plugins=()) -> tuple[OutputStyle | None, list[str]]:
    """The output style the settings' ``outputStyle`` names (None: default), and the warnings: a style file left
    out, or a name no style has (the session then keeps the default style)."""
    if name is None or name == DEFAULT_STYLE:
        return None, []
    found = load_styles(str(ws), str(home), tuple(plugins))
    warnings = [f"output style {p}" for p in found.problems]
    if name not in found.styles:
        return None, warnings + [f"outputStyle {name!r} names no output style (there are: {', '.join(found.names())}); "
                                 "the default style is used. Add .claude/output-styles/NAME.md or fix the name."]
    return found.styles[name], warnings


def added_dirs(from_settings: list[str], flags, *, cwd: str | None = None, home: Path | None = None) -> list[str]:
    """The settings files' additionalDirectories, then each ``--add-dir`` (resolved from ``cwd``).

    Raises:
        SettingsError: an --add-dir that is not an existing directory (or is /).
    """
    out = list(from_settings)
    for raw in flags or ():
        try:
            path = resolve_added_dir(raw, cwd=cwd or os.getcwd(), home=str(home or Path.home()))
        except ValueError as exc:
            raise SettingsError(f"Invalid --add-dir: {exc}. Name an existing directory.") from None
        if path not in out:
            out.append(path)
    return out


def checked_fallback(fallback: str | None, model: str) -> str | None:
    """``--fallback-model``, refused when it is the main model (as Claude Code does)."""
    if fallback and fallback.strip() == model.strip():
        raise SettingsError(f"--fallback-model {fallback} is the session's model too. Name a different model, "
                            "or leave --fallback-model out.")
    return fallback or None




@dataclass
class Resolved:
    """A new session's options resolved once (:func:`resolve`): what :meth:`Engine.create_session` takes."""

    options: SessionOptions  # the mode, model, fallback, approval timeout and agents as resolved
    setup: SessionSetup  # what the settings files add
    home: str
    warnings: list[str] = field(default_factory=list)


#: The options :func:`session_options` resolves (the rest of what it returns is the :class:`SessionSetup`).
RESOLVED_OPTIONS = ("permission_mode", "model", "approval_timeout_seconds", "fallback_model", "agents")


def resolve(workspace: Path, settings, options: SessionOptions, **how) -> Resolved:
    """``options`` resolved for a new session in ``workspace`` against ``MAINSAIL_*`` and the settings files
    (:func:`session_options`; ``how``: its ``home``, ``environ``, ``cwd``, ``token``, ``mode_given_by``,
    ``ask_trust``). ``options.model`` counts as given explicitly, as ``--model``."""
    if options.model:
        settings = settings.model_copy(update={"model": options.model})
    perms, warnings = session_options(
        workspace, settings, permission_mode=options.permission_mode, allowed_tools=options.allowed_tools,
        disallowed_tools=options.disallowed_tools, approval_timeout=options.approval_timeout_seconds,
        add_dirs=options.add_dirs, fallback_model=options.fallback_model, setting_sources=options.setting_sources,
        extra_settings=options.extra_settings, mcp=McpFlags(tuple(options.mcp_configs), options.strict_mcp_config),
        agents=options.agents, trust=options.trust, plugin_dirs=options.plugin_dirs, **how)
    home = perms.pop("home")
    resolved = options.model_copy(update={k: perms.pop(k) for k in RESOLVED_OPTIONS})
    return Resolved(resolved, SessionSetup(**perms), home, warnings)


__all__ = ["Resolved", "resolve", "session_options", "unrun_hooks", "added_dirs", "checked_fallback"]
