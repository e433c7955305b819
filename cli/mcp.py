"""``mainsail mcp``: the MCP servers configured for this directory, as ``claude mcp`` manages them.

``list`` and ``get`` read every place a server can be configured (:mod:`workflows.mcp.sources`), and the
servers of the plugins named with ``--plugin-dir`` (``plugin:PLUGIN:SERVER``), and check each approved one by
starting it (or reaching it) from this process, as ``claude mcp list`` does; a plugin server withheld by the
workspace's trust decision (:func:`workflows.plugins.withheld`) is listed with the reason and never started;
``add``, ``add-json`` and ``remove`` change Mainsail's files (:mod:`workflows.mcp.scopes`).
None of them needs Redis or a worker. ``/mcp`` in interactive mode shows a session's own servers
(:func:`session_lines`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import click

from workflows.exceptions import McpConfigError
from workflows.mcp.scopes import (
    SCOPE_TEXT,
    SCOPES,
    Written,
    in_claude_json,
    remove_server,
    write_server,
)
from workflows.models.mcp import (
    McpServer,
    McpStatus,
    parse_servers,
    server_name_problem,
)

SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|AUTH|CREDENTIAL", re.IGNORECASE)
APPROVE = "add it to enabledMcpjsonServers in .claude/settings.local.json"


@click.group("mcp")
def mcp() -> None:
    """Configure and check MCP servers (Claude Code's `claude mcp`)."""


def _plugin_dirs(given: tuple[str, ...]) -> list[str]:
    """The ``--plugin-dir`` values given before ``mcp`` (Claude Code's place) and after the subcommand."""
    ctx = click.get_current_context()
    return [*ctx.find_root().meta.get("mainsail.plugin_dirs", ()), *given]


def _configured(workspace: Path, plugin_dirs=()) -> tuple[list[McpServer], dict[str, str], dict[str, str]]:
    """The servers a new session here would get with these ``--plugin-dir`` plugins (and the plugins' servers it
    would not start), the settings env their commands get, and why each withheld server is withheld, by name."""
    from workflows.mcp.sources import ORDER, load_mcp
    from workflows.plugins import load_plugins, plugin_server_list
    from workflows.sessions.settings_files import load_permission_settings
    from workflows.trust.decide import vouches, workspace_trust

    ws = workspace.resolve()
    trust = workspace_trust(ws, Path.home())  # (`mcp list` starts servers: never untrusted ones)
    files = load_permission_settings(ws, Path.home(), trusted=trust.opens)
    found = plugin_server_list(load_plugins(list(plugin_dirs), os.getcwd()), str(ws),
                               vouches(trust, str(ws), Path.home()), os.environ)
    load = load_mcp(ws, Path.home(), files.mcp, trusted=trust.mcp_trusted,
                    plugins=[s for servers, why in found if why is None for s in servers])
    trust.check_unchanged(ws)
    withheld = {s.name: why for servers, why in found if why for s in servers}
    unlisted = [why for servers, why in found if why and not servers]  # (malformed, never started)
    for warning in trust.warnings + files.warnings + load.warnings + unlisted:
        click.secho(f"Warning: {warning}", fg="yellow", err=True)
    held = [s for servers, why in found if why for s in servers]
    servers = sorted(load.servers + held, key=lambda s: ORDER.index(s.config.source))
    return servers, files.env, withheld


def _check(servers: list[McpServer], workspace: Path, env: dict[str, str],
           withheld: dict[str, str]) -> dict[str, McpServer]:
    """Each approved server started (or reached) from here and its tools listed; the outcome by name (a
    withheld one is never started)."""
    from workflows.mcp.calls import discover
    from workflows.mcp.pool import McpPool
    from workflows.settings import load_settings

    waiting = [s for s in servers if s.status is McpStatus.PENDING and s.name not in withheld]
    pool = McpPool()
    try:
        here = SimpleNamespace(id="mcp-check", workspace=str(workspace.resolve()), env=env)
        found = discover(here, waiting, load_settings(), pool=pool)
    finally:
        pool.close_all()
    out = {}
    for s in servers:
        f = found.get(s.name)
        out[s.name] = s if f is None else s.model_copy(update={"status": f.status, "error": f.error,
                                                               "tools": [d.name for d in f.tools]})
    return out


def _status(s: McpServer, withheld: dict[str, str] | None = None) -> str:
    if withheld and s.name in withheld:
        return f"⏸ Withheld — {withheld[s.name]}"
    if s.status is McpStatus.CONNECTED:
        return "✔ Connected"
    if s.status is McpStatus.UNAPPROVED:
        return f"⏸ Pending approval ({APPROVE})"
    if s.status is McpStatus.PENDING:
        return "… Not connected yet (found when the session's next run starts)"
    return f"✘ Failed to connect — {s.error}"


plugin_dir_option = click.option("--plugin-dir", "plugin_dirs", multiple=True, metavar="DIR",
                                 help="Also the MCP servers of the plugin in DIR, as a session started with "
                                      "--plugin-dir DIR gets them (repeatable).")


@mcp.command("list")
@plugin_dir_option
def list_cmd(plugin_dirs) -> None:
    """List the MCP servers configured here, and check each one."""
    servers, env, withheld = _configured(Path.cwd(), _plugin_dirs(plugin_dirs))
    if not servers:
        click.echo("No MCP servers configured. Use `mainsail mcp add` to add a server.")
        return
    click.echo("Checking MCP server health…\n")
    checked = _check(servers, Path.cwd(), env, withheld)
    for s in servers:
        click.echo(f"{s.name}: {s.config.describe()} - {_status(checked[s.name], withheld)}")


@mcp.command("get")
@plugin_dir_option
@click.argument("name")
def get_cmd(plugin_dirs, name: str) -> None:
    """Details of one MCP server (and whether it answers)."""
    servers, env, withheld = _configured(Path.cwd(), _plugin_dirs(plugin_dirs))
    server = next((s for s in servers if s.name == name), None)
    if server is None:
        names = ", ".join(s.name for s in servers) or "none"
        raise click.ClickException(f'No MCP server named "{name}". Configured servers: {names}')
    s = _check([server], Path.cwd(), env, withheld)[name]
    c = s.config
    lines = [f"{name}:", f"  Scope: {SCOPE_TEXT.get(c.source, c.source)} ({c.origin})",
             f"  Status: {_status(s, withheld)}", f"  Type: {c.type}"]
    if c.type == "stdio":
        lines += [f"  Command: {c.command}", f"  Args: {' '.join(c.args)}", "  Environment:"]
        lines += [f"    {k}={_shown(k, v)}" for k, v in c.env.items()]
    else:
        lines += [f"  URL: {c.url}", "  Headers:"] + [f"    {k}: {_shown(k, v)}" for k, v in c.headers.items()]
    if s.tools:
        lines.append(f"  Tools: {', '.join(s.tools)}")
    click.echo("\n".join(lines))
    tool = "claude" if ".claude.json" in c.origin else "mainsail"
    if c.source not in ("dynamic", "plugin"):
        click.echo(f"\nTo remove this server, run: {tool} mcp remove {name} -s {c.source}")


def _shown(key: str, value: str) -> str:
    """A value as shown: one whose name looks like a secret is masked."""
    return "***" if SECRET.search(key) and value else value


scope_option = click.option("-s", "--scope", type=click.Choice(SCOPES), default="local", show_default=True,
                            help="local: you, this project; user: you, every project; project: .mcp.json.")


@mcp.command("add", context_settings={"ignore_unknown_options": False})
@scope_option
@click.option("-t", "--transport", type=click.Choice(["stdio", "http", "sse"]), default="stdio", show_default=True)
@click.option("-e", "--env", "env", multiple=True, metavar="KEY=value", help="A variable for a stdio server.")
@click.option("-H", "--header", "headers", multiple=True, metavar="'Name: value'", help="A header for an http server.")
@click.argument("name")
@click.argument("command_or_url")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def add_cmd(scope: str, transport: str, env, headers, name: str, command_or_url: str, args) -> None:
    """Add an MCP server: `mainsail mcp add NAME -- COMMAND [ARGS...]` or `mainsail mcp add -t http NAME URL`."""
    if transport == "sse":
        raise click.UsageError("The SSE transport is not supported by Mainsail (MCP deprecated it); use "
                               "--transport http if the server offers streamable HTTP.")
    value: dict = {"type": transport}
    if transport == "http":
        if args or env:
            raise click.UsageError("An http server takes a URL and --header options, no arguments or --env.")
        value.update(url=command_or_url, headers=dict(_pair(h, ":", "--header", "'Name: value'") for h in headers))
    else:
        if headers:
            raise click.UsageError("--header is for http servers; a stdio server takes --env KEY=value.")
        value.update(command=command_or_url, args=list(args),
                     env=dict(_pair(e, "=", "--env", "KEY=value") for e in env))
    written, server = _save(scope, name, value)
    what = f"with URL: {value['url']}" if transport == "http" else f"with command: {server.config.describe()}"
    click.echo(f"Added {'HTTP' if transport == 'http' else 'stdio'} MCP server {name} {what} to {scope} config")
    _modified(written)


@mcp.command("add-json")
@scope_option
@click.argument("name")
@click.argument("json_text", metavar="JSON")
def add_json_cmd(scope: str, name: str, json_text: str) -> None:
    """Add an MCP server from its JSON config (`-` reads it from stdin)."""
    text = click.get_text_stream("stdin").read() if json_text == "-" else json_text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"The server's JSON is not valid: {exc.msg} at column {exc.colno}.") from None
    written, server = _save(scope, name, value)
    click.echo(f"Added {server.config.type} MCP server {name} to {scope} config")
    _modified(written)


