"""``mainsail serve``: the team server (HTTP API, live streams, console, metrics) in one process.

It resolves Redis as every command does (``MAINSAIL_REDIS_URL``, a local Redis, or the embedded
one), and with no worker listening runs one in-process for as long as it runs, so ``mainsail serve``
alone is a working single-machine server; in a deployment, workers are their own services.
"""

from __future__ import annotations

import click

from cli.connect import connect
from cli.standby import ensure_worker
from workflows.settings import load_settings


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every interface; put TLS in front, e.g. a reverse proxy).")
@click.option("--port", type=click.IntRange(0, 65535), default=8750, show_default=True)
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]), default="info",
              show_default=True)
@click.option("--no-worker", is_flag=True, help="Never run a worker in this process (workers are separate).")
def serve(host: str, port: int, log_level: str, no_worker: bool) -> None:
    """Serve the HTTP API (/api), the web console (/) and metrics (/metrics) for a team."""
    import uvicorn

    from server.app import create_app
    from tasks.runtime import async_redis_client

    settings = load_settings()
    rt = connect(settings)
    try:
        if not no_worker:
            ensure_worker(rt, settings)
        # Reads block up to 15 s (server/api/hub.py): the socket's timeout must be longer. One blocked
        # connection per followed stream, plus watchers' short catch-up reads: redis-py's default pool
        # (100) refused a burst of 200 watchers joining at once.
        aredis = async_redis_client(rt.url, settings.redis_ca_file, socket_timeout=45, socket_keepalive=True,
                                    health_check_interval=30, max_connections=1000)
        app = create_app(rt.engine, aredis)
        if not rt.store.tokens().records():
            click.secho("No API tokens yet: every request will be refused. Create one with "
                        "`mainsail token create --name NAME` (same Redis).", fg="yellow", err=True)
        click.echo(f"mainsail serve: http://{host}:{port}/ (console /, API /api, schema /api/openapi.json, metrics /metrics) "
                   f"· Redis {rt.masked_url}", err=True)
        uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=True, server_header=False)
    finally:
        rt.close()


__all__ = ["serve"]
