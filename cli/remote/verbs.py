"""``submit`` and ``export`` through the team server (send, cancel, approve, deny and compact go through
the client protocol instead: cli/clients/).

Each is one API call; what it prints is what the local command prints, from the API's answer.
A flag the API does not carry is refused with a message, never silently dropped.
"""

from __future__ import annotations

import click

from cli.agents_flag import flag_agents
from cli.remote.client import open_client, session_path
from cli.remote.listing import server_path
from cli.trust_flag import flag_trust


def _refuse_unsupported(**given) -> None:
    """A UsageError naming the first flag that is set but that the API cannot carry."""
    why = {
        "--resume": "send to an existing session with `mainsail send SID \"...\"` instead",
        "--continue": "send to an existing session with `mainsail send SID \"...\"` instead",
        "--fork-session": "the API starts new sessions only",
        "--mcp-config": "the session gets the MCP servers of the workspace's settings files on the server",
        "--strict-mcp-config": "the session gets the MCP servers of the workspace's settings files on the server",
        "--agents": "the session gets the sub-agent types of the workspace's agent files on the server",
        "--trust-project": "the server trusts a workspace for a token made with `mainsail token create --workspace "
                           "DIR --trust-project`, or one its own user trusted",
    }
    for flag, value in given.items():
        if value:
            raise click.UsageError(f"{flag} is not available through MAINSAIL_SERVER (the team server's API does "
                                   f"not carry it): {why[flag]}. Unset MAINSAIL_SERVER to use it with Redis directly.")


def submit(prompt: str, model, resume, continue_, fork, max_turns, max_budget_usd, workspace, permission_mode,
           allowed_tools, disallowed_tools, approval_timeout, system_prompt, append_system_prompt, no_memory,
           add_dirs, fallback_model, mcp_config, strict_mcp_config) -> None:
    _refuse_unsupported(**{"--resume": resume, "--continue": continue_, "--fork-session": fork,
                           "--mcp-config": mcp_config, "--strict-mcp-config": strict_mcp_config,
                           "--agents": flag_agents(), "--trust-project": flag_trust()})
    if workspace is None:
        raise click.UsageError("Through MAINSAIL_SERVER, give the session's workspace with --cwd DIR: an absolute "
                               "path of a directory on the server's machine.")
    body = {"workspace": server_path(workspace, "--cwd"), "prompt": prompt, "permission_mode": permission_mode,
            "model": model, "max_turns": max_turns, "max_budget_usd": max_budget_usd,
            "allowed_tools": list(allowed_tools), "disallowed_tools": list(disallowed_tools),
            "add_dirs": [server_path(d, "--add-dir") for d in add_dirs],
            "approval_timeout_seconds": approval_timeout, "system_prompt": system_prompt,
            "append_system_prompt": append_system_prompt, "fallback_model": fallback_model, "no_memory": no_memory}
    with open_client() as client:
        view = client.post("/api/sessions", {k: v for k, v in body.items() if v is not None})
    for warning in view.get("warnings") or []:
        click.secho(f"Warning: {warning}", fg="yellow", err=True)
    click.echo(view["id"])
    click.echo(f"Watch it with: mainsail watch {view['id'][:8]}", err=True)


def export_cmd(session: str, fmt: str, output: str | None) -> None:
    """The transcript as Claude Code's JSONL, from the server (``GET /api/sessions/{id}/export``)."""
    import sys

    with open_client() as client:
        sid = client.get(session_path(session))["id"]
        text = client.get_text(session_path(sid, "export"))
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from cli.transfer import write_whole

    write_whole(output, [text])
    click.echo(f"Exported {text.count(chr(10))} entries of session {sid[:8]} to {output}.", err=True)


__all__ = ["export_cmd", "submit"]
