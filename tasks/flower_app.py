"""Flower on Mainsail's broker: ``celery --app tasks.flower_app flower``.

Flower needs the app as the workers configure it (the ``mainsail-celery:`` key prefix, the queues),
pointed at the same Redis (``MAINSAIL_REDIS_URL``); the workers must run with
``MAINSAIL_TASK_EVENTS=true`` for Flower to see their tasks (docs/metrics.md). Flower shows Celery
tasks; sessions, steps and approvals are on the team server's console and ``/metrics``.
"""

from __future__ import annotations

from tasks.app import app, configure
from workflows.settings import get_settings

_settings = get_settings()
if not _settings.redis_url:
    raise SystemExit("Flower needs MAINSAIL_REDIS_URL: the Redis the workers use (e.g. redis://:PASSWORD@redis:6379/0).")
configure(_settings.redis_url, _settings.redis_ca_file)

__all__ = ["app"]
