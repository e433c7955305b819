"""Costs and budgets through the API (``mainsail costs``, ``mainsail budget``).

``GET /api/costs`` sums the cost ledger by any of day, token, workspace and model; a token restricted to
workspaces sees only its workspaces' rows. ``GET /api/budgets`` lists the budgets a token may see with what
each has spent in its period. Setting or removing a budget needs an admin token: a token that could raise its
own budget would not be held by it.
"""

from __future__ import annotations

import os

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field

from server.api.common import engine
from server.auth import Caller, require_reader, require_writer
from server.schemas import problems
from workflows.costs.budgets import Budget, budget_key, make_budget, read_budgets, spent
from workflows.costs.report import check_day, parse_by, report
from workflows.store.costs import day_of

router = APIRouter(tags=["costs"], responses=problems(403, 404))
READER = Depends(require_reader)
WRITER = Depends(require_writer)


class BudgetView(Budget):
    """A budget and what its sessions spent in its current period."""

    spent_usd: float = 0.0
    unpriced_calls: int = 0


class NewBudget(BaseModel):
    """``PUT /api/budgets``: hold ``token``'s or ``workspace``'s sessions to ``limit_usd`` per ``period``."""

    token: str | None = None
    workspace: str | None = None
    limit_usd: float = Field(gt=0)
    period: str = Field(default="month", description="day, month or total (UTC).")


def _admin(caller: Caller) -> None:
    if not caller.token.admin:
        raise HTTPException(403, f"Token {caller.name!r} may not set or remove budgets: that needs an admin token "
                                 f"(`mainsail token update {caller.name} --admin` at the server), or run "
                                 "`mainsail budget` at the server.")


def _may_see(caller: Caller, budget: Budget) -> bool:
    if budget.scope == "token":
        return budget.name == caller.name or caller.token.admin
    return caller.token.allows_workspace(budget.name)


@router.get("/costs")
def costs(request: Request, by: str | None = None, since: str | None = None, until: str | None = None,
          caller: Caller = READER) -> dict:
    """What sessions cost, summed by ``by`` (comma-separated: day, token, workspace, model; default all), for
    the days ``since``..``until`` (YYYY-MM-DD, UTC, inclusive). Calls of a model without a price are counted in
    ``unpriced_calls`` (their cost is unknown, not zero)."""
    dims, first, last = parse_by(by), check_day(since, "since"), check_day(until, "until")
    store = engine(request).store.costs()
    days = [d for d in store.days() if (not first or d >= first) and (not last or d <= last)]
    return report(store.rows(days), dims, since=first, until=last,
                  visible=lambda row: caller.token.allows_workspace(row.workspace))


@router.get("/budgets")
def budgets(request: Request, caller: Caller = READER) -> list[BudgetView]:
    """The budgets this token may see, each with what was spent in its period."""
    store = engine(request).store.costs()
    shown = [b for b in read_budgets(store.budgets()) if _may_see(caller, b)]
    rows = store.rows(store.days()) if shown else []
    today = day_of()
    out = []
    for b in shown:
        cost, unpriced = spent(b, rows, today)
        out.append(BudgetView(**b.model_dump(), spent_usd=cost, unpriced_calls=unpriced))
    return out


@router.put("/budgets")
def set_budget(body: NewBudget, request: Request, caller: Caller = WRITER) -> Budget:
    """Set (or replace) a token's or a workspace's budget (admin tokens only)."""
    _admin(caller)
    budget = make_budget(token=body.token, workspace=body.workspace, limit_usd=body.limit_usd, period=body.period,
                         set_by=caller.decided_by)
    engine(request).store.costs().put_budget(budget.key, budget.model_dump_json())
    return budget


@router.delete("/budgets", status_code=204)
def remove_budget(request: Request, token: str | None = None, workspace: str | None = None,
                  caller: Caller = WRITER) -> None:
    """Remove a token's (``?token=NAME``) or a workspace's (``?workspace=PATH``) budget (admin tokens only)."""
    _admin(caller)
    key = budget_key("token", token) if token else budget_key("workspace", os.path.realpath(workspace or "/"))
    if not (token or workspace) or not engine(request).store.costs().remove_budget(key):
        raise HTTPException(404, f"No budget for {token or workspace or '(nothing named)'}. List them with "
                                 "GET /api/budgets.")


__all__ = ["router"]
