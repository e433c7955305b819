"""The API's request and response bodies (pydantic, so ``/api/openapi.json`` describes them).

Responses are views of :class:`workflows.models.SessionRecord`, never the record itself: a record
holds what a teammate must not read through the API (its environment, MCP servers' headers and
secrets, hook commands, the assembled context).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from statemachines import State
from workflows.models import PathText, PermissionMode, PermissionRequest, SessionRecord, Usage
from workflows.models.options import RemoteOptions
from workflows.permissions.bypass import effective_mode


class NewSession(RemoteOptions):
    """``POST /api/sessions``: a new session in ``workspace`` (a directory on the server's machine),
    with ``prompt`` submitted at once when given. Options are those of ``mainsail submit``."""

    model_config = ConfigDict(extra="ignore")

    workspace: PathText = Field(description="Absolute path of the session's workspace on the server's machine.")
    prompt: str | None = None


class Message(BaseModel):
    """``POST /api/sessions/{id}/messages``: run ``message`` next (queued while the session is busy)."""

    message: str | None = None
    interrupt: bool = Field(default=False, description="Cancel the running turn first.")
    clear: bool = Field(default=False, description="Drop the messages queued before this one.")


class Cancel(BaseModel):
    clear: bool = Field(default=False, description="Also drop the queued messages, so the session stays idle.")


class Compact(BaseModel):
    instructions: str | None = None


class Decision(BaseModel):
    """Approve or deny a pending request; ``request`` may be left out when only one waits."""

    request: str | None = None
    always: bool = Field(default=False, description="Approve: also allow later calls like this one (a 409 when "
                                                    "the request offers no \"always\": see always_offered).")
    message: str | None = Field(default=None, description="Deny: tell the model why, or what to do instead.")


class SessionSummary(BaseModel):
    """A row of ``GET /api/sessions``."""

    id: str
    title: str
    state: State
    workspace: str
    model: str
    permission_mode: PermissionMode
    turns: int
    cost_usd: float | None
    tokens: int
    created_at: float
    updated_at: float
    queued: int = 0
    pending: int = 0
    parent_session_id: str | None = None
    agent_type: str | None = None
    children: list[str] = Field(default_factory=list)
    token: str = Field(default="", description="The API token that started it (\"\": a person at the server).")

    @classmethod
    def of(cls, rec: SessionRecord, queued: int = 0) -> SessionSummary:
        return cls(id=rec.id, title=rec.title, state=rec.state, workspace=rec.workspace, model=rec.model,
                   permission_mode=effective_mode(rec), turns=rec.turns, cost_usd=rec.cost_usd,
                   tokens=rec.usage.total, created_at=rec.created_at, updated_at=rec.updated_at, queued=queued,
                   pending=len(rec.pending_requests()), parent_session_id=rec.parent_session_id,
                   agent_type=rec.agent_type, children=list(rec.children), token=rec.token)


class SessionDetail(SessionSummary):
    """``GET /api/sessions/{id}``: the facts ``mainsail show`` prints."""

    git_branch: str | None = None
    inbox: list[str] = Field(default_factory=list)
    usage: Usage
    cost_by_model: dict[str, float | None] = Field(default_factory=dict)
    cost_by_kind: dict[str, float | None] = Field(default_factory=dict)
    max_turns: int | None = None
    max_budget_usd: float | None = None
    budget_stop: str | None = Field(default=None, description="Why its last prompt was refused: a budget of its "
                                                              "token or workspace is spent (None: none was).")
    fallback_model: str | None = None
    additional_directories: list[str] = Field(default_factory=list)
    rules: dict[str, list[str]] = Field(default_factory=dict)
    pending_requests: list[PermissionRequest] = Field(default_factory=list)
    todos: list[dict] = Field(default_factory=list)
    last_error: str | None = None
    context_tokens: int = 0
    warnings: list[str] = Field(default_factory=list, description="Said when the session was created.")

    @classmethod
    def of(cls, rec: SessionRecord, inbox: list[str] | None = None, warnings: list[str] | None = None
           ) -> SessionDetail:
        base = SessionSummary.of(rec, len(inbox or [])).model_dump()
        return cls(**base, git_branch=rec.git_branch, inbox=inbox or [], usage=rec.usage,
                   cost_by_model=rec.cost_by_model, cost_by_kind=rec.cost_by_kind, max_turns=rec.max_turns,
                   max_budget_usd=rec.max_budget_usd, budget_stop=rec.budget_stop,
                   fallback_model=rec.fallback_model,
                   additional_directories=rec.additional_directories,
                   rules={"allow": [r.rule for r in rec.rules.allow], "ask": [r.rule for r in rec.rules.ask],
                          "deny": [r.rule for r in rec.rules.deny]},
                   pending_requests=rec.pending_requests(), todos=rec.todos, last_error=rec.last_error,
                   context_tokens=rec.context_tokens + rec.context_added, warnings=warnings or [])


class TranscriptPage(BaseModel):
    """Transcript entries (as stored: Claude Code-shaped JSON) after ``after``; ``next`` continues."""

    entries: list[dict]
    ids: list[str] = Field(description="The stream id of each entry (entries of one commit share one).")
    next: str | None = None


class PendingRequest(BaseModel):
    """A permission request waiting for a person, with the call as they must see it."""

    session_id: str
    session_title: str
    workspace: str
    parent_session_id: str | None = None
    agent_type: str | None = None
    prompt: str
    #: Whether "always" is offered (workflows.permissions.always_offered): when not, an approval with
    #: ``always`` is refused with a 409 and the console shows no Always button.
    always_offered: bool = False
    request: PermissionRequest


class Decided(BaseModel):
    session_id: str
    request_id: str
    tool: str
    summary: str
    approved: bool
    rules_added: list[str] = Field(default_factory=list)
    decided_by: str


class Done(BaseModel):
    """What a verb did, in the words the CLI prints."""

    session_id: str
    message: str
    state: State


class Problem(BaseModel):
    """An error: what is wrong and what to do about it (the words the CLI prints for the same error)."""

    detail: str


class FieldProblem(BaseModel):
    loc: list[str | int] = Field(description="Where: 'body', 'query', 'path' or 'header', then the field's path.")
    msg: str
    type: str


class InvalidRequest(Problem):
    """A 422: the request does not match this schema; ``detail`` sums up ``errors`` (never the input)."""

    errors: list[FieldProblem]


#: What each error status of the API means (every answer but a 500 is documented; a 500 names no internals).
_MEANING = {
    400: "The request cannot be acted on as asked (a workspace that is not a directory, a wrong cron, a bad id).",
    401: "No API token, or an unknown or revoked one.",
    402: "A budget of the session's token or workspace is spent: no new turn starts until it is raised.",
    403: "The token may not do this (read-only, another workspace, bypassPermissions without --allow-bypass).",
    404: "No such session or schedule, or one this token may not see (the same answer).",
    409: "Not now: the session is busy, the prefix matches several, the request was already decided.",
    413: "The request body is over the server's limit (1 MiB by default).",
    422: "The request does not match this schema.",
    503: "The server cannot reach its Redis right now; try again shortly.",
}


def problems(*codes: int) -> dict:
    """The OpenAPI ``responses`` of these error statuses (for a router's or a route's ``responses``)."""
    return {code: {"model": InvalidRequest if code == 422 else Problem, "description": _MEANING[code]}
            for code in codes}


__all__ = [
    "Cancel",
    "Compact",
    "Decided",
    "Decision",
    "Done",
    "FieldProblem",
    "InvalidRequest",
    "Message",
    "NewSession",
    "PendingRequest",
    "Problem",
    "SessionDetail",
    "SessionSummary",
    "TranscriptPage",
    "problems",
]
