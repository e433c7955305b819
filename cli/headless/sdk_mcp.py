"""The Agent SDK client's in-process MCP servers (``create_sdk_mcp_server``), reached over its connection.

The SDK passes such a server in ``--mcp-config`` as ``{"type": "sdk", "name": ...}`` and serves it
itself: Claude Code talks to it with ``mcp_message`` control requests (a JSON-RPC message for a
server by name; the SDK answers with ``mcp_response``). Mainsail does the same, from the process that
holds the client's stdin and stdout, as Claude Code does:

* at ``initialize``, each server's handshake (``initialize``, ``notifications/initialized``) and
  ``tools/list``; what was found is recorded on the session (workflows/mcp/client.py), so its tools are
  offered as ``mcp__<server>__<tool>`` like any server's. User messages that arrive meanwhile wait for
  it (the first prompt already offers the tools);
* a call of one of their tools is a durable request of kind ``mcp`` in the session's stream (the worker's
  step ended when it asked): this process sends ``tools/call`` and records the answer through the session
  service, whose commit runs the call's step again to make it the tool result;
* ``mcp_status``: every server of the session in the SDK's ``McpServerStatus`` shape.
"""

from __future__ import annotations

import itertools
from typing import Callable

from cli.connect import Runtime
from cli.headless.control import Control, ControlError
from cli.output import INIT_STATUS
from cli.session_service import service
from workflows.exceptions import RequestClosed, RequestNotFound
from workflows.mcp.calls import Found, definitions
from workflows.mcp.catalog import tool_defs
from workflows.models import PermissionRequest, PermissionRequestEntry
from workflows.models.mcp import McpStatus

__all__ = ["NOT_DONE", "SdkServers", "mcp_status", "sdk_handlers"]

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "mainsail", "title": "Mainsail (Claude Code on durable workflows)", "version": "1"}


class SdkServers:
    """One connection's SDK servers (see the module docstring).

    Args:
        rt: the connection to Redis.
        sid: the session.
        control: the stream's control channel.
        on_ready: called (on the reading thread) once discovery is over: the held prompts go in.
    """

    def __init__(self, rt: Runtime, sid: str, control: Control, on_ready: Callable[[list[str]], None]) -> None:
        self.rt = rt
        self.sid = sid
        self.control = control
        self.on_ready = on_ready
        self.held: list[str] = []  # prompts that arrived while the servers were being listed
        self.waiting: dict[str, str | None] = {}  # server -> our open control request to it
        self.found: dict[str, Found] = {}
        self.server_info: dict[str, dict] = {}
        self.calls: dict[str, str] = {}  # permission request id -> our mcp_message request id
        self.left: list = []  # calls an earlier connection did not answer, run once the servers are listed
        self._ids = itertools.count(1)

    @property
    def busy(self) -> bool:
        return bool(self.waiting)

    # ------------------------------------------------------------------ discovery

    def discover(self) -> None:
        """List the tools of the session's SDK servers (the client just connected); then run the calls an
        earlier connection left unanswered (its program ended mid-call: the session still waits for them)."""
        rec = self.rt.store.get_session(self.sid)
        names = [s.name for s in rec.mcp_servers if s.config.type == "sdk" and s.name not in self.waiting]
        if not names:
            return
        self.left = [r for r in rec.pending_requests() if r.kind == "mcp" and r.id not in self.calls]
        for name in names:
            self.waiting[name] = None
        for name in names:
            self._send(name, {"method": "initialize", "params": {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}},
                lambda answer, n=name: self._initialized(n, answer))

    def hold(self, prompt: str) -> None:
        self.held.append(prompt)

    def client_gone(self) -> None:
        """stdin ended while servers were being listed: they are failed (nobody can answer now)."""
        for name, request_id in list(self.waiting.items()):
            if request_id:
                self.control.cancel(request_id)
            self._done(name, Found(McpStatus.FAILED, error="the Agent SDK client closed its input before "
                                                          "listing its tools"))

    def _send(self, server: str, message: dict, on_answer) -> str:
        message = {"jsonrpc": "2.0", **message}
        if not message["method"].startswith("notifications/"):
            message["id"] = next(self._ids)
        request_id = self.control.ask({"subtype": "mcp_message", "server_name": server, "message": message},
                                      on_answer)
        if server in self.waiting:
            self.waiting[server] = request_id
        return request_id

    def _initialized(self, name: str, answer) -> None:
        failed = _failure(answer)
        if failed:
            return self._done(name, Found(McpStatus.FAILED, error=f"its handshake failed: {failed}"))
        info = answer["mcp_response"].get("result", {}).get("serverInfo")
        if isinstance(info, dict):
            self.server_info[name] = {"name": str(info.get("name", name)), "version": str(info.get("version", ""))}
        self._send(name, {"method": "notifications/initialized"},
                   lambda ack: self._send(name, {"method": "tools/list"}, lambda listed: self._listed(name, listed)))

    def _listed(self, name: str, answer) -> None:
        from mcp.types import ListToolsResult
        from pydantic import ValidationError

        failed = _failure(answer)
        if failed:
            return self._done(name, Found(McpStatus.FAILED, error=f"tools/list failed: {failed}"))
        try:
            listed = ListToolsResult.model_validate(answer["mcp_response"].get("result") or {})
        except ValidationError:
            return self._done(name, Found(McpStatus.FAILED, error="its tools/list answer is not a tool list"))
        self._done(name, definitions(name, listed.tools))

    def _done(self, name: str, found: Found) -> None:
        if name not in self.waiting:
            return  # (failed already, when stdin ended)
        del self.waiting[name]
        self.found[name] = found
        if self.waiting:
            return
        service(self.rt).record_client_servers(self.sid, dict(self.found))
        left, self.left = self.left, []
        for req in left:
            self.call(self.sid, req)
        held, self.held = self.held, []
        self.on_ready(held)

    # ------------------------------------------------------------------ calls

    def call(self, sid: str, e: PermissionRequestEntry | PermissionRequest) -> None:
        """Run a call the session asked of an SDK server (a request of kind ``mcp``) and record its answer."""
        request_id = e.request_id if isinstance(e, PermissionRequestEntry) else e.id
        call = e.mcp_call or {}
        params = {"name": call.get("tool"), "arguments": call.get("arguments") or {},
                  "_meta": {"claudecode/toolUseId": e.tool_use_id}}
        self.calls[request_id] = self._send(call.get("server") or "", {"method": "tools/call", "params": params},
                                            lambda answer: self._answered(sid, request_id, answer))

    def _answered(self, sid: str, request_id: str, answer) -> None:
        self.calls.pop(request_id, None)
        failed = _failure(answer)
        result = (answer["mcp_response"].get("result") if not failed else
                  {"content": [{"type": "text", "text": failed}], "isError": True})
        try:
            service(self.rt).answer_mcp(sid, request_id, result if isinstance(result, dict) else {})
        except (RequestClosed, RequestNotFound):
            pass  # settled meanwhile (a cancel, a deny from a shell)

    def settled(self, request_id: str) -> None:
        """The request was settled elsewhere (a cancel): drop the call (the client is told to)."""
        if request_id in self.calls:
            self.control.cancel(self.calls.pop(request_id))

    # ------------------------------------------------------------------ status

    def status(self, request: dict) -> dict:
        """``mcp_status``."""
        return {"mcpServers": mcp_status(self.rt.store, self.rt.store.get_session(self.sid), self.server_info)}

    def reconnect(self, request: dict) -> dict:
        """``mcp_reconnect``: an SDK server is listed again now; another is found again at the next prompt."""
        name = request.get("serverName")
        rec = self.rt.store.get_session(self.sid)
        server = next((s for s in rec.mcp_servers if s.name == name), None)
        if server is None:
            names = ", ".join(s.name for s in rec.mcp_servers) or "none"
            raise ControlError(f"No MCP server named {name!r} in this session (its servers: {names}).")
        if server.config.type == "sdk":
            self.waiting.pop(name, None)
            self.discover()
        else:
            service(self.rt).reconnect_mcp(self.sid, name)
        return {}


