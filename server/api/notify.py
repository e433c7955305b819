"""Webhook subscriptions through the API (``mainsail notify``): list, add, remove.

Reading needs any token; adding and removing a writer token. A token sees and changes the subscriptions of
its own sessions (``token``: its name) and those of workspaces it may use; an admin token may subscribe to
another token's sessions too. A subscription's secret is shown once, in the answer that made it; a URL is
shown cut to its origin (a Slack URL's path is its secret).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field

from server.api.common import engine, reach
from server.auth import Caller, require_reader, require_writer
from server.schemas import problems
from workflows.notify.subscriptions import Subscription, make_subscription

router = APIRouter(prefix="/notify", tags=["notify"], responses=problems(403, 404))
READER = Depends(require_reader)
WRITER = Depends(require_writer)


class NewSubscription(BaseModel):
    """``POST /api/notify/subscriptions``: send ``events`` of a token's or a workspace's sessions to ``url``."""

    kind: str = Field(description="slack: a Slack incoming webhook (text/blocks); generic: signed JSON.")
    url: str = Field(description="http:// or https:// only; redirects are never followed.")
    events: list[str] | None = Field(default=None, description="Any of waiting, finished, failed (default: all).")
    token: str | None = Field(default=None, description="The sessions of this token (only an admin token may "
                                                        "name another than itself).")
    workspace: str | None = Field(default=None, description="The sessions under this directory (one the token may "
                                                            "use).")
    secret: str | None = Field(default=None, description="generic: the signing secret (default: a random one, "
                                                         "shown once).")


def _may_see(caller: Caller, sub: Subscription) -> bool:
    if sub.token:
        return sub.token == caller.name or caller.token.admin
    return caller.token.allows_workspace(sub.workspace)


@router.get("/subscriptions")
def list_subscriptions(request: Request, caller: Caller = READER) -> list[dict]:
    """The subscriptions this token may see (never their secrets)."""
    return [s.shown() for s in engine(request).store.notify().all() if _may_see(caller, s)]


@router.post("/subscriptions", status_code=201)
def add_subscription(body: NewSubscription, request: Request, caller: Caller = WRITER) -> dict:
    """A new subscription; a generic one's secret is in this answer, and never again."""
    if body.token and body.token != caller.name and not caller.token.admin:
        raise HTTPException(403, f"Token {caller.name!r} may subscribe to its own sessions (token "
                                 f"{caller.name!r}) or its workspaces', not token {body.token!r}'s: that needs an "
                                 "admin token.")
    workspace = reach(caller, body.workspace) if body.workspace else None
    sub = make_subscription(kind=body.kind, url=body.url, token=body.token, workspace=workspace, events=body.events,
                            secret=body.secret, created_by=caller.decided_by,
                            private_ok=caller.token.admin)
    engine(request).store.notify().add(sub)
    return sub.shown(with_secret=True)


@router.delete("/subscriptions/{sub_id}", status_code=204)
def remove_subscription(sub_id: str, request: Request, caller: Caller = WRITER) -> None:
    """Remove a subscription: its events stop at once (a delivery under way still ends)."""
    store = engine(request).store.notify()
    sub = store.get(sub_id) if sub_id.isalnum() else None
    if sub is None or not _may_see(caller, sub):
        raise HTTPException(404, f"No subscription {sub_id[:32]!r}. List them with GET /api/notify/subscriptions.")
    store.remove(sub.id)


__all__ = ["router"]
