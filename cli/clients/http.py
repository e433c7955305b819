"""The client protocol (:mod:`cli.clients.protocol`) through a team server: each verb is one call of the
server's HTTP API (:mod:`cli.remote.client`), printing what the local command prints, from the API's answer.
A flag the API does not carry is refused with a message, never silently dropped."""

from __future__ import annotations

import json
import sys

import click

from cli.agents_flag import flag_agents
from cli.clients.protocol import decided_line
from cli.remote.client import open_client, server_path, session_path
from cli.remote.sse import follow_events
from cli.trust_flag import flag_trust


class HttpClient:
    """:class:`cli.clients.protocol.SessionClient` on ``MAINSAIL_SERVER`` with ``MAINSAIL_TOKEN``."""

    def submit(self, prompt: str, *, model, resume, continue_, fork, max_turns, max_budget_usd, workspace,
               permission_mode, allowed_tools, disallowed_tools, approval_timeout, system_prompt,
               append_system_prompt, no_memory, add_dirs, fallback_model, mcp_config, strict_mcp_config) -> None:
        _refuse_unsupported(**{"--resume": resume, "--continue": continue_, "--fork-session": fork,
                               "--mcp-config": mcp_config, "--strict-mcp-config": strict_mcp_config,
                               "--agents": flag_agents(), "--trust-project": flag_trust()})
        if workspace is None:
            raise click.UsageError("Through MAINSAIL_SERVER, give the session's workspace with --cwd DIR: an "
                                   "absolute path of a directory on the server's machine.")
        body = {"workspace": server_path(workspace, "--cwd"), "prompt": prompt, "permission_mode": permission_mode,
                "model": model, "max_turns": max_turns, "max_budget_usd": max_budget_usd,
                "allowed_tools": list(allowed_tools), "disallowed_tools": list(disallowed_tools),
                "add_dirs": [server_path(d, "--add-dir") for d in add_dirs],
                "approval_timeout_seconds": approval_timeout, "system_prompt": system_prompt,
                "append_system_prompt": append_system_prompt, "fallback_model": fallback_model,
                "no_memory": no_memory}
        with open_client() as client:
            view = client.post("/api/sessions", {k: v for k, v in body.items() if v is not None})
        for warning in view.get("warnings") or []:
            click.secho(f"Warning: {warning}", fg="yellow", err=True)
        click.echo(view["id"])
        click.echo(f"Watch it with: mainsail watch {view['id'][:8]}", err=True)

    def send(self, session: str, message: str | None, *, interrupt: bool, clear: bool) -> None:
        with open_client() as client:
            done = client.post(session_path(session, "messages"),
                               {"message": message, "interrupt": interrupt, "clear": clear})
        sid = done["session_id"][:8]
        sent = message is not None and done["message"].lower().endswith("sent.")
        note = f" Watch: mainsail watch {sid}" if sent else ""
        click.echo(f"Session {sid}: {done['message']}{note}")

    def cancel(self, session: str, *, clear: bool) -> None:
        with open_client() as client:
            done = client.post(session_path(session, "cancel"), {"clear": clear})
        click.echo(done["message"])

    def decide(self, session: str, request: str | None, approve: bool, *, always: bool = False,
               message: str | None = None) -> None:
        body = {"request": request, "always": always} if approve else {"request": request, "message": message}
        with open_client() as client:
            d = client.post(session_path(session, "approve" if approve else "deny"), body)
        click.echo(decided_line(d["approved"], d["tool"], d["summary"], d["session_id"], d["request_id"], always,
                                d.get("rules_added") or []))

    def compact(self, session: str, instructions: str | None) -> None:
        with open_client() as client:
            sid = client.get(session_path(session))["id"]
            client.post(session_path(sid, "compact"), {"instructions": instructions})
            result = None
            for event in follow_events(client, sid, deltas=False, until_idle=True):
                if event.event == "entry":
                    entry = json.loads(event.data)["entry"]
                    if entry.get("type") == "result":
                        result = entry
        if result is None:
            raise click.ClickException(f"Session {sid[:8]} went idle without a compaction result; see "
                                       f"`mainsail show {sid[:8]}`.")
        click.echo(result.get("result", "") if not result.get("is_error") else f"Error: {result.get('result', '')}")
        if result.get("is_error"):
            sys.exit(1)


def _refuse_unsupported(**given) -> None:
    """A UsageError naming the first flag that is set but that the API cannot carry (never silently dropped)."""
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


__all__ = ["HttpClient"]
