"""An ``.mcp.json`` server starts only with the command, arguments and environment that were trusted.

Approving a server (``enabledMcpjsonServers``, ``enableAllProjectMcpServers``, the start-up question)
names it; trusting the workspace (:mod:`workflows.trust.decide`) records its whole entry. A server whose
entry now differs from the recorded one (another command, arguments, environment, URL or headers under
the same name) is kept ``unapproved`` and never started, with a message naming it and what changed, until
the workspace is trusted again.
"""

from __future__ import annotations

from typing import Mapping

from workflows.models.mcp import McpServer, McpStatus

__all__ = ["check_servers"]


def check_servers(servers: list[McpServer], entries: Mapping, trusted: Mapping | None, path: str) -> list[McpServer]:
    """The project's approved ``servers`` (their raw ``entries`` by name) held to the ``trusted`` entries:
    one that differs (or was never trusted) becomes ``unapproved`` with the reason. ``trusted`` None: the
    workspace is not trusted; no server is kept (the trust warning names them)."""
    from workflows.trust.decide import server_change

    if trusted is None:
        return []
    out = []
    for server in servers:
        before, now = trusted.get(server.name), entries.get(server.name)
        if server.status is McpStatus.PENDING and before != now:
            why = (server_change(server.name, before, now) if before is not None else
                   f"MCP server {server.name} ({server.config.describe()}) is approved by name, but its command was "
                   "never trusted here")
            server = server.model_copy(update={"status": McpStatus.UNAPPROVED, "error": (
                f"{why} ({path}): it is not started until you trust the workspace again (--trust-project, or the "
                "trust prompt in interactive mode)")})
        out.append(server)
    return out
