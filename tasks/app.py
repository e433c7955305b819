"""The Celery app: queues, routing and the reliability settings the step protocol needs.

The broker URL is set at run time by :func:`configure` (the CLI resolves it:
MAINSAIL_REDIS_URL, a local Redis, or the embedded one), so importing this
module connects to nothing.
"""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

from tasks.routes import BROKER_PREFIX, DEFAULT_QUEUE, QUEUES, ROUTES

app = Celery("mainsail", include=["tasks.steps", "tasks.reaper", "tasks.schedules", "tasks.notify"])

app.conf.update(
    # Execution is at-least-once: a message is acked only after the task returns,
    # and the ledger (not the broker) makes a duplicate delivery a no-op.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_ignore_result=True,
    task_serializer="json",
    accept_content=["json"],
    task_default_queue=DEFAULT_QUEUE,
    task_queues=[Queue(q, routing_key=q) for q in QUEUES],
    task_routes={pattern: {"queue": queue} for pattern, queue in ROUTES.items()},
    broker_transport_options={
        # Well above the longest step: lost workers are found by the ledger's
        # leases within seconds; the broker's redelivery is only a backstop.
        "visibility_timeout": 6 * 3600,
        # Celery's keys never mix with Mainsail's own (mainsail:...).
        "global_keyprefix": BROKER_PREFIX,
    },
    broker_connection_retry_on_startup=True,
    # Reconnect within a second of Redis coming back (Celery's own consumer waits 2, 4, 6... s).
    worker_consumer="tasks.consumer:Consumer",
    broker_connection_max_retries=None,  # a worker outlives any Redis outage; it never gives up
    # A running step rides out a broker outage (its commit is retried, fenced); never cancel it.
    worker_cancel_long_running_tasks_on_connection_loss=False,
    worker_hijack_root_logger=False,
    worker_send_task_events=False,
    task_send_sent_event=False,
    worker_enable_remote_control=False,
    enable_utc=True,
)


def configure(redis_url: str, ca_file: str | os.PathLike | None = None) -> Celery:
    """Point the task runtime and the app's broker at ``redis_url`` (the process then sends through Celery).

    Args:
        redis_url: ``redis://`` or ``rediss://``, with ``user:password@`` if Redis requires it.
        ca_file: for ``rediss://``, the CA certificates (PEM) that signed the server's
            certificate (MAINSAIL_REDIS_CA_FILE), unless the URL's ``ssl_ca_certs`` names them.
    """
    from tasks import runtime

    runtime.set_redis_url(redis_url)
    _point_broker(redis_url, ca_file)
    runtime.mark_celery()
    return app


def configure_here() -> Celery:
    """Point the app's broker at the Redis this process already uses (:func:`tasks.runtime.current_url`),
    keeping its engine: what a process that starts a worker or a beat does. A command that only sends never
    calls it, and never loads Celery (tasks/dispatch.py)."""
    from tasks import runtime
    from workflows.settings import get_settings

    if not runtime.celery_configured():
        _point_broker(runtime.current_url(), get_settings().redis_ca_file)
        runtime.mark_celery()
    return app


def _point_broker(redis_url: str, ca_file: str | os.PathLike | None) -> None:
    from tasks import runtime

    url = runtime.without_tls_query(redis_url)
    if app.conf.broker_url != url:
        _drop_connections()  # pooled producers still point at the previous broker (a test, a benchmark)
    app.conf.broker_url = url
    app.conf.broker_use_ssl = broker_ssl(redis_url, ca_file)
    from workflows.settings import get_settings

    if get_settings().task_events:  # MAINSAIL_TASK_EVENTS: what Flower shows (tasks, workers, rates)
        app.conf.update(worker_send_task_events=True, task_send_sent_event=True, worker_enable_remote_control=True)


def _drop_connections() -> None:
    """Forget the app's broker connections and producers, so that the next send uses the new URL."""
    pool = getattr(app, "_pool", None)
    if pool is not None:
        try:
            pool.force_close_all()
        except Exception:  # a connection to a Redis that is gone: nothing to close cleanly
            pass
        app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None


def broker_ssl(redis_url: str, ca_file: str | os.PathLike | None = None) -> dict | None:
    """kombu's ``broker_use_ssl`` for a ``rediss://`` URL: the certificate is verified unless
    the URL's ``ssl_cert_reqs`` says otherwise (kombu alone would not verify it at all)."""
    import ssl

    from tasks import runtime

    options = runtime.tls_options(redis_url, ca_file)
    if options is None:
        return None
    reqs = {"required": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
    return {**options, "ssl_cert_reqs": reqs[options["ssl_cert_reqs"]]}
