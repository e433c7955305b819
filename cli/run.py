"""``mainsail run PROMPT`` and ``mainsail submit PROMPT``.

``run`` attaches and watches the run to its end; ``--background`` (or
``submit``) prints the session id and returns at once. ``--resume``,
``--continue`` and ``--fork-session`` pick the session; ``-p`` with
``--output-format`` prints what scripts parse.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cli.agents_flag import agents_option, flag_agents
from cli.trust_flag import flag_trust, trust_option
from cli.attach import finish, submit_and_watch, wait_for_memory
from cli.connect import Runtime, connect
from cli.figures import memory_saved_line
from cli.select import pick_session
from cli.slash_commands import read_commands
from cli.standby import ensure_worker, require_model_access
from tasks.dispatch import dispatch
from workflows import keys
from workflows.mcp.sources import McpFlags, read_mcp_config
from workflows.models import PermissionMode
from workflows.permissions.bypass import resumed_mode
from workflows.permissions.settings_files import load_permission_settings
from workflows.model_lifecycle import lifecycle_note
from workflows.pricing import known_price, unknown_price_note
from workflows.session_setup import added_dirs, checked_fallback, unrun_hooks  # noqa: F401  (their old home)
from workflows.session_setup import session_options as new_session_options
from workflows.settings import load_settings

MODES = [m.value for m in PermissionMode]


def permission_options(f):
    """The permission flags shared by the commands that start sessions."""
    f = click.option("--approval-timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
                     help="Deny a permission request nobody answered within this time.")(f)
    f = click.option("--disallowedTools", "--disallowed-tools", "disallowed_tools", multiple=True,
                     metavar="RULES", help="Deny rules, space- or comma-separated (e.g. 'Bash(rm:*)').")(f)
    f = click.option("--allowedTools", "--allowed-tools", "allowed_tools", multiple=True, metavar="RULES",
                     help="Allow rules, space- or comma-separated (e.g. 'Bash(npm test:*) Edit').")(f)
    f = click.option("--permission-mode", type=click.Choice(MODES),
                     help="default | acceptEdits | plan | dontAsk | bypassPermissions.")(f)
    f = click.option("--add-dir", "add_dirs", multiple=True, metavar="DIR",
                     help="A directory outside the workspace that tools may use as if inside it (repeatable).")(f)
    return f


def session_options(f):
    """Choosing, limiting and placing the session."""
    f = agents_option(f)
    f = trust_option(f)
    f = click.option("--cwd", "workspace", type=click.Path(exists=True, file_okay=False, path_type=Path),
                     default=".", help="The session's workspace (default: the current directory).")(f)
    f = click.option("--max-budget-usd", type=click.FloatRange(min=0, min_open=True), metavar="USD",
                     help="Stop the run once it has cost this much.")(f)
    f = click.option("--max-turns", type=click.IntRange(1), help="Stop a run after this many model turns.")(f)
    f = click.option("--fork-session", "fork", is_flag=True, help="With --resume/--continue: work on a copy.")(f)
    f = click.option("-c", "--continue", "continue_", is_flag=True,
                     help="Continue the most recent session of this directory.")(f)
    f = click.option("-r", "--resume", metavar="SID", help="Resume a session (id or unique prefix).")(f)
    f = click.option("--fallback-model", metavar="MODEL",
                     help="Retry a call once with this model when the main one is overloaded (529).")(f)
    f = click.option("--model", help="Model for this session: an alias (opus, sonnet, haiku, opusplan, default) or "
                                     "a model id (default: MAINSAIL_MODEL, ANTHROPIC_MODEL, settings 'model').")(f)
    f = click.option("--append-system-prompt", metavar="TEXT", help="Append TEXT to the system prompt.")(f)
    f = click.option("--system-prompt", metavar="TEXT", help="Replace the default system prompt.")(f)
    f = click.option("--no-memory", "no_memory", is_flag=True,
                     help="No auto-memory: no MEMORY.md in the context, no memory tools, no extraction.")(f)
    f = click.option("--strict-mcp-config", is_flag=True, help="Only the --mcp-config MCP servers.")(f)
    f = click.option("--mcp-config", "mcp_config", multiple=True, metavar="FILE|JSON",
                     help='MCP servers: a file or JSON holding {"mcpServers": {...}} (repeatable).')(f)
    return f


def session_permissions(workspace: Path, permission_mode, allowed_tools, disallowed_tools, approval_timeout,
                        settings, add_dirs=(), fallback_model: str | None = None, setting_sources=None,
                        extra_settings=None, mcp: McpFlags = McpFlags(), ask_trust=None) -> dict:
    """Mode, rules, timeout, sandbox, hooks, model, env, added directories and MCP servers for a new session
    (:func:`workflows.session_setup.session_options`); its warnings are said on stderr. ``--trust-project``
    vouches for the workspace; ``ask_trust``: the trust prompt (interactive mode).

    Raises:
        SettingsError: a settings file, a rule or an --add-dir is wrong; the session does not start.
        McpConfigError: an MCP configuration is malformed; the session does not start.
    """
    perms, warnings = new_session_options(workspace, settings, permission_mode=permission_mode,
                                          allowed_tools=allowed_tools, disallowed_tools=disallowed_tools,
                                          approval_timeout=approval_timeout, add_dirs=add_dirs,
                                          fallback_model=fallback_model, setting_sources=setting_sources,
                                          extra_settings=extra_settings, mcp=mcp, agents=flag_agents(),
                                          trust=flag_trust(), ask_trust=ask_trust)
    for warning in warnings:
        click.secho(f"Warning: {warning}", fg="yellow", err=True)
    return perms


def open_session(rt: Runtime, settings, *, resume, continue_, fork, model, permission_mode, allowed_tools,
                 disallowed_tools, approval_timeout, max_turns, max_budget_usd, workspace: Path,
                 system_prompt: str | None = None, append_system_prompt: str | None = None,
                 no_memory: bool = False, asks: str = "wait", sid: str | None = None, add_dirs=(),
                 fallback_model: str | None = None, setting_sources=None, extra_settings=None,
                 mcp: McpFlags = McpFlags(), watched: bool = False) -> str:
    """The session these flags name (resumed, continued or forked, with the flags applied), or a new one.

    ``asks``: who answers its calls that would ask from now on ("deny": nobody, as in print mode).
    ``sid``: the id of the new session (Claude Code's --session-id); it must not exist yet.
    ``setting_sources``, ``extra_settings``: Claude Code's --setting-sources and --settings (a new session).
    ``mcp``: --mcp-config and --strict-mcp-config (a resumed session keeps its servers; these are added).
    ``watched``: the command shows the transcript as it runs (see :func:`warn_about_model`).
    """
    if sid is not None:
        if resume or continue_:
            raise click.UsageError("--session-id starts a new session; it cannot go with --resume or --continue "
                                   "(unless --fork-session names the copy's id, which Mainsail does not do).")
        if rt.store.r.exists(keys.session(sid)):
            raise click.UsageError(f"Session ID {sid} is already in use.")
    new = sid
    sid = None if new else pick_session(rt, resume=resume, continue_=continue_, fork=fork, workspace=workspace)
    if sid is None:
        perms = session_permissions(workspace, permission_mode, allowed_tools, disallowed_tools,
                                    approval_timeout, settings, add_dirs, fallback_model, setting_sources,
                                    extra_settings, mcp)
        rec = rt.engine.create_session(str(workspace), max_turns=max_turns, max_budget_usd=max_budget_usd,
                                       system_prompt=system_prompt, append_system_prompt=append_system_prompt,
                                       auto_memory=False if no_memory else None, asks=asks, sid=new, **perms)
        warn_about_model(rec, lifecycle=not watched)
        read_commands(rt, rec.id)
        return rec.id
    rec = apply_flags(rt, sid, model=model, permission_mode=permission_mode, allowed_tools=allowed_tools,
                      disallowed_tools=disallowed_tools, approval_timeout=approval_timeout, max_turns=max_turns,
                      max_budget_usd=max_budget_usd, workspace=workspace, add_dirs=add_dirs,
                      fallback_model=fallback_model, mcp=mcp, extra_settings=extra_settings)
    warn_about_model(rec, lifecycle=not watched)
    rt.engine.update_limits(sid, auto_memory=False if no_memory else None, asks=asks)
    rt.engine.mark_session_start(sid, "resume", rec)  # SessionStart(resume) before its next prompt, if configured
    read_commands(rt, sid)
    return sid


def session_model(rt: Runtime, resume: str | None, continue_: bool, workspace: Path, settings) -> str:
    """The model the session these flags name uses (a new one: the configured model); creates nothing."""
    from cli.select import latest_in

    if resume or continue_:
        sid = rt.store.resolve_session(resume) if resume else latest_in(rt, workspace)
        return rt.store.get_session(sid).model
    return settings.model


def warn_about_model(rec, *, lifecycle: bool = True) -> None:
    """Say once, at the start, that the session's model has no price (its cost will show as unknown), or is
    near or past its end of life (workflows/model_lifecycle.py). ``lifecycle`` False: the command shows the
    transcript as it runs, where the session says the latter itself (at its first call), so not twice."""
    sent = rec.sent_model()
    if not known_price(sent):
        click.secho(f"Warning: {unknown_price_note(sent)}", fg="yellow", err=True)
    if lifecycle and (note := lifecycle_note(sent)):
        click.secho(f"Warning: {note}", fg="yellow", err=True)


def apply_flags(rt: Runtime, sid: str, *, model=None, permission_mode=None, allowed_tools=(), disallowed_tools=(),
                approval_timeout=None, max_turns=None, max_budget_usd=None, workspace: Path, add_dirs=(),
                fallback_model=None, mcp: McpFlags = McpFlags(), extra_settings=None):
    """Apply a resume's flags to an existing session: model, mode, limits; flag rules, --add-dir and
    --mcp-config servers join its own. The mode is chosen by :func:`workflows.permissions.bypass.resumed_mode`
    (a refused bypassPermissions becomes the next mode, with a warning); a ``--settings`` layer that
    disables bypass joins the session's own. ``--trust-project`` is said to apply to new sessions only: a
    session keeps the settings it started with."""
    if flag_trust() and rt.store.get_session(sid).untrusted_workspace:
        from workflows.trust.decide import workspace_trust

        workspace_trust(workspace.resolve(), Path.home(), grant=flag_trust())  # recorded for the next sessions
        click.secho(f"Warning: --trust-project applies to new sessions: session {sid[:8]} keeps the settings it "
                    "started with (without the workspace's own); the trust is recorded for the next ones.",
                    fg="yellow", err=True)
    rec = rt.engine.set_model(sid, model) if model else None
    permission_mode, disabled_by = resume_mode(rt, sid, permission_mode, workspace, extra_settings)
    if mcp.configs:
        rec = rt.engine.add_mcp_servers(sid, [s for value in mcp.configs for s in read_mcp_config(value, os.environ)])
    if add_dirs or fallback_model:
        rec = rt.engine.update_limits(sid, additional_directories=added_dirs([], add_dirs),
                                      fallback_model=checked_fallback(fallback_model, (rec or rt.store.get_session(sid)).model))
    flag_rules = None
    if allowed_tools or disallowed_tools:
        flag_rules = load_permission_settings(workspace.resolve(), Path.home(), allowed_tools=list(allowed_tools),
                                              disallowed_tools=list(disallowed_tools)).rules
        flag_rules.allow = [r for r in flag_rules.allow if r.source == "--allowedTools"]
        flag_rules.deny = [r for r in flag_rules.deny if r.source == "--disallowedTools"]
        flag_rules.ask = []
    if any(v is not None for v in (permission_mode, flag_rules, approval_timeout, max_turns, max_budget_usd,
                                   disabled_by)):
        rec = rt.engine.update_limits(sid, max_turns=max_turns, max_budget_usd=max_budget_usd,
                                      permission_mode=permission_mode, rules=flag_rules,
                                      approval_timeout_seconds=approval_timeout, bypass_disabled_by=disabled_by)
    return rec or rt.store.get_session(sid)


def resume_mode(rt: Runtime, sid: str, permission_mode, workspace: Path, extra_settings=None):
    """The mode to set on a session taken up again (None: keep its own) and the ``--settings`` layers
    that disable bypassPermissions (None: none); a refused bypassPermissions is said on stderr."""
    disabled_by = None
    if extra_settings:
        disabled_by = load_permission_settings(workspace.resolve(), Path.home(), sources=(),
                                               extra=extra_settings).bypass_disabled_by or None
    mode, warnings = resumed_mode(rt.store.get_session(sid), permission_mode, disabled_by or ())
    for warning in warnings:
        click.secho(f"Warning: {warning}", fg="yellow", err=True)
    return mode, disabled_by


def asks_in_print_mode(settings, approval_timeout) -> str:
    """Print mode asks nobody, as Claude Code's -p: a call that would ask is denied and listed in the
    result. An approval timeout (flag or MAINSAIL_APPROVAL_TIMEOUT_SECONDS) makes it wait that long for
    an answer from another shell (`mainsail approve`) instead."""
    return "wait" if (approval_timeout or settings.approval_timeout_seconds) else "deny"


@click.command("run")
@click.argument("prompt", required=False)
@click.option("-p", "--print", "print_mode", is_flag=True, help="Print only the final answer (for scripts).")
@click.option("--output-format", type=click.Choice(["text", "json", "stream-json"]), default="text",
              show_default=True, help="With -p: the final answer, one result object, or NDJSON events.")
@click.option("--input-format", type=click.Choice(["text", "stream-json"]), default="text", show_default=True,
              help="stream-json: NDJSON user messages on stdin, one run each (with --output-format stream-json, "
                   "read as they arrive, with Claude Code's control requests).")
@click.option("--background", is_flag=True, help="Print the session id and return at once (like submit).")
@session_options
@permission_options
def run(prompt: str | None, print_mode: bool, output_format: str, input_format: str, background: bool,
        model, resume, continue_, fork, max_turns, max_budget_usd, workspace: Path, permission_mode,
        allowed_tools, disallowed_tools, approval_timeout, system_prompt, append_system_prompt,
        no_memory, add_dirs, fallback_model, mcp_config, strict_mcp_config) -> None:
    """Run PROMPT in a session and watch it until it finishes."""
    mcp = McpFlags(tuple(mcp_config), strict_mcp_config)
    if input_format == "stream-json" and output_format == "stream-json" and not background:
        from cli.headless.session import PrintRun

        # A conversation: stdin read as it arrives, control requests answered (cli/headless/stream.py).
        PrintRun(prompt=None, output_format="stream-json", streaming=True, model=model, resume=resume,
                 continue_=continue_, fork=fork, session_id=None, max_turns=max_turns, max_budget_usd=max_budget_usd,
                 permission_mode=permission_mode, allowed_tools=allowed_tools, disallowed_tools=disallowed_tools,
                 approval_timeout=approval_timeout, system_prompt=system_prompt,
                 append_system_prompt=append_system_prompt, no_memory=no_memory, tools=None, prompt_tool=False,
                 partial_messages=False, replay_user_messages=False, workspace=workspace, add_dirs=add_dirs,
                 fallback_model=fallback_model, mcp=mcp).run()
        return
    if input_format == "stream-json":
        from cli.output import read_stream_json_input

        try:
            prompts = list(read_stream_json_input(sys.stdin))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        if not prompts:
            raise click.UsageError("--input-format stream-json read no user message from stdin.")
    elif not prompt:
        raise click.UsageError("Missing PROMPT (or use --input-format stream-json, or `mainsail` for "
                               "interactive mode).")
    else:
        prompts = [prompt]
    if output_format != "text":
        print_mode = True
    settings = load_settings(model=model)
    rt = connect(settings, dispatching=True)
    try:
        # Before anything is created: a refusal must not leave an empty session behind.
        require_model_access(rt, settings, model or session_model(rt, resume, continue_, workspace, settings))
        sid = open_session(rt, settings, resume=resume, continue_=continue_, fork=fork, model=model,
                           permission_mode=permission_mode, allowed_tools=allowed_tools,
                           disallowed_tools=disallowed_tools, approval_timeout=approval_timeout,
                           max_turns=max_turns, max_budget_usd=max_budget_usd, workspace=workspace,
                           system_prompt=system_prompt, append_system_prompt=append_system_prompt,
                           no_memory=no_memory, add_dirs=add_dirs, fallback_model=fallback_model, mcp=mcp,
                           asks=asks_in_print_mode(settings, approval_timeout) if print_mode else "wait",
                           watched=not (print_mode or background))
        if background:
            for p in prompts:
                dispatch(rt.engine.submit(sid, p))
            _background_note(rt, sid)
            return
        ensure_worker(rt, settings, quiet=print_mode, sid=sid)
        result = None
        stream = _stream_writer(rt, sid) if output_format == "stream-json" else None
        for p in prompts:
            result = submit_and_watch(rt, sid, p, print_mode=print_mode, stream=stream)
            if result.is_error:
                break
        if rt.worker is not None:
            saving = rt.store.get_session(sid).saving_memory()
            wait_for_memory(rt, sid, quiet=print_mode)
            if saving and not print_mode and output_format == "text":
                click.secho(memory_saved_line(rt.store.get_session(sid)), dim=True, err=True)
    finally:
        rt.close()
    if output_format == "json":
        import json

        from cli.output import result_json

        click.echo(json.dumps(result_json(result)))
        if result.is_error:
            sys.exit(1)
        return
    if output_format == "stream-json":
        if result.is_error:
            sys.exit(1)
        return
    finish(result, print_mode)


@click.command("submit")
@click.argument("prompt")
@session_options
@permission_options
def submit(prompt: str, model, resume, continue_, fork, max_turns, max_budget_usd, workspace: Path,
           permission_mode, allowed_tools, disallowed_tools, approval_timeout, system_prompt,
           append_system_prompt, no_memory, add_dirs, fallback_model, mcp_config, strict_mcp_config) -> None:
    """Submit PROMPT and return at once, printing the session id (watch it with `mainsail watch`)."""
    settings = load_settings(model=model)
    rt = connect(settings, dispatching=True)
    require_model_access(rt, settings, model or session_model(rt, resume, continue_, workspace, settings))
    sid = open_session(rt, settings, resume=resume, continue_=continue_, fork=fork, model=model,
                       permission_mode=permission_mode, allowed_tools=allowed_tools,
                       disallowed_tools=disallowed_tools, approval_timeout=approval_timeout,
                       max_turns=max_turns, max_budget_usd=max_budget_usd, workspace=workspace,
                       system_prompt=system_prompt, append_system_prompt=append_system_prompt,
                       no_memory=no_memory, add_dirs=add_dirs, fallback_model=fallback_model,
                       mcp=McpFlags(tuple(mcp_config), strict_mcp_config))
    dispatch(rt.engine.submit(sid, prompt))
    _background_note(rt, sid)


def _background_note(rt: Runtime, sid: str) -> None:
    click.echo(sid)
    if not ({"model", "tools"} <= rt.store.live_queues()):
        click.echo("No worker is listening: the session waits in its queue until you start `mainsail worker`.",
                   err=True)
    click.echo(f"Watch it with: mainsail watch {sid[:8]}", err=True)


def _stream_writer(rt: Runtime, sid: str):
    from cli.output import StreamJson
    from workflows.context import offered_tools

    stream = StreamJson(sys.stdout.write, sys.stdout.flush)

    def init() -> None:  # when the prompt's entry arrives: its MCP servers were found before it
        rec = rt.store.get_session(sid)
        stream.init(rec, offered_tools(rec), slash_commands=list(rt.store.commands(sid)))

    stream.on_prompt = init
    return stream


__all__ = ["run", "submit", "open_session", "session_permissions", "permission_options", "session_options",
           "load_permission_settings"]
