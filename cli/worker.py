"""``mainsail worker`` and ``mainsail reap``."""

from __future__ import annotations

import os
from dataclasses import dataclass

import click

from cli.connect import connect
from tasks.routes import QUEUES
from workflows.settings import load_settings

#: Per queue: pool, threads per process, processes per core, prefetch multiplier. Model calls and memory
#: forks wait on the network: many threads, in several processes (one process's CPU work holds the GIL,
#: so it uses one core at most); tool runs use the CPU and the disk: a few threads, one process. The
#: model queue's figures come from bench/concurrency.py (docs/concurrency.md).
DEFAULTS = {"model": ("threads", 250, 2, 1), "tools": ("threads", 4, 0, 1), "memory": ("threads", 8, 0, 1)}
MIXED = ("threads", 16, 0, 1)  # several queues in one worker
POOLS = ["threads", "prefork", "solo"]


@dataclass
class WorkerShape:
    pool: str
    concurrency: int
    processes: int
    prefetch: int


def defaults_for(queues: list[str], cores: int | None = None) -> WorkerShape:
    """The default shape of a worker serving ``queues`` on a box with ``cores`` CPUs."""
    pool, threads, per_core, prefetch = DEFAULTS[queues[0]] if len(queues) == 1 and queues[0] in DEFAULTS else MIXED
    cores = cores or os.cpu_count() or 1
    return WorkerShape(pool, threads, max(1, per_core * cores), prefetch)


@click.command("worker")
@click.option("-Q", "--queues", help=f"Comma-separated queues to serve (default: all of {', '.join(QUEUES)}).")
@click.option("-c", "--concurrency", type=click.IntRange(1),
              help="Parallel tasks per process (default depends on the queue: 250 for model).")
@click.option("--processes", type=click.IntRange(1),
              help="Worker processes, supervised (default: 2 per CPU core for -Q model, else 1).")
@click.option("--prefetch-multiplier", type=click.IntRange(1),
              help="Messages each process reserves per task slot (default 1).")
@click.option("--pool", type=click.Choice(POOLS), help="Celery pool (default: threads).")
@click.option("-l", "--loglevel", default="INFO", show_default=True)
def worker(queues: str | None, concurrency: int | None, processes: int | None, prefetch_multiplier: int | None,
           pool: str | None, loglevel: str) -> None:
    """Start a Celery worker for Mainsail's queues (for -Q model: several supervised processes)."""
    settings = load_settings()
    names = [q.strip() for q in (queues or ",".join(QUEUES)).split(",") if q.strip()]
    unknown = [q for q in names if q not in QUEUES and not q.startswith("tools.")]
    if unknown:
        raise click.BadParameter(f"unknown queue(s) {', '.join(unknown)}; known: {', '.join(QUEUES)} "
                                 "(or a per-host tools.HOST queue)", param_hint="-Q")
    shape = defaults_for(names)
    shape = WorkerShape(pool or shape.pool, concurrency or shape.concurrency, processes or shape.processes,
                        prefetch_multiplier or shape.prefetch)
    rt = connect(settings)
    many = f"{shape.processes} processes × " if shape.processes > 1 else ""
    click.echo(f"mainsail worker: queues {','.join(names)} · pool {shape.pool} · {many}concurrency "
               f"{shape.concurrency} · prefetch ×{shape.prefetch} · redis {rt.masked_url}", err=True)
    from tasks.worker import preload, run_worker

    preload(names)

    def work() -> None:
        run_worker(names, shape.concurrency, shape.pool, loglevel, prefetch=shape.prefetch)

    if shape.processes > 1:
        from tasks.supervisor import Supervisor

        raise SystemExit(Supervisor(work, shape.processes).run())
    work()


@click.command("reap")
def reap() -> None:
    """Re-dispatch steps whose worker died or that nobody picked up (workers do this on their own)."""
    from tasks.reaper import reap_dead, sweep_once

    rt = connect(load_settings())
    dead = reap_dead(rt.engine)
    n = sweep_once(rt.engine)
    click.echo(f"re-dispatched {dead + n} step(s): {dead} held by workers that died, {n} whose lease or "
               "pickup deadline passed or whose message was lost")
