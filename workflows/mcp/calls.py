"""Reaching a session's MCP servers from the worker that runs its step: discovery and tool calls.

Both go through the process's :mod:`~workflows.mcp.pool`, so the server discovery started is the one
the session's next calls on this worker use.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from workflows.exceptions import McpServerError
from workflows.mcp.pool import pool as process_pool
from workflows.mcp.tools import MAX_NAME, full_name, to_output
from workflows.models.mcp import McpServer, McpServerConfig, McpStatus, McpToolDef
from workflows.tools.base import ToolOutput

__all__ = ["Found", "McpCaller", "client_output", "definitions", "discover", "run_discovery_step"]


NO_CLIENT = ("it runs inside an Agent SDK client's process, and no client connection listed its tools (its "
             "tools are found when the SDK connects over --input-format stream-json)")


@dataclass
class Found:
    """What discovery learned of one server: connected with its tools, or failed with the reason."""

    status: McpStatus
    error: str | None = None
    tools: list[McpToolDef] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # tools left out, and why


def server_env(rec, config: McpServerConfig) -> dict[str, str]:
    """A stdio server's variables beyond the SDK's minimal set: the settings ``env``, then its own."""
    return {**rec.env, **config.env}


def discover(rec, servers: list[McpServer], settings, pool=None) -> dict[str, Found]:
    """Connect to each server (in parallel) and list its tools; a failure is that server's status."""
    if not servers:
        return {}
    pool = pool or process_pool(settings.mcp_idle_seconds)

    def one(server: McpServer) -> Found:
        if server.config.type == "sdk":  # only its client's connection reaches it (workflows.mcp.client)
            return Found(McpStatus.FAILED, error=NO_CLIENT)
        try:
            conn = pool.connection(rec.id, server.config, cwd=rec.workspace, env=server_env(rec, server.config),
                                   timeout=settings.mcp_timeout_seconds)
            listed = conn.list_tools(settings.mcp_timeout_seconds)
        except McpServerError as exc:
            return Found(McpStatus.FAILED, error=str(exc))
        return definitions(server.name, listed)

    with ThreadPoolExecutor(max_workers=min(8, len(servers)), thread_name_prefix="mcp-discover") as run:
        return dict(zip((s.name for s in servers), run.map(one, servers)))


def definitions(server: str, listed: list) -> Found:
    """A connected server's tools (``mcp.types.Tool``) as the session's definitions, named and checked."""
    found = Found(McpStatus.CONNECTED)
    seen: set[str] = set()
    for tool in listed:
        name = full_name(server, tool.name)
        if len(name) > MAX_NAME:
            found.skipped.append(f"{tool.name} (its name {name} is over {MAX_NAME} characters)")
            continue
        if name in seen:
            found.skipped.append(f"{tool.name} (another of its tools has the name {name})")
            continue
        seen.add(name)
        schema = tool.input_schema if isinstance(tool.input_schema, dict) else {"type": "object"}
        found.tools.append(McpToolDef(name=name, server=server, tool=tool.name, description=tool.description or "",
                                      input_schema=schema))
    found.tools.sort(key=lambda d: d.name)
    return found


class McpCaller:
    """The session's MCP servers as the tools worker reaches them (``ToolContext.mcp``)."""

    def __init__(self, rec, settings, pool=None, client_result: dict | None = None) -> None:
        self.rec = rec
        self.settings = settings
        self.pool = pool or process_pool(settings.mcp_idle_seconds)
        self.client_result = client_result  # an SDK client server's answer to this call (workflows.mcp.client)

    def call(self, definition: McpToolDef, args: dict, cancel: threading.Event) -> ToolOutput:
        """Run one tool on its server (started here if this worker has no live connection to it).

        Raises:
            McpServerError: the server could not be reached, or the call broke off (outcome unknown).
        """
        server = next((s for s in self.rec.mcp_servers if s.name == definition.server), None)
        if server is None:
            raise McpServerError(f"MCP server {definition.server!r} is not one of this session's servers.")
        if server.config.type == "sdk":
            return client_output(self.client_result, definition)
        st = self.settings
        conn = self.pool.connection(self.rec.id, server.config, cwd=self.rec.workspace,
                                    env=server_env(self.rec, server.config), timeout=st.mcp_timeout_seconds)
        try:
            result = conn.call_tool(definition.tool, args, st.mcp_tool_timeout_seconds, cancel)
        except McpServerError:
            # A call cut off (cancel, timeout, a crash) may still be running there: start afresh next time
            # (once the calls other sessions have in flight on it end).
            self.pool.retire(conn)
            raise
        return to_output(result, definition.name)


def client_output(result: dict | None, definition: McpToolDef) -> ToolOutput:
    """An SDK client server's CallToolResult (JSON, as relayed by its connection) as the tool's result.

    Raises:
        McpServerError: no answer was relayed, or it is not a CallToolResult.
    """
    from mcp.types import CallToolResult
    from pydantic import ValidationError

    if result is None:
        raise McpServerError(f"MCP server {definition.server!r} runs inside the Agent SDK client, and its answer "
                             "to this call did not come back through the client's connection.")
    try:
        return to_output(CallToolResult.model_validate(result), definition.name)
    except ValidationError:
        raise McpServerError(f"MCP server {definition.server!r} answered {definition.tool} with something that is "
                             f"not a tool result: {str(result)[:200]}") from None


def run_discovery_step(engine, rec, step, owner: str):
    """The ``mcp`` step: find the session's pending servers, commit what was found; the steps that follow."""
    waiting = [s for s in rec.mcp_servers if s.status is McpStatus.PENDING]
    found = discover(rec, waiting, engine.settings)
    return engine.settle_mcp_discovery(rec.id, step.id, owner, found)
