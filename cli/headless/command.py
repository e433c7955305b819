"""``mainsail [PROMPT] [FLAGS]``: Claude Code's own command line.

``mainsail`` opens interactive mode, with PROMPT as its first message when given; ``-p``
(or stdin that is not a terminal, or ``--input-format stream-json``, as the Agent SDK starts
it) is print mode. Every flag the Agent SDK passes is accepted: those Mainsail honours do what
Claude Code's do; the others are refused with one line naming the flag (:data:`REFUSED`), never
ignored. Mainsail's own subcommands (``run``, ``watch``, ``approve``...) stay: cli/main.py sends
an argument list here only when its first word is not one of them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.agents_flag import agents_option
from cli.opening import MODES, flag_options
from cli.trust_flag import trust_option
from workflows.mcp.sources import McpFlags

#: Flags of Claude Code that Mainsail does not do (yet): flag -> (takes a value, why).
REFUSED: dict[str, tuple[bool, str]] = {
    "--betas": (True, "API betas are not supported"),
    "--max-thinking-tokens": (True, "extended thinking is not supported yet"),
    "--thinking": (True, "extended thinking is not supported yet"),
    "--thinking-display": (True, "extended thinking is not supported yet"),
    "--effort": (True, "effort levels are not supported"),
    "--task-budget": (True, "task budgets are not supported"),
    "--include-hook-events": (False, "hook events are not streamed yet"),
    "--resume-session-at": (True, "resuming at a message is not supported"),
    "--resume-drops-turn": (True, "resuming at a message is not supported"),
    "--session-mirror": (False, "session mirroring is not supported"),
    "--ide": (False, "IDE integration is not supported"),
}


def _refuse(ctx: click.Context, param: click.Parameter, value):
    if value in (None, False, ()):
        return value
    flag = param.opts[0]
    why = REFUSED[flag][1]
    raise click.UsageError(f"{flag} is not supported by Mainsail: {why}. Drop the flag (or the SDK option "
                           "that passes it).")


def refused_options(f):
    for flag, (takes_value, _) in REFUSED.items():
        f = click.option(flag, is_flag=not takes_value, multiple=takes_value, expose_value=False,
                         callback=_refuse, hidden=True)(f)
    return f


def _tool_names(value: str | None) -> list[str] | None:
    """``--tools``: "" none, "default" all, else a comma- or space-separated list of known tools."""
    if value is None or value.strip() == "default":
        return None
    from workflows.tools import REGISTRY

    names = [n for n in value.replace(",", " ").split() if n]
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise click.UsageError(f"--tools names unknown tool(s) {', '.join(unknown)}; Mainsail's tools: "
                               f"{', '.join(sorted(REGISTRY))} (or \"default\" for all, \"\" for none).")
    return names


def _mcp_flags(values: tuple[str, ...], strict: bool) -> McpFlags:
    """``--mcp-config`` (each a JSON object, or file paths: Claude Code takes several, space-separated) and
    ``--strict-mcp-config`` (alone: no MCP server at all), checked now: a bad one is refused before anything
    starts."""
    import os

    from workflows.exceptions import McpConfigError
    from workflows.mcp.sources import read_mcp_config

    configs = tuple(c for value in values for c in ([value] if value.lstrip().startswith("{") else value.split()))
    for config in configs:
        try:
            read_mcp_config(config, os.environ)
        except McpConfigError as exc:
            raise click.UsageError(str(exc)) from None
    return McpFlags(configs, strict)


def _sources(value: str | None) -> list[str] | None:
    """``--setting-sources``: a comma-separated subset of user, project, local ("" reads none)."""
    if value is None:
        return None
    from workflows.settings.layers import SOURCES

    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise click.UsageError(f"--setting-sources names unknown source(s) {', '.join(unknown)}; use a "
                               f"comma-separated list of {', '.join(SOURCES)}.")
    return names


def _json_schema(value: str | None) -> dict | None:
    """``--json-schema``: the JSON Schema of the structured output (the Agent SDK's ``output_format``)."""
    if value is None:
        return None
    import json

    from workflows.tools.structured import check_schema

    try:
        return check_schema(json.loads(value))
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"--json-schema is not valid JSON: {exc.msg} at column {exc.colno}.") from None
    except ValueError as exc:
        raise click.UsageError(f"{exc}.") from None


