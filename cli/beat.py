"""``mainsail beat``: the scheduler process that fires schedules (Celery beat with celery-redbeat).

Run one per server, or several for fail-over: one leads (redbeat's lock in Redis) and the others
wait to take over. It uses the Redis every command resolves (``MAINSAIL_REDIS_URL``...).
"""

from __future__ import annotations

import click

from cli.connect import connect
from workflows.settings import load_settings


@click.command("beat")
@click.option("-l", "--loglevel", default="INFO", show_default=True)
def beat(loglevel: str) -> None:
    """Fire the schedules (`mainsail schedule`) on time; several may run, one leads."""
    from tasks import beat as beat_mod
    from tasks.runtime import engine

    settings = load_settings()
    rt = connect(settings)
    beat_mod.configure_beat(rt.url, settings)
    lock = settings.beat_lock_timeout_seconds or 5 * settings.beat_max_interval_seconds
    click.echo(f"mainsail beat: redis {rt.masked_url} · reads schedules every {settings.beat_max_interval_seconds:g}s "
               f"· leader lock {lock:g}s", err=True)
    if "tools" not in engine().store.live_queues():
        click.secho("No worker serves the tools queue yet: firings wait there until one does "
                    "(`mainsail worker -Q tools`).", fg="yellow", err=True)
    beat_mod.run_beat(settings, loglevel)


__all__ = ["beat"]
