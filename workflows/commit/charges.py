"""What a model call costs the session: its usage and cost added to the session's totals, per model and
per kind of call (the run's figures too); used by every commit that records a call (turns, compaction,
memory forks, titles, a tool that called a model).
"""

from __future__ import annotations

from statemachines import State
from workflows.commit import Tx
from workflows.commit.support import (
    _add_to,
)
from workflows.model.lifecycle import lifecycle_note
from workflows.model.pricing import add_cost, cost_usd, unknown_price_note
from workflows.models import SystemEntry, Usage
from workflows.store.costs import add_call
from workflows.store.metrics import count_usage


def charge(tx: Tx, usage: Usage, duration_ms: int, *, run: bool | None = True, kind: str | None = None,
           model: str | None = None) -> float | None:
    """Add a call's usage and cost to the session's totals, per model and per kind of call.

    ``run``: a call of the run's main loop (a model turn or a compaction), counted in the
    run's figures; False: a memory fork, counted in the run's memory figures; None: a call beside
    the runs (the session's title), in the session's totals only.
    ``kind`` (a key of :data:`COST_KINDS`) defaults to ``compact`` while compacting,
    ``main`` for other run calls and ``memory`` for forks. ``model``: the id the call sent
    (default: what the session's model resolves to now). A model without a price makes the
    call's cost, and every figure it goes into, None (unknown); the session says so once.
    """
    rec = tx.rec
    kind = kind or (("compact" if rec.state is State.COMPACTING else "main") if run else "memory")
    model = model or rec.sent_model()
    cost = cost_usd(model, usage)
    if cost is None and model not in rec.unpriced_models:
        rec.unpriced_models.append(model)
        tx.add(SystemEntry(session_id=rec.id, subtype="warning", content=unknown_price_note(model)))
    if model not in rec.usage_by_model and (note := lifecycle_note(model)):  # its first call in the session
        tx.add(SystemEntry(session_id=rec.id, subtype="warning", content=note))
    rec.usage = rec.usage + usage
    tx.counts.append(lambda: count_usage(model, kind, usage, cost))
    # The cost ledger by day, token, workspace and model (budgets read it): written by this same commit.
    tokens = (usage.input_tokens + usage.output_tokens + usage.cache_creation_input_tokens
              + usage.cache_read_input_tokens)
    tx.extra.append(lambda ops: add_call(ops, rec.token, rec.workspace, model, tokens, cost))
    _add_to(rec.usage_by_model, rec.cost_by_model, model, usage, cost)
    _add_to(rec.usage_by_kind, rec.cost_by_kind, kind, usage, cost)
    rec.cost_usd = add_cost(rec.cost_usd, cost)
    rec.api_ms += duration_ms
    if run:
        rec.run_usage = rec.run_usage + usage
        rec.run_cost_usd = add_cost(rec.run_cost_usd, cost)
        rec.run_api_ms += duration_ms
        _add_to(rec.run_usage_by_model, rec.run_cost_by_model, model, usage, cost)
    elif run is False:
        rec.run_memory_usage = rec.run_memory_usage + usage
        rec.run_memory_cost_usd = add_cost(rec.run_memory_cost_usd, cost)
    return cost
