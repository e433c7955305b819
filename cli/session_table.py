"""The ``sessions`` table, for the full read (records), the lean one (cli/lean_read.py) and the team server's
views (cli/remote/listing.py): one formatter, loading nothing but click and the state names.

A row is ``(depth, record)``; the record needs ``id``, ``state`` (a :class:`statemachines.State`),
``children``, ``agent_type``, ``title``, ``model``, ``turns``, ``cost_usd``, ``updated_at``, ``workspace``.
"""

from __future__ import annotations

import time

import click

#: Columns of a record the table reads (the lean reader reads exactly these).
FIELDS = ("id", "state", "children", "agent_type", "title", "model", "turns", "cost_usd", "updated_at",
          "workspace", "parent_session_id")


def money(usd: float | None) -> str:
    """``$0.0123``; ``?`` for a cost that is unknown (a model without a price, workflows.model.pricing)."""
    return "?" if usd is None else f"${usd:.4f}"


def ago(t: float, older: str = "%Y-%m-%d %H:%M") -> str:
    """``12s ago``, ``5m ago``, ``3h ago``; a day or more: the local time in the ``older`` format."""
    age = max(0.0, time.time() - t)
    if age < 60:
        return f"{int(age)}s ago"
    if age < 3600:
        return f"{int(age // 60)}m ago"
    if age < 86400:
        return f"{int(age // 3600)}h ago"
    return time.strftime(older, time.localtime(t))


def cut(s: str, n: int) -> str:
    """``s`` cut to ``n`` characters, with an ellipsis when it was longer."""
    return s if len(s) <= n else s[: n - 1] + "…"


def listed(rec, state: str | None, workspace: str | None) -> bool:
    """Whether ``sessions --state --workspace`` lists ``rec`` (a sub-agent only under ``--tree``)."""
    return not ((state and rec.state.value != state) or (workspace and rec.workspace != workspace)
                or rec.parent_session_id)


#: What ``mainsail pending`` says when no request waits (the lean and the full path).
NONE_PENDING = "No pending permission requests."


def none_listed(state: str | None, workspace: str | None) -> str:
    return "No sessions" + (" match." if state or workspace else " yet: start one with `mainsail run \"...\"`.")


def print_table(rows: list[tuple[int, object]], queued: dict[str, int]) -> None:
    """The ``sessions`` table: ``(depth, record)`` rows (depth > 0: a sub-agent, indented under its parent)."""
    click.echo(f"{'ID':<9} {'STATE':<19} {'QUEUED':>6} {'AGENTS':>6}  {'TITLE':<32} {'MODEL':<18} {'TURNS':>5} "
               f"{'COST':>8}  {'ACTIVE':<9} WORKSPACE")
    for depth, rec in rows:
        title = ("  " * depth + ("└ " if depth else "") + (f"[{rec.agent_type}] " if rec.agent_type else "")
                 + (rec.title or "-"))
        click.echo(f"{rec.id[:8]:<9} {rec.state.value:<19} {queued.get(rec.id) or '-':>6} "
                   f"{len(rec.children) or '-':>6}  {cut(title, 32):<32} {cut(rec.model, 18):<18} {rec.turns:>5} "
                   f"{money(rec.cost_usd):>8}  {ago(rec.updated_at, '%Y-%m-%d'):<9} {rec.workspace}")


__all__ = ["FIELDS", "NONE_PENDING", "ago", "cut", "listed", "money", "none_listed", "print_table"]
