"""A session's MCP tool list: recorded once, read by every worker through a cache.

The record keeps each server's status and tool *names* (small: it is read and written whole at
every commit); the definitions, schemas included, are one JSON value under
``session:{sid}:mcp:{digest}``, written in the same transaction as the record that names the
digest. A key named by its content never changes, so a process reads it once per digest and
every model request of the session sends the same bytes (the prompt cache holds).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict

from workflows.exceptions import ToolInputError
from workflows.mcp.tools import McpTool, is_mcp_name, tool_prefix
from workflows.models.mcp import McpStatus, McpToolDef

__all__ = ["find_tool", "idempotent", "offered_names", "tool_defs", "tool_schemas"]

log = logging.getLogger(__name__)

_cache: OrderedDict[str, dict[str, McpToolDef]] = OrderedDict()
_schemas: dict[str, tuple[dict, ...]] = {}
_lock = threading.Lock()
KEPT = 256  # digests a process keeps


def tool_defs(store, rec) -> dict[str, McpToolDef]:
    """The session's MCP tools by full name, in the order they are offered; {} without any."""
    digest = rec.mcp_tools_digest
    if not digest:
        return {}
    with _lock:
        hit = _cache.get(digest)
    if hit is not None:
        return hit
    raw = store.mcp_tools_json(rec.id, digest)
    if raw is None:  # only if someone deleted it by hand: the tools are then not offered
        log.warning("session %s: its MCP tool list %s is missing from Redis", rec.id[:8], digest)
        return {}
    defs = {d["name"]: McpToolDef.model_validate(d) for d in json.loads(raw)}
    with _lock:
        _cache[digest] = defs
        while len(_cache) > KEPT:
            _cache.popitem(last=False)
    return defs


def tool_schemas(store, rec) -> tuple[dict, ...]:
    """The Messages API definitions of the session's MCP tools (shared, read-only dicts)."""
    digest = rec.mcp_tools_digest
    if not digest:
        return ()
    hit = _schemas.get(digest)
    if hit is None:
        hit = _schemas[digest] = tuple(d.schema() for d in tool_defs(store, rec).values())
    return hit


def offered_names(rec) -> list[str]:
    """The MCP tool names the session offers (``system/init``'s ``tools``), from the record alone, by name
    (Claude Code's order)."""
    return sorted(name for s in rec.mcp_servers if s.status is McpStatus.CONNECTED for name in s.tools)


def find_tool(store, rec, name: str):
    """The tool ``name`` names for this session: a registered tool, or one of its MCP tools.

    Raises:
        ToolInputError: no such tool; for an MCP name, the message says why (server unknown, failed,
            not approved, or without that tool).
    """
    from workflows.tools import get_tool

    if not is_mcp_name(name):
        return get_tool(name)
    definition = tool_defs(store, rec).get(name)
    if definition is None:
        raise ToolInputError(no_such_tool(rec, name))
    return McpTool(definition)


def idempotent(name: str) -> bool:
    """Whether a call of ``name`` may run again after its worker died (never for an MCP tool)."""
    from workflows.tools import get_tool

    return not is_mcp_name(name) and get_tool(name).idempotent


def no_such_tool(rec, name: str) -> str:
    """Claude Code's "No such tool available", with the reason."""
    head = f"No such tool available: {name}."
    server = next((s for s in rec.mcp_servers if name.startswith(tool_prefix(s.name))), None)
    if server is None:
        names = ", ".join(s.name for s in rec.mcp_servers) or "none"
        return f"{head} No MCP server of this session is named so (its servers: {names})."
    if server.status is McpStatus.CONNECTED:
        tools = ", ".join(server.tools) or "none"
        return f"{head} MCP server {server.name!r} has no such tool; its tools: {tools}."
    return f"{head} MCP server {server.name!r} is {server.status.value}: {server.error or 'not connected'}."
