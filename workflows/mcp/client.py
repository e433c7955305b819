"""MCP servers that live in the Agent SDK client's process (``create_sdk_mcp_server``): the commit side.

Only the client's connection (the ``mainsail`` process that holds its stdin and stdout,
cli/headless/sdk_mcp.py) reaches such a server, by ``mcp_message`` control requests. So:

* **Discovery** happens there, when the client connects (``initialize``): it lists each server's
  tools and records them here (:meth:`ClientServers.record_client_servers`), before any prompt; a
  worker's discovery step marks an ``sdk`` server it finds still pending as failed (no client here).
* **A call** of one of their tools is a durable request, like a PreToolUse callback's: the tool step
  ends by asking (:meth:`ClientServers.ask_client_mcp`, a request of kind ``mcp`` in the session's
  stream; no worker waits on the client), the connection sends ``tools/call`` and hands back the
  server's answer (:meth:`ClientServers.answer_client_mcp`); that commit keeps it on the call and runs
  the call's step again, which turns it into the tool result (PostToolUse hooks, size limits) as for
  any other MCP tool. A step that dies meanwhile loses nothing: the request is in the record.
"""

from __future__ import annotations

from workflows.commit import Part, Tx, peers, retry_on_conflict
from workflows.models import StepRecord, ToolCall, ToolCallStatus
from workflows.models.mcp import McpStatus, McpToolDef

__all__ = ["ClientServers", "is_client_server"]


def is_client_server(rec, server_name: str) -> bool:
    """Whether the session's server of that name is an SDK client's (reached through its connection)."""
    return any(s.name == server_name and s.config.type == "sdk" for s in rec.mcp_servers)


class ClientServers(Part):
    """The engine's side of SDK client servers (see the module docstring); a part of ``engine.mcp``."""

    approvals: peers.Approvals

    @retry_on_conflict
    def record_client_servers(self, sid: str, found: dict) -> None:
        """What the client's connection found of its servers (name -> ``Found``), replacing what an earlier
        connection found (the client's servers may have changed since)."""
        with self.store.lock(sid):
            tx = Tx(self.store.get_session(sid))
            for server in tx.rec.mcp_servers:
                if server.name in found and server.config.type == "sdk":
                    server.status, server.tools = McpStatus.PENDING, []
            self._record_found(tx, found, None)
            self.committer.commit(tx)

    @retry_on_conflict
    def reset_mcp_server(self, sid: str, name: str) -> None:
        """Connect ``name`` again: a stdio or http server is found again at the session's next prompt.

        Raises:
            KeyError: the session has no server of that name.
        """
        with self.store.lock(sid):
            tx = Tx(self.store.get_session(sid))
            server = next((s for s in tx.rec.mcp_servers if s.name == name), None)
            if server is None:
                raise KeyError(name)
            if server.status in (McpStatus.UNAPPROVED,):
                return  # (approving it is the person's, not a reconnect's)
            server.status, server.tools, server.error = McpStatus.PENDING, [], None
            self._write_defs(tx, self._kept_defs(tx.rec))
            self.committer.commit(tx)

    def ask_client_mcp(self, sid: str, step_id: str, owner: str, call: ToolCall,
                       definition: McpToolDef) -> list[StepRecord]:
        """End the call's step and wait, as a durable request of kind ``mcp``, for the client's server."""

        def apply(tx, step: StepRecord) -> None:
            found = next((c for c in tx.rec.tool_calls if c.tool_use_id == call.tool_use_id), None)
            tx.finish(step)
            if found is None or found.status is ToolCallStatus.DONE:
                return
            found.status, found.step_id = ToolCallStatus.AWAITING_APPROVAL, None
            req = self.approvals.request(tx.rec, found, call.input,
                                         f"MCP server {definition.server!r} runs in the Agent SDK client")
            req.kind, req.expires_at = "mcp", None
            req.mcp_call = {"server": definition.server, "tool": definition.tool, "arguments": call.input}
            self.approvals.ask(tx, [req])

        return self.committer.step_event(sid, step_id, owner, apply)

    def answer_client_mcp(self, sid: str, request_id: str, result: dict) -> list[StepRecord]:
        """The client's server answered a call (``result``: its CallToolResult as JSON): keep it on the call
        and run the call's step again, which records it as the tool result.

        Raises:
            RequestNotFound, RequestClosed: as :meth:`~workflows.engine.approvals.Approvals.decide_request`.
        """

        def keep(call: ToolCall) -> None:
            call.client_result = dict(result)

        return self.approvals.client_answered(sid, request_id, "client", keep)
