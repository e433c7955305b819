"""``/rewind`` over HTTP: the messages a session can be rewound to, and the rewind itself (``mainsail rewind``).

The server restores the files itself, so it must see the session's workspace (as it does for the sessions it
starts: the workspace is a directory on the server's machine).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field, model_validator

from server.api.common import service, visible_session
from server.auth import Caller, require_reader, require_writer
from server.schemas import problems
from statemachines import State
from workflows.engine.rewinding import BASH_NOTE, message_text
from workflows.exceptions import RewindRefused

router = APIRouter(tags=["sessions"], responses=problems(403, 404, 409))
READER = Depends(require_reader)
WRITER = Depends(require_writer)


class RewindPoint(BaseModel):
    """A user message one can rewind to."""

    number: int = Field(description="Its number, 1 for the first: what ``to`` takes.")
    uuid: str
    timestamp: str
    message: str = Field(description="The message as it was typed.")
    files: int = Field(description="Files the session's edit tools changed in its turn (checkpointed).")


class Rewind(BaseModel):
    to: int = Field(ge=1, description="The number of the message to rewind to before (GET .../rewind lists them).")
    code: bool = Field(default=True, description="Restore the files the session's edit tools changed since.")
    conversation: bool = Field(default=True, description="Take the message and what followed back from the model.")
    force: bool = Field(default=False, description="Restore files that changed since the session last edited them.")

    @model_validator(mode="after")
    def _something(self) -> "Rewind":
        if not (self.code or self.conversation):
            raise ValueError("code and conversation are both false: rewind at least one of them")
        return self


class Rewound(BaseModel):
    session_id: str
    message: str
    state: State
    prompt: str = Field(description="The text of the message rewound to, to send again if wanted.")
    restored: list[str]
    deleted: list[str]
    skipped: list[str] = Field(description="``path: why`` for files a code rewind left as they are.")


@router.get("/sessions/{session}/rewind", response_model=list[RewindPoint])
def rewind_points(session: str, request: Request, caller: Caller = READER):
    """The session's user messages one can rewind to, oldest first (``mainsail rewind --list``)."""
    rec = visible_session(request, caller, session)
    svc = service(request)
    points = svc.rewind_points(rec.id)
    files = svc.store.checkpoint_sizes(rec.id, [p.uuid for p in points])
    return [RewindPoint(number=i, uuid=p.uuid, timestamp=p.timestamp, message=message_text(p), files=n)
            for i, (p, n) in enumerate(zip(points, files), 1)]


@router.post("/sessions/{session}/rewind", response_model=Rewound)
def rewind(session: str, body: Rewind, request: Request, caller: Caller = WRITER):
    """Rewind an idle session's code, conversation or both to before message ``to`` (``mainsail rewind``)."""
    rec = visible_session(request, caller, session)
    svc = service(request)
    points = svc.rewind_points(rec.id)
    if body.to > len(points):
        raise RewindRefused(f"Session {rec.id[:8]} has {len(points)} message(s) to rewind to; there is no message "
                            f"{body.to}. GET /api/sessions/{rec.id[:8]}/rewind lists them.")
    done = svc.rewind(rec.id, points[body.to - 1].uuid, code=body.code, conversation=body.conversation,
                      force=body.force)
    e = done.entry
    parts = " and ".join(p for p, on in (("code", e.code), ("conversation", e.conversation)) if on)
    message = f"Rewound the {parts} to before message {body.to}." + (f" {BASH_NOTE}" if e.code else "")
    return Rewound(session_id=rec.id, message=message, state=svc.store.get_session(rec.id).state,
                   prompt=e.prompt, restored=e.restored, deleted=e.deleted, skipped=e.skipped)