#: Control requests of the Agent SDK that Mainsail does not do, and what to do instead.
NOT_DONE = {
    "mcp_toggle": "enabling and disabling an MCP server mid-session is not supported by Mainsail; leave the server "
                  "out of mcp_servers, or deny its tools with disallowed_tools=[\"mcp__<server>\"]",
    "stop_task": "Mainsail reports no background tasks to stop (it sends no task_started frames); interrupt() "
                 "stops the running turn",
}


def sdk_handlers(servers: SdkServers) -> dict[str, Callable[[dict], dict]]:
    """The control requests about MCP servers, and a clear refusal for those Mainsail does not do."""

    def refuse(subtype: str) -> Callable[[dict], dict]:
        def handler(request: dict) -> dict:
            raise ControlError(f"{subtype}: {NOT_DONE[subtype]}.")

        return handler

    return {"mcp_status": servers.status, "mcp_reconnect": servers.reconnect,
            **{subtype: refuse(subtype) for subtype in NOT_DONE}}


def _failure(answer) -> str | None:
    """Why an ``mcp_message`` answer carries no result (the control request or the JSON-RPC call failed)."""
    if isinstance(answer, Exception):
        return f"the client answered: {answer}"
    response = answer.get("mcp_response") if isinstance(answer, dict) else None
    if not isinstance(response, dict):
        return "the client's answer holds no mcp_response"
    error = response.get("error")
    if isinstance(error, dict):
        return f"MCP error {error.get('code')}: {error.get('message')}"
    return None


def mcp_status(store, rec, server_info: dict[str, dict] | None = None) -> list[dict]:
    """The session's servers as the SDK's ``McpServerStatus`` (Claude Code's ``mcp_status`` answer)."""
    defs = tool_defs(store, rec)
    out = []
    for s in rec.mcp_servers:
        c = s.config
        item: dict = {"name": s.name, "status": INIT_STATUS[s.status]}
        if s.error and s.status is not McpStatus.CONNECTED:
            item["error"] = s.error
        if s.status is McpStatus.CONNECTED and s.name in (server_info or {}):
            item["serverInfo"] = server_info[s.name]
        if c.type == "stdio":
            item["config"] = {"type": "stdio", "command": c.command, "args": list(c.args)}
        elif c.type == "http":
            item["config"] = {"type": "http", "url": c.url}
        item.update(transport=c.type, scope=c.source, source="sdk" if c.type == "sdk" else c.source)
        if s.status is McpStatus.CONNECTED:
            item["tools"] = [{"name": defs[n].tool if n in defs else n, "annotations": {}} for n in s.tools]
        out.append(item)
    return out
