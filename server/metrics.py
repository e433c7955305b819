"""``GET /metrics``: Prometheus text format, for a token (``authorization: {credentials: TOKEN}`` in the
scrape config).

Everything is read from Redis at scrape time by a custom collector (the official ``prometheus_client``
renders it), so any number of server processes answer the same figures and none keeps state:

- counters and histograms the engine counts as commits land (workflows/store/metrics.py): steps created,
  finished (done, superseded, failed) and retaken by the reaper, by kind; step latency by kind; model
  calls, tokens and cost by model; approvals asked and the time to decide them;
- gauges read from the store: sessions by state, approvals waiting and the oldest one's age, queue
  depths, live workers, MCP servers running in them (each worker's registration says how many).
"""

from __future__ import annotations

import time
from collections import defaultdict

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from server.auth import Caller, require_reader
from server.schemas import problems
from statemachines import State
from workflows.store.metrics import DECISION_BUCKETS, STEP_BUCKETS, parse_field

router = APIRouter(tags=["metrics"])

HELP = {
    "mainsail_steps_created_total": ("Steps written for a worker to run, by kind.", ("kind",)),
    "mainsail_steps_finished_total": ("Steps finished, by kind and outcome (done, superseded, failed).",
                                      ("kind", "outcome")),
    "mainsail_steps_retaken_total": ("Steps the reaper took back and sent again (dead worker, passed deadline, "
                                     "lost message), by kind.", ("kind",)),
    "mainsail_model_calls_total": ("Model calls, by model and kind of call (main, compact, memory...).",
                                   ("model", "kind")),
    "mainsail_model_tokens_total": ("Model tokens, by model and type (input, output, cache_read, cache_creation).",
                                    ("model", "type")),
    "mainsail_model_cost_usd_total": ("Model cost in US dollars, by model (calls with a known price).", ("model",)),
    "mainsail_approvals_asked_total": ("Permission requests asked of a person.", ()),
    "mainsail_mcp_servers_started_total": ("MCP servers started by workers (a stdio one is a process).", ()),
    "mainsail_mcp_servers_reused_total": ("Times a session was given an MCP server another session had started.",
                                          ()),
    "mainsail_mcp_servers_stopped_total": ("MCP servers stopped by workers, by reason (idle, exited, cut_off: a "
                                           "call on it was cut off, shutdown).", ("reason",)),
}
HISTOGRAMS = {
    "mainsail_step_duration_seconds": ("Step latency from creation to finish (queue wait included), by kind.",
                                       ("kind",), STEP_BUCKETS),
    "mainsail_approval_decision_seconds": ("Time from a permission request to its decision, by decision and "
                                           "decider (user, timeout, rule, hook).", ("decision", "by"),
                                           DECISION_BUCKETS),
}


class Collector:
    """Reads the figures from Redis at each scrape."""

    def __init__(self, store) -> None:
        self.store = store

    def collect(self):
        counts = self.store.tallies()
        yield from _counters(counts)
        yield from _histograms(counts)
        yield from self._gauges()

    def _gauges(self):
        from tasks.routes import QUEUES, queue_key

        now = time.time()
        states = GaugeMetricFamily("mainsail_sessions", "Sessions by state (sub-agents included).", labels=["state"])
        by_state = {s.value: 0 for s in State}
        ids = self.store.all_session_ids()
        for start in range(0, len(ids), 500):
            for rec in self.store.get_sessions(ids[start:start + 500]):
                by_state[rec.state.value] = by_state.get(rec.state.value, 0) + 1
        for state, n in by_state.items():
            states.add_metric([state], n)
        yield states
        waiting, oldest = 0, 0.0
        for rec in self.store.get_sessions(self.store.awaiting_sessions()):
            for req in rec.pending_requests():
                waiting += 1
                oldest = max(oldest, now - req.created_at)
        yield GaugeMetricFamily("mainsail_approvals_waiting", "Permission requests waiting for a person.",
                                value=waiting)
        yield GaugeMetricFamily("mainsail_approval_oldest_wait_seconds", "How long the oldest waiting request "
                                "has waited.", value=oldest)
        depth = GaugeMetricFamily("mainsail_queue_depth", "Messages waiting in each Celery queue.", labels=["queue"])
        for q, n in zip(QUEUES, self.store.queue_lengths([queue_key(q) for q in QUEUES])):
            depth.add_metric([q], n)
        yield depth
        yield GaugeMetricFamily("mainsail_workers", "Worker processes registered and alive.",
                                value=self.store.workers.count_live(now))
        yield GaugeMetricFamily("mainsail_mcp_servers_running", "MCP servers open in live workers, as their last "
                                "registration said.", value=sum(int(info.get("mcp_servers", 0) or 0) for info in
                                                                self.store.workers.live().values()))


def _counters(counts: dict[str, float]):
    families = {name: CounterMetricFamily(name.removesuffix("_total"), text, labels=list(labels))
                for name, (text, labels) in HELP.items()}
    for f, value in sorted(counts.items()):
        name, labels = parse_field(f)
        family = families.get(name)
        if family is not None:
            family.add_metric([labels.get(k, "") for k in HELP[name][1]], value)
    yield from families.values()


def _histograms(counts: dict[str, float]):
    for name, (text, label_names, bounds) in HISTOGRAMS.items():
        series: dict[tuple, dict] = defaultdict(lambda: {"buckets": {}, "sum": 0.0, "count": 0.0})
        for f, value in counts.items():
            metric, labels = parse_field(f)
            if not metric.startswith(name):
                continue
            key = tuple(labels.get(k, "") for k in label_names)
            part = metric[len(name):]
            if part == "_bucket":
                series[key]["buckets"][labels.get("le", "+Inf")] = value
            elif part == "_sum":
                series[key]["sum"] = value
            elif part == "_count":
                series[key]["count"] = value
        family = HistogramMetricFamily(name, text, labels=list(label_names))
        for key, s in sorted(series.items()):
            running, cumulative = 0.0, []
            for bound in bounds:  # every bucket, cumulative, as Prometheus expects
                b = f"{bound:g}"
                running += s["buckets"].get(b, 0.0)
                cumulative.append((b, running))
            cumulative.append(("+Inf", s["count"]))
            family.add_metric(list(key), cumulative, sum_value=s["sum"])
        yield family


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}, **problems(401, 413, 503)})
def metrics(request: Request, caller: Caller = Depends(require_reader)) -> Response:  # noqa: B008
    """Prometheus text format (every figure read from Redis now)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector(request.app.state.engine.store))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST,
                    headers={"Cache-Control": "no-store"})


__all__ = ["Collector", "router"]
