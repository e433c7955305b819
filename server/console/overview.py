"""``/overview``: sessions by state, cost per day and per model, queue depths and live workers.

Figures come from the session records the token may see (top-level sessions only: a sub-agent's
cost is already rolled into its parent's) and from the broker's queues and the worker registry.
Cost per day: for a token that sees every workspace, the engine's own count of each model call's
cost on its day (UTC; workflows/store/metrics.py, the figure /metrics reads). Those counts are not kept per
workspace, so for a token limited to workspaces a session's cost counts on the day of its last
activity (records keep totals, not a ledger per day).

Charts are horizontal bars drawn by the template (text labels, each bar an inline SVG that stretches to its
column, so a chart fits a phone): no script and no chart library.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Request

from server.console.web import money, page, signed_in, to_signin
from statemachines import State
from tasks.routes import QUEUES, queue_key

router = APIRouter(include_in_schema=False)

DAYS = 14
BAR_WIDTH = 260  # units of the longest bar (its SVG stretches to the column)


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str
    width: int = 0


def bars(rows: list[tuple[str, float, str]]) -> list[Bar]:
    """Bars scaled so the largest value is :data:`BAR_WIDTH` wide (a non-zero value is at least 2 px)."""
    top = max((v for _, v, _ in rows), default=0) or 1
    return [Bar(label, value, text, max(2, round(value / top * BAR_WIDTH)) if value > 0 else 0)
            for label, value, text in rows]


def session_figures(records, now: float | None = None, per_day_counted: dict[str, float] | None = None
                    ) -> dict[str, list[Bar]]:
    """Sessions by state, cost per day (the last :data:`DAYS` days, UTC) and cost per model.

    ``per_day_counted``: the cost of each day's calls as the engine counted them (else by last activity)."""
    now = time.time() if now is None else now
    top = [r for r in records if not r.parent_session_id]
    by_state = Counter(r.state.value for r in top)
    today = datetime.fromtimestamp(now, UTC).date()
    days = [(today - timedelta(days=n)).isoformat() for n in range(DAYS - 1, -1, -1)]
    per_day: dict[str, float] = defaultdict(float)
    per_model: dict[str, float] = defaultdict(float)
    unpriced: set[str] = set()
    for r in top:
        day = datetime.fromtimestamp(r.updated_at, UTC).date().isoformat()
        per_day[day] += r.cost_usd or 0.0
        for model, cost in r.cost_by_model.items():
            if cost is None:
                unpriced.add(model)
            per_model[model] += cost or 0.0
    models = sorted(per_model, key=lambda m: -per_model[m])
    day_cost = per_day if per_day_counted is None else per_day_counted
    return {
        "states": bars([(s.value, by_state.get(s.value, 0), str(by_state.get(s.value, 0))) for s in State]),
        "days": bars([(d, day_cost.get(d, 0.0), money(day_cost.get(d, 0.0))) for d in days]),
        "models": bars([(m, per_model[m], money(per_model[m]) + (" + unpriced" if m in unpriced else ""))
                        for m in models]),
    }


def queue_figures(store) -> tuple[list[Bar], int]:
    """Messages waiting in each queue (the standard ones and any a live worker serves) and live workers."""
    queues = sorted(set(QUEUES) | store.workers.live_queues())
    depths = store.queue_lengths([queue_key(q) for q in queues])
    return bars([(q, n, str(n)) for q, n in zip(queues, depths)]), store.workers.count_live()


@router.get("/overview")
def overview_page(request: Request):
    caller = signed_in(request)
    if caller is None:
        return to_signin(request)
    store = request.app.state.engine.store
    records = [r for r in store.get_sessions(store.session_ids(limit=100_000)) if caller.sees(r)]
    counted = None if caller.token.workspaces else cost_per_day(store)
    figures = session_figures(records, per_day_counted=counted)
    queues, workers = queue_figures(store)
    total = sum(b.value for b in figures["days"])
    return page("overview.html", caller=caller, figures=figures, queues=queues, workers=workers,
                sessions=sum(b.value for b in figures["states"]), total=money(total), days=DAYS,
                bar_width=BAR_WIDTH, active="overview",
                days_note="by day of each call" if counted is not None else "by last activity")


def cost_per_day(store) -> dict[str, float]:
    """Each UTC day's model cost, as the engine counted it (every workspace)."""
    from workflows.store.metrics import parse_field

    out: dict[str, float] = defaultdict(float)
    for f, value in store.tallies().items():
        name, labels = parse_field(f)
        if name == "mainsail_model_cost_usd_by_day":
            out[labels.get("day", "")] += value
    return out


__all__ = ["Bar", "bars", "cost_per_day", "queue_figures", "router", "session_figures"]
