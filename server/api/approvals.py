"""Permission requests waiting for a person, and deciding them (``mainsail pending/approve/deny``).

An approval by a token without the admin scope of a call that may write ``.claude/``, ``.mcp.json``,
``.mainsail/``, ``.git/`` or a settings file (or an "always" whose rules would allow one), and a scoped
token's approval of a call reaching outside its workspaces, are refused with a 403
(:meth:`server.auth.Caller.check_approval`); the console's inbox buttons post here too.

An "always" answer to a request that offers none (:func:`workflows.permissions.always_offered`) is
refused with a 409 by the engine, before anything is decided.

A decision records the token that made it (``token:NAME``) in the request and the transcript's
decision entry, so a team can see who let a command run.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from server.api.common import engine, service, visible_session
from server.auth import Caller, require_reader, require_writer
from server.schemas import Decided, Decision, PendingRequest, problems
from workflows.engine.approvals import request_of
from workflows.permissions import always_offered, prompt_text

router = APIRouter(tags=["approvals"], responses=problems(403, 404, 409))


@router.get("/approvals", response_model=list[PendingRequest])
def pending(request: Request, caller: Caller = Depends(require_reader)):  # noqa: B008
    """Every request waiting for a decision in the sessions this token may see, oldest first."""
    store = engine(request).store
    out = []
    for rec in store.get_sessions(store.awaiting_sessions()):
        if not caller.sees(rec):
            continue
        for req in rec.pending_requests():
            out.append(PendingRequest(session_id=rec.id, session_title=rec.title, workspace=rec.workspace,
                                      parent_session_id=rec.parent_session_id, agent_type=rec.agent_type,
                                      prompt=prompt_text(req.tool, req.input, req.always),
                                      always_offered=always_offered(req.always), request=req))
    return sorted(out, key=lambda p: p.request.created_at)


def _decide(request: Request, caller: Caller, session: str, body: Decision, approve: bool) -> Decided:
    rec = visible_session(request, caller, session)
    eng = engine(request)
    sid, req = request_of(eng.store, rec.id, body.request)
    target = eng.store.get_session(sid)
    caller.check_session(target)
    if approve:  # an approval lets a bypassPermissions turn go on: the token needs that scope (a denial never)
        caller.check_bypass(target)
        # ... and one that may write a protected path needs the admin scope; a scoped token's, its workspaces
        caller.check_approval(target, req, body.always, eng.store.tokens().records())
    service(request).decide(sid, req.id, approve, always=approve and body.always,
                            message=None if approve else body.message, decider=caller.decided_by)
    return Decided(session_id=sid, request_id=req.id, tool=req.tool, summary=req.summary, approved=approve,
                   rules_added=list(req.always) if approve and body.always else [], decided_by=caller.decided_by)


@router.post("/sessions/{session}/approve", response_model=Decided)
def approve(session: str, request: Request, body: Decision | None = None,
            caller: Caller = Depends(require_writer)):  # noqa: B008
    """Approve a pending request of the session (or of one of its sub-agents); ``always`` adds its rule."""
    return _decide(request, caller, session, body or Decision(), True)


@router.post("/sessions/{session}/deny", response_model=Decided)
def deny(session: str, request: Request, body: Decision | None = None,
         caller: Caller = Depends(require_writer)):  # noqa: B008
    """Deny a pending request; the model gets an error result with ``message``."""
    return _decide(request, caller, session, body or Decision(), False)