def _modified(written: Written) -> None:
    """The file a command wrote, and what was done to keep it out of git (workflows/git/ignore.py)."""
    click.echo(f"File modified: {written.path}")
    _git_note(written.note)


def _git_note(note: str | None) -> None:
    if note and note.startswith("Warning:"):
        click.secho(note, fg="yellow", err=True)
    elif note:
        click.echo(click.style(note, dim=True))


def _save(scope: str, name: str, value) -> tuple[Written, McpServer]:
    """Check the new server's config (as a session would read it), then write it to the scope's file."""
    why = server_name_problem(name)
    if why:
        raise click.UsageError(f"Invalid MCP server name {name!r}: {why}.")
    try:
        (server,) = parse_servers({name: value}, source=scope, origin="the new server", environ=os.environ)
        if server.status is McpStatus.FAILED and (server.error or "").startswith("transport"):
            raise click.UsageError(f"MCP server {name}: {server.error}.")
        return write_server(scope, Path.cwd(), Path.home(), name, value), server
    except McpConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _pair(text: str, sep: str, flag: str, like: str) -> tuple[str, str]:
    key, found, value = text.partition(sep)
    if not found or not key.strip():
        raise click.UsageError(f"{flag} {text!r}: write it as {like}.")
    return key.strip(), value.strip() if sep == ":" else value


