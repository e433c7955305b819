"""Permission requests: asking a person (no worker waits), settling their answer or its timeout.

A part of :class:`workflows.engine.Engine` (``engine.approvals``); it commits through
:class:`workflows.commit.Committer`.
"""

from __future__ import annotations

import time
from typing import Callable

from statemachines import State
from workflows.commit import Part, Tx, peers, retry_on_conflict
from workflows.commit.support import (
    DENIED_BY_USER,
    KEEP_REQUESTS,
    _denial,
    _request_id,
    find_request,
)
from workflows.edits.preview import preview
from workflows.exceptions import (
    AlwaysNotOffered,
    ClientOnlyRequest,
    RequestClosed,
    RequestNotFound,
    SessionNotFound,
)
from workflows.mcp.catalog import find_tool
from workflows.models import (
    PermissionDecisionEntry,
    PermissionRequest,
    PermissionRequestEntry,
    RequestStatus,
    SessionRecord,
    StepRecord,
    ToolCall,
    ToolCallStatus,
)
from workflows.permissions import Decision, always_offered, always_rules, decide, summary
from workflows.store import keys
from workflows.store.metrics import DECISION_BUCKETS, TALLY
from workflows.tools.base import ToolOutput


class Approvals(Part):
    """Permission requests: asking a person (no worker waits), settling their answer or its timeout."""

    commands: peers.Commands
    hooks: peers.Hooks
    tools: peers.Tools
    turns: peers.Turns

    def find(self, rec: SessionRecord, request: str | None) -> PermissionRequest:
        """The session's request named by id or unique prefix (None: the only pending one): :func:`find_request`."""
        return find_request(rec, request)

    def request(self, rec: SessionRecord, call: ToolCall, tool_input: dict, reason: str) -> PermissionRequest:
        """The durable question about ``call`` (run with ``tool_input``) for a person; an edit's with the
        diff it would make in the file as it is now."""
        shown = preview(rec, call.name, tool_input)
        return PermissionRequest(
            id=_request_id(rec), tool_use_id=call.tool_use_id, tool=call.name, input=tool_input, epoch=rec.epoch,
            summary=summary(call.name, tool_input), reason=reason, always=always_rules(call.name, tool_input),
            expires_at=(time.time() + rec.approval_timeout_seconds) if rec.approval_timeout_seconds else None,
            diff=shown.diff, diff_note=shown.note,
        )

    def ask(self, tx: Tx, asked: list[PermissionRequest]) -> None:
        """Put the session in ``awaiting_permission`` with these questions; no worker waits."""
        tx.counts.append(lambda n=len(asked): TALLY.add("mainsail_approvals_asked_total", n))
        rec = tx.rec
        rec.permission_requests = rec.permission_requests[-(KEEP_REQUESTS - len(asked)):] + asked
        tx.fire("approval_needed")
        self.hooks.notify_permission(tx, asked)
        for req in asked:
            tx.add(PermissionRequestEntry(
                session_id=rec.id, request_id=req.id, tool_use_id=req.tool_use_id, tool=req.tool,
                input=req.input, summary=req.summary, reason=req.reason, expires_at=req.expires_at,
                always=req.always, kind=req.kind, callbacks=req.callbacks, hook_input=req.hook_input,
                mcp_call=req.mcp_call, diff=req.diff, diff_note=req.diff_note))
            if req.expires_at:
                tx.approval_deadlines[keys.lease_member(rec.id, req.id)] = req.expires_at

    @retry_on_conflict
    def decide_request(self, sid: str, request: str | None, approve: bool, *, always: bool = False,
                       message: str | None = None, by: str = "user",
                       updated_input: dict | None = None, decider: str | None = None) -> list[StepRecord]:
        """Approve or deny a pending permission request (``request``: id, prefix, or None for the only one).

        ``decider``: who decided, when known beyond "user" (the team server's ``token:NAME``), kept in the
        request and its decision entry.
        ``updated_input``: the approver's changed input for the call (an SDK client's ``updatedInput``);
        it must be valid for the tool, and it is checked again where the call runs (a deny rule
        still refuses it).

        Raises:
            RequestNotFound: no such request, or several pending and none named.
            RequestClosed: already decided, or superseded by a cancel.
            AlwaysNotOffered: ``always`` for a request that offers no "always" rule.
            ToolInputError: ``updated_input`` is not valid input for the tool.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            req = find_request(rec, request)
            if approve and req.kind == "mcp":
                server = (req.mcp_call or {}).get("server")
                raise ClientOnlyRequest(
                    f"Request {req.id} of session {sid[:8]} is a call of {req.tool} on MCP server {server!r}, which "
                    "runs inside the Agent SDK client's process: only that client's connection can run it. It is "
                    f"still pending: deny it (mainsail deny {sid[:8]} {req.id}) to tell the model it failed.")
            if approve and always and not always_offered(req.always):
                raise AlwaysNotOffered(
                    f"Request {req.id} of session {sid[:8]} ({req.tool}: {req.summary}) does not offer "
                    "\"always\": no rule can cover this call safely. It is still pending: approve it once "
                    "(without always) or deny it.")
            if approve and updated_input is not None and updated_input != req.input:
                find_tool(self.store, rec, req.tool).validate(updated_input)
                req.input = updated_input
                call = next(c for c in rec.tool_calls if c.tool_use_id == req.tool_use_id)
                call.input = updated_input
            tx = Tx(rec)
            self._settle(tx, req, approve, by=by, message=message, always=always, decider=decider)
            if approve and always:
                for other in rec.pending_requests():
                    if other.kind != "permission":  # the client's callbacks or server still have to run
                        continue
                    perm = decide(find_tool(self.store, rec, other.tool), other.input, rec)
                    if perm.decision is Decision.ALLOW:
                        self._settle(tx, other, True, by="rule", reason=perm.source)
            tx.fire("permission_decided")
            if rec.state is State.RUNNING_TOOLS:
                self.tools.advance_tools(tx)
            self.committer.commit(tx)
        return tx.dispatch

    @retry_on_conflict
    def client_answered(self, sid: str, request_id: str, by: str, keep: Callable[[ToolCall], None]) -> list[StepRecord]:
        """The SDK client answered a request only it settles (kind ``hook`` or ``mcp``): ``keep`` puts its answer
        on the call, whose step then runs again to act on it.

        Raises:
            RequestNotFound, RequestClosed: as :meth:`decide_request`.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            req = find_request(rec, request_id)
            tx = Tx(rec)
            req.status, req.decided_by, req.decided_at = RequestStatus.APPROVED, by, time.time()
            tx.approvals_cleared.append(keys.lease_member(rec.id, req.id))
            call = next(c for c in rec.tool_calls if c.tool_use_id == req.tool_use_id)
            keep(call)
            call.status = ToolCallStatus.WAITING
            tx.fire("permission_decided")
            if rec.state is State.RUNNING_TOOLS:
                self.tools.advance_tools(tx)
            self.committer.commit(tx)
        return tx.dispatch

    def expire_approvals(self, now: float | None = None) -> list[StepRecord]:
        """Deny every request whose approval timeout has passed; return the steps that follow."""
        now = now or time.time()
        out: list[StepRecord] = []
        for sid, request_id in self.store.due_approvals(now):
            try:
                out.extend(self.decide_request(sid, request_id, False, by="timeout"))
            except (RequestClosed, RequestNotFound, SessionNotFound):
                self.store.forget_approval_deadline(sid, request_id)
        return out

    def _settle(self, tx: Tx, req: PermissionRequest, approve: bool, *, by: str, message: str | None = None,
                always: bool = False, reason: str = "", decider: str | None = None) -> None:
        rec = tx.rec
        req.status = RequestStatus.APPROVED if approve else RequestStatus.DENIED
        req.decided_by = decider or by
        waited = time.time() - req.created_at
        tx.counts.append(lambda: TALLY.observe("mainsail_approval_decision_seconds", waited, DECISION_BUCKETS,
                                               decision="allow" if approve else "deny", by=by))
        req.decided_at = time.time()
        req.message = message
        req.diff = ""  # shown while it waited (the transcript's request entry keeps it): the record stays small
        tx.approvals_cleared.append(keys.lease_member(rec.id, req.id))
        call = next(c for c in rec.tool_calls if c.tool_use_id == req.tool_use_id)
        added: list[str] = []
        if approve and req.kind == "hook":  # skip the client's callbacks; the permission is decided as usual
            call.status = ToolCallStatus.WAITING
            call.client_hook_runs = call.client_hook_runs or []
        elif approve:
            call.status = ToolCallStatus.WAITING
            call.approved_by = by if by != "rule" else None
            if always:  # exactly the rules the person was shown
                for rule in req.always:
                    rec.rules.add("allow", rule, "session")
                    added.append(rule)
        elif call.prelude:  # a custom command's ! line: the command does not run (workflows.engine.commands)
            self.commands.command_refused(tx, call, by, message)
        else:
            if by == "timeout":
                text = (f"Permission to use {call.name} was denied: nobody answered within "
                        f"{rec.approval_timeout_seconds:g} seconds. Continue without it, or ask the user.")
            else:
                text = DENIED_BY_USER.format(tool=call.name)
                if message:
                    text += f" To tell you how to proceed, the user said:\n{message}"
            self.turns.add_tool_result(tx, call.tool_use_id, ToolOutput(
                content=text, is_error=True, denied=True,
                display=f"denied ({by})" + (f": {message}" if message else "")))
            call.status = ToolCallStatus.DONE
            rec.run_denials.append(_denial(call.name, call.tool_use_id, call.input))
        tx.add(PermissionDecisionEntry(
            session_id=rec.id, request_id=req.id, tool_use_id=req.tool_use_id, tool=req.tool,
            decision="allow" if approve else "deny", decided_by=by, reason=reason, message=message,
            rules_added=added, decider=decider))


def request_of(store, sid: str, request: str | None) -> tuple[str, PermissionRequest]:
    """The session that holds the pending ``request`` (``sid`` or, for a parent, one of its sub-agents
    waiting for a person), and the request. Every client that decides (CLI, server) names it this way.

    Raises:
        RequestNotFound: no such request, or several pending and none named.
        RequestClosed: already decided, or superseded by a cancel.
    """
    from workflows.engine.subagents import tree

    rec = store.get_session(sid)
    family = [r for _, r in tree(store, sid)] if rec.children else [rec]
    waiting = [r for r in family if r.pending_requests()]
    if request is not None:
        for r in waiting:
            if any(q.id.startswith(request) for q in r.pending_requests()):
                return r.id, find_request(r, request)
        return sid, find_request(rec, request)  # says it is not there, and what is
    if len(waiting) == 1:
        return waiting[0].id, find_request(waiting[0], None)
    if not waiting:
        return sid, find_request(rec, None)
    ids = ", ".join(f"{q.id} ({r.agent_type or 'main'})" for r in waiting for q in r.pending_requests())
    raise RequestNotFound(f"Session {sid[:8]} and its sub-agents have several pending requests: {ids}. Name one "
                          f"(mainsail pending lists them).")
