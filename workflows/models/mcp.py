"""One MCP server's configuration, as Claude Code writes it, and what a session keeps of each server.

A ``mcpServers`` object maps a server's name to its config::

    {"mcpServers": {
       "github": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
       "files":  {"type": "stdio", "command": "npx", "args": ["-y", "some-server"], "env": {"ROOT": "${HOME}/x"}}}}

``type`` is ``stdio`` (the default when ``command`` is given) or ``http`` (streamable HTTP; the
default when only ``url`` is). ``${VAR}`` and ``${VAR:-default}`` in ``command``, ``args``, ``env``,
``url`` and ``headers`` are expanded from the environment of the command that reads the config, as
Claude Code does; a variable that is unset and has no default makes the server ``failed`` with its
name. ``sdk`` is an Agent SDK client's in-process server (``create_sdk_mcp_server``): the Agent SDK
passes it as ``{"type": "sdk", "name": ...}``, and only the client's connection reaches it
(cli/headless/sdk_mcp.py). Claude Code's other transports (``sse``, ``ws``) are kept as ``failed``
servers saying so: the session goes on without them, and nothing is silently dropped.

Pure: no I/O but the environment, and no import of the MCP SDK (the CLI starts faster without it).
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field

from workflows.exceptions import McpConfigError

__all__ = ["McpConfigError", "McpServer", "McpServerConfig", "McpStatus", "McpToolDef", "fresh", "parse_servers",
           "server_name_problem", "tools_digest"]

#: Where a server was configured, in Claude Code's words (``mcp_servers[].source`` of ``system/init``).
Source = Literal["user", "local", "project", "plugin", "dynamic"]

_NAME = re.compile(r"[A-Za-z0-9_-]+")
_VAR = re.compile(r"\$\{([^}:]*)(?::-([^}]*))?\}")
_UNSUPPORTED = {"sse": "the SSE transport (deprecated by MCP) is not supported by Mainsail; use \"type\": \"http\" "
                       "(streamable HTTP) if the server offers it",
                "ws": "the WebSocket transport is not supported by Mainsail; use \"http\" or \"stdio\""}


class McpStatus(str, enum.Enum):
    PENDING = "pending"  # configured, not connected yet (its tools are found when a run starts)
    CONNECTED = "connected"
    FAILED = "failed"
    UNAPPROVED = "unapproved"  # a .mcp.json server nobody approved: never started (fail closed)


class McpServerConfig(BaseModel):
    """How to reach one server. ``origin``: the file or flag it came from, for messages."""

    model_config = ConfigDict(extra="ignore")

    name: str
    type: Literal["stdio", "http", "sdk"] = "stdio"
    command: str = ""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    source: Source = "dynamic"
    origin: str = ""

    def fingerprint(self) -> str:
        """Changes whenever how to reach the server changes (a new connection is needed)."""
        data = self.model_dump(include={"type", "command", "args", "env", "url", "headers"})
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> str:
        """``cmd arg1 arg2`` or ``URL (HTTP)``, as ``claude mcp list`` shows a server."""
        if self.type == "http":
            return f"{self.url} (HTTP)"
        if self.type == "sdk":
            return "in the Agent SDK client's process (SDK)"
        return " ".join([self.command, *self.args])


class McpServer(BaseModel):
    """A server as a session keeps it (``SessionRecord.mcp_servers``): its config and what became of it."""

    model_config = ConfigDict(extra="ignore")

    config: McpServerConfig
    status: McpStatus = McpStatus.PENDING
    error: str | None = None
    tools: list[str] = Field(default_factory=list)  # full names (mcp__server__tool), in the server's order

    @property
    def name(self) -> str:
        return self.config.name


class McpToolDef(BaseModel):
    """One tool a server offers, as the model sees it (``name``) and as the server knows it (``tool``)."""

    model_config = ConfigDict(extra="ignore")

    name: str
    server: str
    tool: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})

    def schema(self) -> dict[str, Any]:
        """The Messages API tool definition (Claude Code sends the server's inputSchema as it is)."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


def fresh(servers: list[McpServer]) -> list[McpServer]:
    """Copies for a new session (``/clear``, a fork): a connected server is found again at its first prompt."""
    return [s.model_copy(update={"status": McpStatus.PENDING, "tools": [], "error": None})
            if s.status is McpStatus.CONNECTED else s.model_copy() for s in servers]


def tools_digest(defs: list[McpToolDef]) -> str:
    """A content hash of a session's MCP tool list: its Redis key and the processes' cache are keyed by it."""
    text = json.dumps([d.model_dump() for d in defs], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def server_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a server (it becomes part of tool names and rules), or None."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return "server names contain only letters, digits, '_' and '-'"
    if "__" in name:
        return "server names cannot contain '__' (it separates server and tool in mcp__server__tool)"
    return None


def parse_servers(raw: Any, *, source: Source, origin: str, environ: Mapping[str, str]) -> list[McpServer]:
    """The servers of one ``mcpServers`` object.

    A server whose transport Mainsail does not speak, or whose ``${VAR}`` is unset, is returned
    ``failed`` with the reason; a malformed entry raises.

    Raises:
        McpConfigError: ``raw`` is not an object of objects, a name is invalid, or a field has the
            wrong type (the message names ``origin``, the server and the field).
    """
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise McpConfigError(f"{origin}: 'mcpServers' must be an object of servers like "
                             '{"name": {"command": "npx", "args": ["-y", "server"]}}, '
                             f"not {type(raw).__name__}.")
    out = []
    for name, entry in raw.items():
        why = server_name_problem(name)
        if why:
            raise McpConfigError(f"{origin}: MCP server name {name!r} is not valid: {why}. Rename it.")
        out.append(_server(name, entry, source, origin, environ))
    return out


def _server(name: str, entry: Any, source: Source, origin: str, environ: Mapping[str, str]) -> McpServer:
    where = f"{origin}: MCP server {name!r}"
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where} must be an object like {{\"command\": \"npx\", \"args\": [...]}} or "
                             f"{{\"type\": \"http\", \"url\": \"https://...\"}}, not {type(entry).__name__}.")
    kind = entry.get("type")
    if kind is None:
        kind = "http" if "url" in entry and "command" not in entry else "stdio"
    if kind == "streamable-http":
        kind = "http"
    base = dict(name=name, source=source, origin=origin)
    if kind in _UNSUPPORTED:
        return McpServer(config=McpServerConfig(**base), status=McpStatus.FAILED,
                         error=f"transport {kind!r}: {_UNSUPPORTED[kind]}")
    if kind == "sdk":  # the client serves it: nothing to expand or check here
        return McpServer(config=McpServerConfig(**base, type="sdk"))
    if kind not in ("stdio", "http"):
        raise McpConfigError(f"{where}: 'type' is {json.dumps(kind)}; use \"stdio\" (a command) or \"http\" (a URL).")
    missing: list[str] = []

    def text(key: str, required: bool) -> str:
        value = entry.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            raise McpConfigError(f"{where}: {key!r} must be a non-empty string"
                                 f"{'' if value is None else ', not ' + json.dumps(value)[:60]}.")
        return _expand(value, environ, missing)

    def strings(key: str) -> list[str]:
        value = entry.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise McpConfigError(f"{where}: {key!r} must be a list of strings like [\"-y\", \"server\"].")
        return [_expand(v, environ, missing) for v in value]

    def mapping(key: str) -> dict[str, str]:
        value = entry.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise McpConfigError(f"{where}: {key!r} must be an object of strings like {{\"NAME\": \"value\"}}.")
        return {k: _expand(v, environ, missing) for k, v in value.items()}

    if kind == "stdio":
        config = McpServerConfig(**base, type="stdio", command=text("command", True), args=strings("args"),
                                 env=mapping("env"))
    else:
        config = McpServerConfig(**base, type="http", url=text("url", True), headers=mapping("headers"))
        if not re.match(r"https?://", config.url, re.IGNORECASE):
            raise McpConfigError(f"{where}: 'url' is {config.url!r}; an http server's URL starts with http:// "
                                 "or https://.")
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        return McpServer(config=config, status=McpStatus.FAILED,
                         error=f"missing environment variables: {names} (set them, or give a default: ${{VAR:-value}})")
    return McpServer(config=config)


def _expand(value: str, environ: Mapping[str, str], missing: list[str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from ``environ``; unset names without a default go to ``missing``."""

    def one(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        missing.append(name)
        return m.group(0)

    return _VAR.sub(one, value)
