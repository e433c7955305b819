"""``mainsail run PROMPT`` and ``mainsail submit PROMPT``.

``run`` attaches and watches the run to its end; ``--background`` (or
``submit``) prints the session id and returns at once. ``submit`` is one definition for both modes: it
calls the client protocol (cli/clients/), on Redis or through a team server. ``--resume``,
``--continue`` and ``--fork-session`` pick the session; ``-p`` with
``--output-format`` prints what scripts parse.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.agents_flag import agents_option
from cli.attach import finish, submit_and_watch, wait_for_memory
from cli.clients import client_for
from cli.connect import Runtime, connect
from cli.figures import memory_saved_line
from cli.opening import MODES, asks_in_print_mode, background_note, flag_options, open_session, session_model
from cli.session_service import service
from cli.standby import ensure_worker, require_model_access
from cli.trust_flag import trust_option
from workflows.mcp.sources import McpFlags
from workflows.settings import load_settings


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
        options = flag_options(
            model=model, permission_mode=permission_mode, allowed_tools=allowed_tools,
            disallowed_tools=disallowed_tools, approval_timeout=approval_timeout, add_dirs=add_dirs, mcp=mcp,
            max_turns=max_turns, max_budget_usd=max_budget_usd, system_prompt=system_prompt,
            append_system_prompt=append_system_prompt, no_memory=no_memory, fallback_model=fallback_model)
        PrintRun(prompt=None, output_format="stream-json", streaming=True, options=options, resume=resume,
                 continue_=continue_, fork=fork, workspace=workspace).run()
        return
    if input_format == "stream-json":
        from cli.stream_input import read_stream_json_input

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
    rt = connect(settings)
    try:
        # Before anything is created: a refusal must not leave an empty session behind.
        require_model_access(rt, settings, model or session_model(rt, resume, continue_, workspace, settings))
        options = flag_options(
            model=model, permission_mode=permission_mode, allowed_tools=allowed_tools,
            disallowed_tools=disallowed_tools, approval_timeout=approval_timeout, add_dirs=add_dirs, mcp=mcp,
            max_turns=max_turns, max_budget_usd=max_budget_usd, system_prompt=system_prompt,
            append_system_prompt=append_system_prompt, no_memory=no_memory, fallback_model=fallback_model,
            asks=asks_in_print_mode(settings, approval_timeout) if print_mode else "wait")
        sid = open_session(rt, settings, options, resume=resume, continue_=continue_, fork=fork, workspace=workspace,
                           watched=not (print_mode or background))
        if background:
            for p in prompts:
                service(rt).submit(sid, p)
            background_note(rt, sid)
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
    client_for().submit(prompt, model=model, resume=resume, continue_=continue_, fork=fork, max_turns=max_turns,
                        max_budget_usd=max_budget_usd, workspace=workspace, permission_mode=permission_mode,
                        allowed_tools=allowed_tools, disallowed_tools=disallowed_tools,
                        approval_timeout=approval_timeout, system_prompt=system_prompt,
                        append_system_prompt=append_system_prompt, no_memory=no_memory, add_dirs=add_dirs,
                        fallback_model=fallback_model, mcp_config=mcp_config, strict_mcp_config=strict_mcp_config)


def _stream_writer(rt: Runtime, sid: str):
    from cli.output import StreamJson
    from workflows.context.assemble import offered_tools

    stream = StreamJson(sys.stdout.write, sys.stdout.flush)

    def init() -> None:  # when the prompt's entry arrives: its MCP servers were found before it
        rec = rt.store.get_session(sid)
        stream.init(rec, offered_tools(rec), commands=rt.store.commands(sid))

    stream.on_prompt = init
    return stream


__all__ = ["run", "submit", "permission_options", "session_options"]
