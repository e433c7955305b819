"""Budgets: a limit in USD per period on what one API token's sessions, or one workspace's, may spend.

A budget is checked when a prompt is submitted (:meth:`workflows.engine.prompts.PromptVerbs.submit`, the one
way into a session): once what its token or workspace spent in the period reaches the limit, no new turn
starts; the refusal names the budget, its limit, the amount spent and how to raise it, and is written into
the session's transcript as a run's result (``error_max_budget_usd``, no turn), so every watcher (the stream,
``mainsail watch``, the console) shows it and webhooks get a ``failed`` event. A turn
already running goes on (a session's own ``--max-budget-usd`` caps a run). A call of a model without a price
cannot be held to a budget: a budget whose period has any refuses new turns too, as a run's budget does.

Periods are UTC: ``day`` (today), ``month`` (since the 1st), ``total`` (since the ledger began).
"""

from __future__ import annotations

import os
import time
from typing import Literal

from pydantic import Field, ValidationError

from workflows.exceptions import ConfigurationError
from workflows.models.valid_text import ValidJson
from workflows.store.costs import CostRow, day_of

Period = Literal["day", "month", "total"]


class Budget(ValidJson):
    """A limit on what a token's sessions (``scope`` token, ``name`` its name) or a workspace's (``scope``
    workspace, ``name`` its resolved path, everything under it included) may spend per ``period``."""

    scope: Literal["token", "workspace"]
    name: str = Field(min_length=1)
    limit_usd: float = Field(gt=0)
    period: Period = "month"
    set_by: str = ""
    set_at: float = Field(default_factory=time.time)

    @property
    def key(self) -> str:
        return budget_key(self.scope, self.name)

    def label(self) -> str:
        return f"token {self.name!r}" if self.scope == "token" else f"workspace {self.name}"

    def covers(self, token: str, workspace: str) -> bool:
        """Whether a session of ``token`` in ``workspace`` counts against this budget."""
        if self.scope == "token":
            return bool(token) and token == self.name
        return workspace == self.name or workspace.startswith(self.name.rstrip("/") + "/")

    def first_day(self, today: str) -> str:
        """The period's first day (inclusive) when it is ``today``."""
        return {"day": today, "month": today[:8] + "01", "total": "0000-00-00"}[self.period]

    def raise_hint(self) -> str:
        flag = f"--token {self.name}" if self.scope == "token" else f"--workspace {self.name}"
        return (f"raise it at the server with `mainsail budget set {flag} --limit-usd N` (or PUT /api/budgets with "
                f"an admin token), or remove it with `mainsail budget remove {flag}`")


def budget_key(scope: str, name: str) -> str:
    return f"{scope}:{name}"


def make_budget(*, token: str | None, workspace: str | None, limit_usd: float, period: str = "month",
                set_by: str = "") -> Budget:
    """A budget for ``token`` or ``workspace`` (exactly one; a workspace is resolved to its real path).

    Raises:
        ConfigurationError: neither or both given, a limit that is not positive, an unknown period.
    """
    if bool(token) == bool(workspace):
        raise ConfigurationError("A budget is for one API token (--token NAME) or one workspace (--workspace DIR): "
                                 "give exactly one.")
    name = token or os.path.realpath(os.path.expanduser(workspace or ""))
    try:
        return Budget(scope="token" if token else "workspace", name=name, limit_usd=limit_usd, period=period,
                      set_by=set_by)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"Invalid budget for {name}: {problems} (the limit is USD above 0; the period "
                                 "is day, month or total).") from None


def read_budgets(raw: dict[str, str]) -> list[Budget]:
    """The stored budgets that can be read (a record another version wrote and this cannot read is skipped)."""
    out = []
    for value in raw.values():
        try:
            out.append(Budget.model_validate_json(value))
        except ValidationError:
            continue
    return out


def spent(budget: Budget, rows: list[CostRow], today: str) -> tuple[float, int]:
    """What the sessions ``budget`` covers spent in its current period, and their calls without a price."""
    first = budget.first_day(today)
    cost, unpriced = 0.0, 0
    for row in rows:
        if row.day >= first and row.day <= today and budget.covers(row.token, row.workspace):
            cost += row.cost_usd
            unpriced += row.unpriced_calls
    return cost, unpriced


def refusal(budgets: list[Budget], rows: list[CostRow], token: str, workspace: str,
            now: float | None = None) -> str | None:
    """Why a new turn of a session of ``token`` in ``workspace`` may not start (None: it may): the first
    budget covering it that is spent, named with its limit, the amount spent and how to raise it."""
    today = day_of(now)
    for budget in budgets:
        if not budget.covers(token, workspace):
            continue
        cost, unpriced = spent(budget, rows, today)
        period = {"day": "today (UTC)", "month": f"this month (since {budget.first_day(today)} UTC)",
                  "total": "in total"}[budget.period]
        if cost >= budget.limit_usd:
            return (f"Budget of {budget.label()} is spent: ${cost:.4f} of its ${budget.limit_usd:g} limit "
                    f"{period}. No new turn starts until it is raised: {budget.raise_hint()}.")
        if unpriced:
            return (f"Budget of {budget.label()} cannot be held: {unpriced} call(s) {period} used a model without a "
                    f"price, so what was spent is unknown (${cost:.4f} of its ${budget.limit_usd:g} limit is known). "
                    f"No new turn starts: use a priced model, or {budget.raise_hint()}.")
    return None


def days_for(budgets: list[Budget], token: str, workspace: str, days: list[str], now: float | None = None) -> list[str]:
    """The ledger's days any budget covering the session needs (none: no budget covers it, nothing to read)."""
    today = day_of(now)
    firsts = [b.first_day(today) for b in budgets if b.covers(token, workspace)]
    if not firsts:
        return []
    first = min(firsts)
    return [d for d in days if first <= d <= today]


__all__ = ["Budget", "budget_key", "days_for", "make_budget", "read_budgets", "refusal", "spent"]