def _settings_layer(value: str | None) -> list[tuple[str, str]] | None:
    """``--settings``: a settings file's path, or its JSON inline."""
    if value is None:
        return None
    if value.lstrip().startswith("{"):
        return [("--settings (inline JSON)", value)]
    return [(f"--settings {value}", _read_file("--settings", value))]


def client_environment() -> dict[str, dict[str, str]]:
    """This process's environment, as a new session keeps it for its workers (Claude Code's tools and model calls
    see its own: :mod:`workflows.sessions.client_env`)."""
    import os

    from workflows.sessions.client_env import client_env, model_env

    return {"env": client_env(os.environ), "model_env": model_env(os.environ)}


def _read_file(flag: str, path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise click.UsageError(f"{flag} {path}: cannot read it ({exc.strerror}).") from None


@click.command("mainsail", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("prompt", required=False)
@click.option("-p", "--print", "print_mode", is_flag=True, help="Print the response and exit (for scripts).")
@click.option("--output-format", type=click.Choice(["text", "json", "stream-json"]), default="text")
@click.option("--input-format", type=click.Choice(["text", "stream-json"]), default="text")
@click.option("--verbose", is_flag=True, help="Required with --print --output-format stream-json, as in Claude Code.")
@click.option("--system-prompt", metavar="TEXT")
@click.option("--system-prompt-file", metavar="FILE")
@click.option("--append-system-prompt", metavar="TEXT")
@click.option("--append-system-prompt-file", metavar="FILE")
@click.option("--allowedTools", "--allowed-tools", "allowed_tools", multiple=True, metavar="RULES")
@click.option("--disallowedTools", "--disallowed-tools", "disallowed_tools", multiple=True, metavar="RULES")
@click.option("--tools", metavar="TOOLS", help='The tools offered to the model: "default", "" (none), or names.')
@click.option("--max-turns", type=click.IntRange(1))
@click.option("--max-budget-usd", type=click.FloatRange(min=0, min_open=True))
@click.option("--model")
@click.option("--fallback-model", metavar="MODEL", help="Retry once with MODEL when the model is overloaded.")
@click.option("--add-dir", "add_dirs", multiple=True, metavar="DIR",
              help="Another directory the session may work in, as if inside the workspace.")
@click.option("--permission-mode", type=click.Choice(MODES))
@click.option("--dangerously-skip-permissions", is_flag=True, help="Same as --permission-mode bypassPermissions.")
@click.option("--allow-dangerously-skip-permissions", is_flag=True, hidden=True)
@click.option("-c", "--continue", "continue_", is_flag=True)
@click.option("-r", "--resume", is_flag=False, flag_value="", default=None, metavar="[ID]")
@click.option("--fork-session", "fork", is_flag=True)
@click.option("--session-id", metavar="UUID")
@click.option("--settings", "extra_settings", metavar="FILE|JSON",
              help="More settings (a file, or JSON), above the settings files.")
@click.option("--setting-sources", metavar="user,project,local", help="Which settings files to read.")
@click.option("--json-schema", "json_schema", metavar="JSON",
              help="The JSON Schema of a structured output the model must give (the StructuredOutput tool).")
@click.option("--include-partial-messages", is_flag=True)
@click.option("--replay-user-messages", is_flag=True)
@click.option("--permission-prompt-tool", metavar="stdio")
@click.option("--approval-timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS")
@click.option("--no-memory", "no_memory", is_flag=True)
@agents_option
@trust_option
@click.option("--mcp-config", "mcp_config", multiple=True, metavar="FILE|JSON",
              help="MCP servers: a file or JSON string holding {\"mcpServers\": {...}} (repeatable).")
@click.option("--strict-mcp-config", is_flag=True, help="Only the --mcp-config servers, none from other files.")
@click.option("--plugin-dir", "plugin_dirs", multiple=True, metavar="DIR",
              help="Load the plugin in DIR: its commands, skills, agents, output styles and hooks (repeatable).")
@refused_options
def main_command(prompt, print_mode, output_format, input_format, verbose, system_prompt, system_prompt_file,
                 append_system_prompt, append_system_prompt_file, allowed_tools, disallowed_tools, tools, max_turns,
                 max_budget_usd, model, fallback_model, add_dirs, permission_mode, dangerously_skip_permissions,
                 allow_dangerously_skip_permissions, continue_, resume, fork, session_id, extra_settings,
                 setting_sources, json_schema, include_partial_messages,
                 replay_user_messages, permission_prompt_tool, approval_timeout, no_memory, mcp_config,
                 strict_mcp_config, plugin_dirs) -> None:
    """Claude Code's command line on Mainsail: interactive mode (with PROMPT as its first message), or
    print mode with -p (PROMPT, or stdin). Mainsail's own commands: `mainsail --help`."""
    streaming = input_format == "stream-json"
    print_mode = print_mode or streaming or output_format != "text"
    if dangerously_skip_permissions:
        if permission_mode and permission_mode != "bypassPermissions":
            raise click.UsageError("--dangerously-skip-permissions and --permission-mode "
                                   f"{permission_mode} disagree; give one of them.")
        permission_mode = "bypassPermissions"
    system_prompt = _read_file("--system-prompt-file", system_prompt_file) if system_prompt_file else system_prompt
    appended = _read_file("--append-system-prompt-file", append_system_prompt_file)
    if appended is not None:
        append_system_prompt = "\n\n".join(p for p in (append_system_prompt, appended) if p)
    offered = _tool_names(tools)
    sources = _sources(setting_sources)
    extra = _settings_layer(extra_settings)
    mcp = _mcp_flags(mcp_config, strict_mcp_config)
    options = flag_options(
        model=model, permission_mode=permission_mode, allowed_tools=allowed_tools, disallowed_tools=disallowed_tools,
        approval_timeout=approval_timeout, add_dirs=add_dirs, mcp=mcp, max_turns=max_turns,
        max_budget_usd=max_budget_usd, system_prompt=system_prompt, append_system_prompt=append_system_prompt,
        no_memory=no_memory, fallback_model=fallback_model, session_id=session_id, setting_sources=sources,
        extra_settings=extra, json_schema=_json_schema(json_schema), plugin_dirs=list(plugin_dirs),
        **client_environment(),
        **({"tools": offered} if tools is not None else {}))
    if not print_mode:
        from cli.interactive import run_interactive

        # Every session flag reaches interactive mode too (the same options as print mode's).
        run_interactive(options, resume=resume or None, pick=resume == "", continue_=continue_, fork=fork,
                        workspace=Path.cwd(), first_prompt=prompt)
        return
    if output_format == "stream-json" and not verbose:
        raise click.UsageError("When using --print, --output-format=stream-json requires --verbose.")
    if streaming and output_format != "stream-json":
        raise click.UsageError("--input-format=stream-json requires --output-format=stream-json.")
    if resume == "":
        raise click.UsageError("--resume needs a session id in print mode (or use --continue for this "
                               "directory's latest session).")
    if permission_prompt_tool not in (None, "stdio"):
        raise click.UsageError(f"--permission-prompt-tool {permission_prompt_tool}: only \"stdio\" (answered by the "
                               "client over stream-json) is supported; MCP permission tools are not yet.")
    if permission_prompt_tool and not streaming:
        raise click.UsageError("--permission-prompt-tool stdio needs --input-format stream-json (the client "
                               "answers on stdin).")
    if not streaming and not prompt:
        prompt = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
        if not prompt.strip():
            raise click.UsageError("Input must be provided either through stdin or as a prompt argument when "
                                   "using --print.")
    from cli.headless.session import PrintRun

    PrintRun(prompt=prompt, output_format=output_format, streaming=streaming, options=options, resume=resume,
             continue_=continue_, fork=fork, prompt_tool=permission_prompt_tool == "stdio",
             partial_messages=include_partial_messages, replay_user_messages=replay_user_messages,
             allow_bypass=allow_dangerously_skip_permissions).run()


__all__ = ["main_command", "REFUSED"]