@mcp.command("remove")
@click.option("-s", "--scope", type=click.Choice(SCOPES), help="Only from this scope (default: the one that has it).")
@click.argument("name")
def remove_cmd(scope: str | None, name: str) -> None:
    """Remove an MCP server."""
    ws, home = Path.cwd(), Path.home()
    try:
        if scope:
            path = remove_server(scope, ws, home, name)
        else:
            found = [(sc, p) for sc in SCOPES if (p := _has(sc, name))]
            if len(found) > 1:
                listing = "\n".join(f"  - {SCOPE_TEXT[sc]} ({p})" for sc, p in found)
                hints = "\n".join(f"  mainsail mcp remove {name} -s {sc}" for sc, _ in found)
                raise click.ClickException(f'MCP server "{name}" exists in multiple scopes:\n{listing}\n\n'
                                           f"To remove from a specific scope, use:\n{hints}")
            scope, path = (found[0][0], remove_server(found[0][0], ws, home, name)) if found else (None, None)
    except McpConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if path is None:
        claude = in_claude_json(home, ws, name)
        if claude:
            raise click.ClickException(f"MCP server {name} is in Claude Code's own config (~/.claude.json, {claude} "
                                       f"scope), which Mainsail never writes: run `claude mcp remove {name} -s "
                                       f"{claude}`.")
        where = f" in {scope} config" if scope else ""
        raise click.ClickException(f'No MCP server named "{name}"{where}. See `mainsail mcp list`.')
    click.echo(f"Removed MCP server {name} from {scope} config")
    _modified(path)


