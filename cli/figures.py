"""Cost and token figures as people read them: a run's main loop apart from its memory forks,
a session's totals per kind of call and per model.

Where each figure comes from (so that they agree):

- a run's result entry: ``usage`` / ``total_cost_usd`` are its main loop (model turns and
  compactions); ``memory_*`` the memory forks that finished while it ran;
- the session record: totals over every call, and the same totals per kind
  (``main``, ``compact``, ``memory``, ``extract``) and per model; ``run_memory_*`` keeps
  counting the forks that finish after the run's result, until the next run starts.
"""

from __future__ import annotations

from cli.session_table import money  # noqa: F401 (its home: importers find it here too)
from workflows.model.pricing import add_cost
from workflows.models import COST_KINDS, ResultEntry, SessionRecord, Usage


def tokens(u: Usage) -> int:
    return u.input_tokens + u.output_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens


def memory_note(e: ResultEntry) -> str:
    """``(+ memory $0.0128, 3,356 tokens)`` for a closing line; empty when no fork ran or runs."""
    n = tokens(e.memory_usage)
    if n or e.memory_cost_usd:
        more = "; saving more" if e.memory_saving else ""
        return f" (+ memory {money(e.memory_cost_usd)}, {n:,} tokens{more})"
    return " (+ memory: saving)" if e.memory_saving else ""


def run_figures(rec: SessionRecord) -> str:
    """The session's latest run: main loop, then every memory fork that finished since it started."""
    main = f"{money(rec.run_cost_usd)} · {tokens(rec.run_usage):,} tokens"
    n = tokens(rec.run_memory_usage)
    if not (n or rec.run_memory_cost_usd):
        return main
    both = tokens(rec.run_usage) + n
    return (f"{main} (+ memory {money(rec.run_memory_cost_usd)}, {n:,} tokens; "
            f"{money(add_cost(rec.run_cost_usd, rec.run_memory_cost_usd))} · {both:,} tokens in all)")


def memory_saved_line(rec: SessionRecord) -> str:
    """After waiting for a run's memory forks: what they cost, and the run's figures in all."""
    n = tokens(rec.run_memory_usage)
    total = add_cost(rec.run_cost_usd, rec.run_memory_cost_usd)
    return (f"✎ memory saved: {money(rec.run_memory_cost_usd)}, {n:,} tokens · this run in all "
            f"{money(total)}, {tokens(rec.run_usage) + n:,} tokens")


def breakdown_lines(rec: SessionRecord, indent: str = "  ") -> list[str]:
    """The session's totals per kind of call, then per model; the rows of each add up to the total.

    Calls made before the session kept per-kind totals show as one ``earlier calls`` row.
    """
    rows: list[tuple[str, Usage, float | None]] = []
    for kind, label in COST_KINDS.items():
        if kind in rec.usage_by_kind:
            rows.append((label, rec.usage_by_kind[kind], rec.cost_by_kind.get(kind, 0.0)))
    rest_tokens = tokens(rec.usage) - sum(tokens(u) for _, u, _ in rows)
    known = [c for _, _, c in rows if c is not None]
    rest_cost = None if rec.cost_usd is None or len(known) < len(rows) else rec.cost_usd - sum(known)
    if rest_tokens > 0 or (rest_cost or 0.0) > 5e-5:
        rows.append(("earlier calls", Usage(input_tokens=max(rest_tokens, 0)),
                     None if rest_cost is None else max(rest_cost, 0.0)))
    models = [(m, u, rec.cost_by_model.get(m, 0.0)) for m, u in rec.usage_by_model.items()]
    width = max([len(r[0]) for r in rows + models] + [10])
    lines = []
    for title, group in (("by kind ", rows), ("by model", models)):
        for i, (name, u, cost) in enumerate(group):
            lead = title if i == 0 else " " * len(title)
            lines.append(f"{indent}{lead}  {name:<{width}} {tokens(u):>12,} tokens  {money(cost)}")
    return lines


__all__ = ["tokens", "money", "memory_note", "run_figures", "memory_saved_line", "breakdown_lines"]
