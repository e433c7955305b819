"""The cost report: the ledger's rows (:class:`workflows.store.costs.CostRow`) grouped by any of token,
workspace, model and day, with totals, as ``mainsail costs`` and ``GET /api/costs`` show them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from workflows.exceptions import ConfigurationError
from workflows.store.costs import CostRow

#: What a report may group by, in the order its columns are shown.
DIMENSIONS = ("day", "token", "workspace", "model")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_by(value: str | Iterable[str] | None) -> list[str]:
    """``token,model`` (or a list) as dimensions, in :data:`DIMENSIONS` order; none given: all of them.

    Raises:
        ConfigurationError: an unknown dimension (the message lists the known ones).
    """
    parts = [p.strip() for p in (value.split(",") if isinstance(value, str) else value or []) if p.strip()]
    unknown = [p for p in parts if p not in DIMENSIONS]
    if unknown:
        raise ConfigurationError(f"Cannot group costs by {', '.join(unknown)}: use any of {', '.join(DIMENSIONS)} "
                                 "(comma-separated).")
    return [d for d in DIMENSIONS if d in parts] if parts else list(DIMENSIONS)


def check_day(value: str | None, name: str) -> str | None:
    """``value`` if it is a ``YYYY-MM-DD`` day (None: not given).

    Raises:
        ConfigurationError: anything else.
    """
    if value is None or value == "":
        return None
    if not _DAY.fullmatch(value):
        raise ConfigurationError(f"{name} {value!r} is not a day: use YYYY-MM-DD (UTC).")
    return value


def report(rows: list[CostRow], by: list[str], *, since: str | None = None, until: str | None = None,
           visible: Callable[[CostRow], bool] = lambda row: True) -> dict:
    """The rows of days ``since``..``until`` (inclusive) that ``visible`` keeps, summed by ``by``: ``groups``
    (each with its dimensions, ``cost_usd``, ``tokens``, ``unpriced_calls``), costliest first, and the
    ``total``. A group with unpriced calls cost more than its figure says (the model has no price)."""
    groups: dict[tuple, dict] = {}
    total = {"cost_usd": 0.0, "tokens": 0, "unpriced_calls": 0}
    for row in rows:
        if (since and row.day < since) or (until and row.day > until) or not visible(row):
            continue
        key = tuple(getattr(row, d) for d in by)
        group = groups.setdefault(key, {**dict(zip(by, key)), "cost_usd": 0.0, "tokens": 0, "unpriced_calls": 0})
        for figure in ("cost_usd", "tokens", "unpriced_calls"):
            group[figure] += getattr(row, figure)
            total[figure] += getattr(row, figure)
    ordered = sorted(groups.values(), key=lambda g: (-g["cost_usd"], [str(g[d]) for d in by]))
    return {"by": by, "since": since, "until": until, "groups": ordered, "total": total}


__all__ = ["DIMENSIONS", "check_day", "parse_by", "report"]
