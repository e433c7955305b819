"""``mainsail costs`` (what sessions cost by day, token, workspace and model) and ``mainsail budget`` (limits
that stop new turns), run at the server (through its Redis). Token holders use ``/api/costs`` and
``/api/budgets``."""

from __future__ import annotations

import json

import click

from cli.connect import connect
from workflows.costs.budgets import budget_key, make_budget, read_budgets, spent
from workflows.costs.report import check_day, parse_by, report
from workflows.exceptions import ConfigurationError
from workflows.settings import load_settings
from workflows.store.costs import day_of


def _costs():
    return connect(load_settings()).store.costs()


@click.command("costs")
@click.option("--by", default="day,token,workspace,model", show_default=True,
              help="Group by any of day, token, workspace, model (comma-separated).")
@click.option("--since", help="From this day (YYYY-MM-DD, UTC).")
@click.option("--until", help="To this day (YYYY-MM-DD, UTC), inclusive.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def costs(by: str, since: str | None, until: str | None, as_json: bool) -> None:
    """What sessions cost, from the usage every model call recorded ("local": sessions without a token)."""
    dims, first, last = parse_by(by), check_day(since, "--since"), check_day(until, "--until")
    store = _costs()
    days = [d for d in store.days() if (not first or d >= first) and (not last or d <= last)]
    out = report(store.rows(days), dims, since=first, until=last)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    if not out["groups"]:
        click.echo("No costs recorded" + (" in those days." if first or last else " yet."))
        return
    for g in out["groups"]:
        cells = [str(g[d] or ("local" if d == "token" else "?")) for d in dims]
        unpriced = f"  (+{g['unpriced_calls']} calls without a price)" if g["unpriced_calls"] else ""
        click.echo(f"${g['cost_usd']:>10.4f}  {g['tokens']:>10} tok  " + "  ".join(cells) + unpriced)
    total = out["total"]
    click.echo(f"${total['cost_usd']:>10.4f}  {total['tokens']:>10} tok  total")


@click.group("budget")
def budget() -> None:
    """Budgets per API token or workspace: past its limit, no new turn starts (the reason is shown)."""


@budget.command("set")
@click.option("--token", "token_name", help="The sessions started with this API token.")
@click.option("--workspace", type=click.Path(file_okay=False), help="The sessions in this directory (and below).")
@click.option("--limit-usd", type=float, required=True, help="The limit, in USD, per period.")
@click.option("--period", type=click.Choice(["day", "month", "total"]), default="month", show_default=True,
              help="UTC day, calendar month, or since costs were first recorded.")
def set_budget(token_name: str | None, workspace: str | None, limit_usd: float, period: str) -> None:
    """Set (or replace) a budget."""
    b = make_budget(token=token_name, workspace=workspace, limit_usd=limit_usd, period=period, set_by="cli")
    _costs().put_budget(b.key, b.model_dump_json())
    click.echo(f"Budget of {b.label()}: ${b.limit_usd:g} per {b.period}.")


@budget.command("list")
def list_budgets() -> None:
    """List budgets and what each has spent in its period."""
    store = _costs()
    budgets = read_budgets(store.budgets())
    if not budgets:
        click.echo("No budgets. Set one with `mainsail budget set --token NAME --limit-usd N` (or --workspace DIR).")
        return
    rows, today = store.rows(store.days()), day_of()
    for b in budgets:
        cost, unpriced = spent(b, rows, today)
        state = "SPENT" if cost >= b.limit_usd or unpriced else "ok"
        more = f", {unpriced} calls without a price" if unpriced else ""
        click.echo(f"{b.label()}: ${cost:.4f} of ${b.limit_usd:g} per {b.period}{more} [{state}]")


@budget.command("remove")
@click.option("--token", "token_name", help="The token's budget.")
@click.option("--workspace", type=click.Path(file_okay=False), help="The workspace's budget.")
def remove_budget(token_name: str | None, workspace: str | None) -> None:
    """Remove a budget: new turns start again."""
    b = make_budget(token=token_name, workspace=workspace, limit_usd=1)  # (checks the names: one of them)
    if not _costs().remove_budget(budget_key(b.scope, b.name)):
        raise ConfigurationError(f"No budget for {b.label()}. List them with `mainsail budget list`.")
    click.echo(f"Removed the budget of {b.label()}.")
