"""Counters for ``/metrics``: what happened (steps, model tokens and cost, approvals, take-backs),
counted where it happens and added up in Redis, so every server process reports the same figures.

Nothing is written on the hot path: a commit that lands notes its counts in this process's
:data:`TALLY` (memory), and a daemon thread adds them to the ``mainsail:metrics`` hash every
:data:`FLUSH_SECONDS` in one pipeline of ``HINCRBYFLOAT``s (and once more at exit). A step costs no
Redis command for its metrics; a process killed with SIGKILL loses at most its last seconds of
counts, which a scrape shows as a slightly lower rate, never as a wrong state (gauges such as
sessions by state and queue depths are read at scrape time from the store itself).

A field is ``name|label=value,label=value``; histograms are kept as per-bucket counts (``le`` the
bucket's upper bound, ``+Inf`` last) plus ``_sum`` and ``_count``, made cumulative at scrape time.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import defaultdict

from workflows.store import keys

log = logging.getLogger(__name__)

FLUSH_SECONDS = 2.0
#: Step latency (created to finished, queue wait included), seconds.
STEP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)
#: Time from a permission request to its decision, seconds.
DECISION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 24 * 3600.0)


def field(name: str, **labels: str) -> str:
    return name + "|" + ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def parse_field(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.partition("|")
    labels = dict(part.split("=", 1) for part in rest.split(",") if "=" in part)
    return name, labels


def _bucket(value: float, buckets: tuple[float, ...]) -> str:
    return next((f"{b:g}" for b in buckets if value <= b), "+Inf")


class Tally:
    """This process's counts not yet added to Redis."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, float] = defaultdict(float)
        self._client = None
        self._thread: threading.Thread | None = None

    def add(self, name: str, value: float = 1.0, **labels: str) -> None:
        with self._lock:
            self._counts[field(name, **labels)] += value

    def observe(self, name: str, seconds: float, buckets: tuple[float, ...], **labels: str) -> None:
        """One observation of histogram ``name``."""
        seconds = max(0.0, seconds)
        with self._lock:
            self._counts[field(f"{name}_bucket", le=_bucket(seconds, buckets), **labels)] += 1
            self._counts[field(f"{name}_sum", **labels)] += seconds
            self._counts[field(f"{name}_count", **labels)] += 1

    def merge(self, counts: dict[str, float]) -> None:
        with self._lock:
            for k, v in counts.items():
                self._counts[k] += v

    def drain(self) -> dict[str, float]:
        with self._lock:
            out, self._counts = dict(self._counts), defaultdict(float)
        return out

    def flush(self, r=None) -> int:
        """Add what is counted to Redis (``r``, else the bound client); on an error it is kept for later."""
        client = r if r is not None else self._client
        counts = self.drain()
        if client is None or not counts:
            if counts:
                self.merge(counts)
            return 0
        try:
            p = client.pipeline(transaction=False)
            for k, v in counts.items():
                p.hincrbyfloat(keys.metrics(), k, v)
            p.execute()
        except Exception as exc:  # noqa: BLE001 - Redis away: the counts wait for the next flush
            self.merge(counts)
            log.debug("metrics flush failed: %s", exc)
            return 0
        return len(counts)

    def bind(self, client) -> None:
        """Flush to ``client`` from now on, every :data:`FLUSH_SECONDS` and at exit (the first binding wins)."""
        with self._lock:
            if self._client is not None:
                return
            self._client = client
            self._thread = threading.Thread(target=self._run, name="mainsail-metrics", daemon=True)
            self._thread.start()
        atexit.register(self.flush)

    def _run(self) -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            self.flush()


TALLY = Tally()


def count_usage(model: str, kind: str, usage, cost: float | None, now: float | None = None) -> None:
    """A model call's tokens (by type) and cost, by model and kind of call (main, compact, memory...),
    and its cost by UTC day and model (the console's cost per day)."""
    for kind_of_token in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        n = getattr(usage, kind_of_token, 0) or 0
        if n:
            TALLY.add("mainsail_model_tokens_total", n, model=model, type=kind_of_token.removesuffix("_tokens"))
    TALLY.add("mainsail_model_calls_total", model=model, kind=kind)
    if cost:
        TALLY.add("mainsail_model_cost_usd_total", cost, model=model)
        day = time.strftime("%Y-%m-%d", time.gmtime(now or time.time()))
        TALLY.add("mainsail_model_cost_usd_by_day", cost, model=model, day=day)


def read(r) -> dict[str, float]:
    """Every counter in Redis (``field`` -> value)."""
    raw = r.hgetall(keys.metrics())
    return {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in raw.items()}


__all__ = ["DECISION_BUCKETS", "STEP_BUCKETS", "TALLY", "Tally", "count_usage", "field", "parse_field", "read"]
