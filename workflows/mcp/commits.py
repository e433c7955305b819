"""The engine's MCP events (``engine.mcp``, a part of :class:`~workflows.engine.Engine`): discovery before the prompt.

A session's servers are found when a run starts while some are still ``pending``: the prompt is
held (``SessionRecord.held_prompt``, as for prompt hooks), the session moves to ``querying`` and a
discovery step goes to the session's tools queue, the worker that runs its tool calls. Its commit
records each server's status and tools, writes the tool definitions (``session:{sid}:mcp:{digest}``)
in the same transaction, and releases the prompt: the first model call already offers the tools,
and ``system/init`` (written when the prompt's entry appears) lists them. A server that failed is
a warning in the transcript; the run goes on without its tools. A discovery whose worker died is
run again elsewhere (listing tools has no effect to repeat); one that failed for good marks the
servers still pending as failed, and the run goes on.
"""

from __future__ import annotations

import json

from workflows.commit import Tx, peers, retry_on_conflict
from workflows.mcp.calls import Found
from workflows.mcp.client import ClientServers
from workflows.mcp.catalog import tool_defs
from workflows.models import StepKind, StepRecord, StepStatus, SystemEntry
from workflows.models.mcp import McpServer, McpStatus, McpToolDef, tools_digest
from workflows.store import keys

__all__ = ["McpCommits"]


class McpCommits(ClientServers):
    """MCP discovery in the engine (see the module docstring); the SDK client's servers' events come from
    :class:`~workflows.mcp.client.ClientServers`."""

    hooks: peers.Hooks

    def mcp_waiting(self, rec) -> bool:
        """Servers wait to be connected: the next prompt is held for a discovery step."""
        return any(s.status is McpStatus.PENDING for s in rec.mcp_servers)

    def send_mcp_discovery(self, tx) -> None:
        self.committer.new_step(tx, StepKind.MCP)

    def settle_mcp_discovery(self, sid: str, step_id: str, owner: str, found: dict[str, Found]) -> list[StepRecord]:
        """Commit what discovery found and, in the same transaction, release the held prompt."""

        def apply(tx, step: StepRecord) -> None:
            tx.finish(step)
            self._record_found(tx, found, step)
            if tx.rec.held_prompt is not None:
                self.hooks.release_prompt(tx)

        return self.committer.step_event(sid, step_id, owner, apply)

    def mcp_discovery_failed(self, tx, step: StepRecord, error: str) -> None:
        """The discovery step failed for good: its servers are failed, and the run goes on without them."""
        step.status, step.error = StepStatus.FAILED, error
        tx.steps.append(step)
        tx.cleared.append(step)
        waiting = [s for s in tx.rec.mcp_servers if s.status is McpStatus.PENDING]
        self._record_found(tx, {s.name: Found(McpStatus.FAILED, error=f"discovery failed: {error}")
                                for s in waiting}, step)
        if tx.rec.held_prompt is not None:
            self.hooks.release_prompt(tx)

    @retry_on_conflict
    def add_mcp_servers(self, sid: str, servers: list[McpServer]):
        """Give a session more servers (``--mcp-config`` on a resume): a new name is added, a changed
        config replaces the old one (found again at the next prompt), an identical one changes nothing."""
        with self.store.lock(sid):
            tx = Tx(self.store.get_session(sid))
            rec = tx.rec
            changed = False
            for new in servers:
                at = next((i for i, s in enumerate(rec.mcp_servers) if s.name == new.name), None)
                if at is not None and rec.mcp_servers[at].config.fingerprint() == new.config.fingerprint():
                    continue
                changed = True
                if at is None:
                    rec.mcp_servers.append(new)
                else:
                    rec.mcp_servers[at] = new
            if changed:
                self._write_defs(tx, self._kept_defs(rec))
                self.committer.commit(tx)
            return rec

    def _record_found(self, tx, found: dict[str, Found], step: StepRecord | None) -> None:
        rec = tx.rec
        defs = self._kept_defs(rec)
        for server in rec.mcp_servers:
            result = found.get(server.name)
            if result is None or server.status is not McpStatus.PENDING:
                continue
            server.status, server.error = result.status, result.error
            server.tools = [d.name for d in result.tools]
            defs.update({d.name: d for d in result.tools})
            step_id = step.id if step else None
            if result.status is McpStatus.FAILED:
                tx.add(SystemEntry(session_id=rec.id, subtype="warning", step_id=step_id, content=(
                    f"MCP server {server.name!r} failed: {result.error} The session goes on without its tools.")))
            if result.skipped:
                tx.add(SystemEntry(session_id=rec.id, subtype="warning", step_id=step_id, content=(
                    f"MCP server {server.name!r}: tools left out: {'; '.join(result.skipped)}.")))
        self._write_defs(tx, defs)

    def _kept_defs(self, rec) -> dict[str, McpToolDef]:
        """The recorded definitions of the servers that stay connected."""
        live = {n for s in rec.mcp_servers if s.status is McpStatus.CONNECTED for n in s.tools}
        return {n: d for n, d in tool_defs(self.store, rec).items() if n in live}

    def _write_defs(self, tx, defs: dict[str, McpToolDef]) -> None:
        """Name the new definitions in the record and write them, both in ``tx``; by name, as Claude Code
        lists MCP tools (after its own)."""
        rec = tx.rec
        live = {n for s in rec.mcp_servers if s.status is McpStatus.CONNECTED for n in s.tools}
        ordered = [defs[n] for n in sorted(defs) if n in live]
        if not ordered:
            rec.mcp_tools_digest = None
            return
        digest = tools_digest(ordered)
        if digest == rec.mcp_tools_digest:
            return
        rec.mcp_tools_digest = digest
        payload = json.dumps([d.model_dump() for d in ordered], separators=(",", ":"))
        tx.extra.append(lambda ops: ops.set(keys.session_mcp_tools(rec.id, digest), payload))
