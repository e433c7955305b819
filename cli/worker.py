"""``mainsail worker`` and ``mainsail reap``."""

from __future__ import annotations

import click

from cli.connect import connect
from tasks.app import QUEUES
from workflows.settings import load_settings

#: Pool and concurrency per queue: model calls wait on the network (many threads);
#: tool runs use the CPU and the disk (a few); memory forks are model calls too.
DEFAULTS = {"model": ("threads", 32), "tools": ("threads", 4), "memory": ("threads", 8)}
POOLS = ["threads", "prefork", "solo"]


def defaults_for(queues: list[str]) -> tuple[str, int]:
    if len(queues) == 1 and queues[0] in DEFAULTS:
        return DEFAULTS[queues[0]]
    return "threads", 16


@click.command("worker")
@click.option("-Q", "--queues", help=f"Comma-separated queues to serve (default: all of {', '.join(QUEUES)}).")
@click.option("-c", "--concurrency", type=click.IntRange(1), help="Parallel tasks (default depends on the queue).")
@click.option("--pool", type=click.Choice(POOLS), help="Celery pool (default: threads).")
@click.option("-l", "--loglevel", default="INFO", show_default=True)
def worker(queues: str | None, concurrency: int | None, pool: str | None, loglevel: str) -> None:
    """Start a Celery worker for Mainsail's queues."""
    settings = load_settings()
    names = [q.strip() for q in (queues or ",".join(QUEUES)).split(",") if q.strip()]
    unknown = [q for q in names if q not in QUEUES and not q.startswith("tools.")]
    if unknown:
        raise click.BadParameter(f"unknown queue(s) {', '.join(unknown)}; known: {', '.join(QUEUES)} "
                                 "(or a per-host tools.HOST queue)", param_hint="-Q")
    default_pool, default_conc = defaults_for(names)
    rt = connect(settings)
    click.echo(f"mainsail worker: queues {','.join(names)} · pool {pool or default_pool} · "
               f"concurrency {concurrency or default_conc} · redis {rt.masked_url}", err=True)
    from tasks.worker import run_worker

    run_worker(names, concurrency or default_conc, pool or default_pool, loglevel)


@click.command("reap")
def reap() -> None:
    """Re-dispatch steps whose worker died or that nobody picked up (workers do this on their own)."""
    from tasks.reaper import reap_dead, sweep_once

    rt = connect(load_settings())
    dead = reap_dead(rt.engine)
    n = sweep_once(rt.engine)
    click.echo(f"re-dispatched {dead + n} step(s): {dead} held by workers that died, {n} whose lease or "
               "pickup deadline passed or whose message was lost")
