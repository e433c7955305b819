"""A minimal Celery app with one no-op task: the baseline for bench/step_overhead.py.

It mirrors Mainsail's reliability settings (late acks, prefetch 1, JSON) so the
only difference from an agent step is Mainsail's own work. The broker and the
result backend are both ``BENCH_BARE_URL`` (a Redis DB other than Mainsail's).

Worker: ``BENCH_BARE_URL=redis://127.0.0.1:PORT/1 celery -A bench.bare_app worker
-P threads -c 4 --without-mingle --without-gossip --without-heartbeat -Q bare``
(from the repository root, so ``bench`` is importable).
"""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

QUEUE = "bare"
URL = os.environ.get("BENCH_BARE_URL", "redis://127.0.0.1:6379/1")

app = Celery("bench_bare", broker=URL, backend=URL)
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    task_default_queue=QUEUE,
    task_queues=[Queue(QUEUE, routing_key=QUEUE)],
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    worker_send_task_events=False,
    task_send_sent_event=False,
    result_expires=600,
    enable_utc=True,
)


@app.task(name="bench.noop")
def noop() -> None:
    """Does nothing: its round trip is pure broker + worker + result backend latency."""
    return None
