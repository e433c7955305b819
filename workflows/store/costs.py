"""Costs by day, token, workspace and model, and the budgets that stop new turns, in Redis.

Keys (all built by :mod:`workflows.store.keys`): ``mainsail:costs:{day}`` (hash: the JSON
``[token, workspace, model]`` -> USD), ``...:tokens`` (the same fields -> tokens used), ``...:unpriced``
(the same fields -> calls of a model without a price), ``mainsail:costs:days`` (the days that have any) and
``mainsail:budgets`` (``token:NAME`` / ``workspace:PATH`` -> a budget's JSON).

A call's cost is added by the same fenced commit that adds it to its session's totals
(:func:`workflows.commit.charges.charge` hands :func:`add_call` to the commit), so a figure here is counted
exactly once, and agrees with the sessions'.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from workflows.store import keys


def day_of(when: float | None = None) -> str:
    """The UTC day (``YYYY-MM-DD``) of ``when`` (default: now)."""
    return time.strftime("%Y-%m-%d", time.gmtime(time.time() if when is None else when))


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


@dataclass(frozen=True)
class CostRow:
    """What one token spent in one workspace on one model on one day."""

    day: str
    token: str
    workspace: str
    model: str
    cost_usd: float
    tokens: int = 0
    unpriced_calls: int = 0


def add_call(ops, token: str, workspace: str, model: str, tokens: int, cost: float | None,
             when: float | None = None) -> None:
    """Record one model call on ``ops`` (a commit's recorder): its cost (None: a model without a price,
    counted as an unpriced call) and tokens, on its UTC day."""
    day = day_of(when)
    field = json.dumps([token, workspace, model])
    ops.sadd(keys.cost_days(), day)
    ops.hincrby(keys.cost_day_tokens(day), field, tokens)
    if cost is None:
        ops.hincrby(keys.cost_day_unpriced(day), field, 1)
    elif cost:
        ops.hincrbyfloat(keys.cost_day(day), field, f"{float(cost):.12f}")


class CostStore:
    """Reads the cost ledger; keeps the budgets (``r``: a redis-py client)."""

    def __init__(self, r) -> None:
        self.r = r

    def days(self) -> list[str]:
        """Every day with costs, oldest first."""
        return sorted(_s(d) for d in self.r.smembers(keys.cost_days()))

    def rows(self, days: list[str]) -> list[CostRow]:
        """The ledger's rows of ``days`` (one round trip)."""
        pipe = self.r.pipeline(transaction=False)
        for day in days:
            pipe.hgetall(keys.cost_day(day))
            pipe.hgetall(keys.cost_day_tokens(day))
            pipe.hgetall(keys.cost_day_unpriced(day))
        replies = pipe.execute() if days else []
        out: list[CostRow] = []
        for i, day in enumerate(days):
            costs, counts, unpriced = (
                {_s(k): _s(v) for k, v in replies[3 * i + j].items()} for j in range(3))
            for field in sorted(set(costs) | set(counts) | set(unpriced)):
                try:
                    token, workspace, model = json.loads(field)
                except (ValueError, TypeError):
                    continue  # (not written by add_call)
                out.append(CostRow(day, token, workspace, model, float(costs.get(field, 0.0)),
                                   int(counts.get(field, 0)), int(unpriced.get(field, 0))))
        return out

    # ------------------------------------------------------------------ budgets

    def budgets(self) -> dict[str, str]:
        """Every budget's JSON by its key (``token:NAME`` or ``workspace:PATH``)."""
        return {_s(k): _s(v) for k, v in self.r.hgetall(keys.budgets()).items()}

    def budget(self, key: str) -> str | None:
        raw = self.r.hget(keys.budgets(), key)
        return _s(raw) if raw is not None else None

    def put_budget(self, key: str, record: str) -> None:
        self.r.hset(keys.budgets(), key, record)

    def remove_budget(self, key: str) -> bool:
        return bool(self.r.hdel(keys.budgets(), key))


__all__ = ["CostRow", "CostStore", "add_call", "day_of"]