def _has(scope: str, name: str) -> Path | None:
    from workflows.mcp.scopes import scope_file
    from workflows.mcp.sources import read_json

    path = scope_file(scope, Path.cwd(), Path.home())
    data = read_json(path)
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return path if isinstance(servers, dict) and name in servers else None


def approve_project_servers(servers: list[McpServer], workspace: Path, ask) -> list[McpServer]:
    """Interactive mode, a new session: ask about the project's unapproved ``.mcp.json`` servers, as Claude
    Code does at start-up, and keep the answer in ``.claude/settings.local.json``. The servers as the session
    gets them (approved ones pending, rejected ones left out). ``ask(text)``: a line typed, or None."""
    from workflows.mcp.scopes import record_approval

    waiting = [s for s in servers if s.status is McpStatus.UNAPPROVED]
    if not waiting:
        return servers
    click.echo(f"{workspace / '.mcp.json'} names MCP servers that start only once you approve them:")
    for s in waiting:
        click.echo(f"  {s.name}: {s.config.describe()}")
        if (s.error or "").startswith("MCP server"):  # approved before, with another command (workflows.mcp.trusted)
            click.secho(f"    {s.error.split(' (')[0]}", fg="yellow")
    answer = (ask("Use them? (y)es / (a)ll, also those added later / (n)o ") or "").strip().lower()
    choice = {"y": "yes", "yes": "yes", "a": "all", "all": "all"}.get(answer, "no")
    names = [s.name for s in waiting]
    try:
        written = record_approval(workspace, names, choice)
    except McpConfigError as exc:
        click.secho(f"Warning: {exc} The servers are not started.", fg="yellow", err=True)
        return [s for s in servers if s not in waiting]
    click.echo(click.style(f"{'Approved' if choice != 'no' else 'Rejected'} in {written.path}.", dim=True))
    _git_note(written.note)
    if choice == "no":
        return [s for s in servers if s.name not in names]
    from workflows.trust.gated import project_gated
    from workflows.trust.store import TrustStore

    gated = project_gated(workspace)  # the approval covers these servers' commands, arguments and environment
    TrustStore(Path.home()).put(str(workspace), gated.digest(), gated.parts, "the MCP approval prompt")
    return [s.model_copy(update={"status": McpStatus.PENDING, "error": None}) if s.name in names else s
            for s in servers]


def session_lines(rec, name: str = "") -> list[str]:
    """``/mcp``: the session's servers and their status; with ``name``, that server's tools."""
    if not rec.mcp_servers:
        return ["No MCP servers in this session. Add one with `mainsail mcp add` (new sessions get it), or "
                "start with --mcp-config."]
    if name:
        server = next((s for s in rec.mcp_servers if s.name == name), None)
        if server is None:
            return [f"No MCP server {name!r} in this session; its servers: {', '.join(s.name for s in rec.mcp_servers)}."]
        return [f"{server.name} ({server.config.describe()}): {_status(server)}"] + [f"  {t}" for t in server.tools]
    out = []
    for s in rec.mcp_servers:
        tools = f" · {len(s.tools)} tools" if s.status is McpStatus.CONNECTED else ""
        out.append(f"{s.name:<16} {s.config.source:<8} {_status(s)}{tools}")
    out.append("/mcp NAME lists a server's tools; allow them with rules such as mcp__NAME or mcp__NAME__TOOL.")
    return out


__all__ = ["approve_project_servers", "mcp", "session_lines"]
