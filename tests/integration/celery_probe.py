"""A Celery worker's app for tests/integration/test_task_message.py: Mainsail's app on PROBE_REDIS, with one
task that records that it ran (its arguments and its id) in that Redis."""

from __future__ import annotations

import json
import os

import redis

from tasks.app import app, configure

configure(os.environ["PROBE_REDIS"])


@app.task(name="mainsail.model.test_probe", bind=True)
def probe(self, a: str, b: str) -> None:
    client = redis.Redis.from_url(os.environ["PROBE_REDIS"])
    client.set("probe:ran", json.dumps([a, b, self.request.id]))
    client.close()
