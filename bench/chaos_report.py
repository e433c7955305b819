"""What a chaos run left behind, checked: finished sessions, duplicates, re-runs, lost messages, and
how long recovery took (see bench/chaos.py)."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from workflows.models import AssistantEntry, ResultEntry, SystemEntry, UserEntry
from workflows.store.redis_store import Store


@dataclass
class Kill:
    """One SIGKILLed worker: when, its registry name, and what it held just before (``sid/step`` -> token)."""

    at: float
    name: str
    held: dict[str, str]


@dataclass
class Report:
    sessions: int
    turns: int
    finished: int = 0
    duplicates: list[str] = field(default_factory=list)
    reruns: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    unknown_outcomes: int = 0
    recoveries: list[float] = field(default_factory=list)
    detections: list[float] = field(default_factory=list)
    detected_how: Counter = field(default_factory=Counter)
    redis_resumes: list[float] = field(default_factory=list)
    longest_stall: float = 0.0
    longest_stall_at: str = ""
    kills: int = 0
    wall: float = 0.0
    warnings: Counter = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)
    phases: object = None  # bench.chaos_phases.Phases
    load: list[float] = field(default_factory=list)  # the 1-minute load average at the start and the end

    @property
    def ok(self) -> bool:
        return self.finished == self.sessions and not (self.duplicates or self.reruns or self.lost)


def pct(values: list[float], p: float) -> float | None:
    """The ``p``-th percentile (nearest rank), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def check_session(store: Store, sid: str, workspace: Path, turns: int, report: Report) -> None:
    """Count what one session recorded, and compare with what its commands did."""
    rows = store.read_log(sid)
    entries = [e for _, e in rows]
    short = sid[:8]
    uuids = Counter(e.uuid for e in entries)
    report.duplicates += [f"{short}: entry {u} recorded {n} times" for u, n in uuids.items() if n > 1]
    replies = Counter(e.step_id for e in entries if isinstance(e, AssistantEntry))
    report.duplicates += [f"{short}: model step {s} replied {n} times" for s, n in replies.items() if n > 1]
    texts = Counter(e.message.text() for e in entries if isinstance(e, AssistantEntry))
    report.duplicates += [f"{short}: reply {t!r} recorded {n} times" for t, n in texts.items() if n > 1]
    results = Counter(e.message.blocks()[0].tool_use_id for e in entries
                      if isinstance(e, UserEntry) and e.origin == "tool_result")
    report.duplicates += [f"{short}: tool result {t} recorded {n} times" for t, n in results.items() if n > 1]
    unknown = sum(1 for e in entries if isinstance(e, UserEntry) and e.origin == "tool_result"
                  and "outcome is unknown" in e.message.blocks()[0].text)
    report.unknown_outcomes += unknown
    runs = Counter((workspace / "runs.txt").read_text().split()) if (workspace / "runs.txt").exists() else Counter()
    report.reruns += [f"{short}: command {line!r} ran {n} times" for line, n in runs.items() if n > 1]
    done = [e for e in entries if isinstance(e, ResultEntry)]
    if not done:
        rec = store.get_session(sid)
        report.lost.append(f"{short}: no result (state {rec.state.value}, {len(entries)} entries)")
    elif done[-1].subtype == "success":
        report.finished += 1
        if len(replies) != turns + 1 or len(results) != turns:
            report.lost.append(f"{short}: {len(replies)} replies and {len(results)} tool results, "
                               f"expected {turns + 1} and {turns}")
        if len(runs) + unknown < turns:
            report.lost.append(f"{short}: {len(runs)} commands ran and {unknown} of unknown outcome, "
                               f"expected {turns}")
    else:
        report.lost.append(f"{short}: ended {done[-1].subtype}: {done[-1].result[:200]}")
    for e in entries:
        if isinstance(e, SystemEntry) and e.subtype == "warning":
            report.warnings[_kind_of(e.content)] += 1
    times = [int(i.split("-")[0]) / 1000 for i, _ in rows]
    if len(times) > 1:
        gap, at = max((b - a, a) for a, b in zip(times, times[1:]))
        if gap > report.longest_stall:
            report.longest_stall, report.longest_stall_at = gap, f"session {short}, from {at % 1000:.2f}"


def _kind_of(text: str) -> str:
    if "outcome is unknown" in text:
        return "outcome unknown, not re-run"
    if "running it again" in text:
        return "run again (died)" if " died " in text else "run again (lease)"
    return text[:60]


def recovery_times(store: Store, kills: list[Kill], details: list[str] | None = None) -> list[float]:
    """Per step a killed worker held: seconds from the kill to that step's commit elsewhere.

    A step whose next worker was killed too counts once, from its last kill (the earlier recovery ended
    when that worker claimed it, which the ledger does not keep).
    """
    out = []
    last_kill = {member: kill for kill in kills for member in kill.held}
    for kill in kills:
        for member, token in kill.held.items():
            if last_kill[member] is not kill:
                continue
            sid, step_id = member.split("/", 1)
            try:
                step = store.get_step(sid, step_id)
            except Exception:
                continue
            if step.finished and step.updated_at > kill.at:
                out.append(step.updated_at - kill.at)
                if details is not None:
                    details.append(f"{out[-1]:6.2f}s  {step.kind.value:5} {member[:8]}/{step_id[:8]} "
                                   f"{'claimed' if token else 'taken'} attempt {step.attempt} {step.status.value}"
                                   f" (killed {kill.name.partition('#')[0]} at {kill.at % 1000:.2f})")
    return out


def detection_times(store: Store, kills: list[Kill]) -> tuple[list[float], Counter]:
    """Per killed worker: seconds from the kill to a reaper's recorded verdict that it is dead, and how
    the reapers found them (``connection closed``, ``registration expired``)."""
    dead = {f["worker"]: f for _, f in store.workers.events() if f["event"] == "dead"}
    out, how = [], Counter()
    for kill in kills:
        verdict = dead.get(kill.name)
        if verdict is not None:
            out.append(float(verdict["at"]) - kill.at)
            how[verdict["how"].partition(":")[0]] += 1
    return out, how


def redis_resume_times(store: Store, sids: list[str], down_at: float, up_at: float) -> list[float]:
    """Per session busy across the Redis restart: seconds from Redis answering again to its next entry."""
    out = []
    for sid in sids:
        times = [int(i.split("-")[0]) / 1000 for i, _ in store.read_log(sid)]
        before = [t for t in times if t <= down_at]
        after = [t for t in times if t >= up_at]
        if before and after and not _ended_before(store, sid, down_at):
            out.append(after[0] - up_at)
    return out


def _ended_before(store: Store, sid: str, when: float) -> bool:
    for rid, e in store.read_log(sid):
        if isinstance(e, ResultEntry):
            return int(rid.split("-")[0]) / 1000 <= when
    return False


def _phase_lines(report: Report, fmt) -> list[str]:
    """Recovery split into its phases (bench/chaos_phases.py), and the replacements' start."""
    ph = report.phases
    if ph is None:
        return []
    span = lambda vs: f"p50 {fmt(pct(vs, 50))}  p90 {fmt(pct(vs, 90))}  max {fmt(max(vs, default=None))}"  # noqa: E731
    out = [f"  kill -> taken back    {span(ph.taken)}",
           f"  kill -> claimed       {span(ph.claimed)}",
           f"  claimed -> committed  {span(ph.run)}  (the step's own run)"]
    if ph.replaced:
        out.append(f"replacement registered {span(ph.replaced)}  ({len(ph.replaced)} forked processes, after the kill)")
    return out


def render(report: Report) -> str:
    """The figures, one per line."""
    fmt = lambda v: "n/a" if v is None else f"{v:.2f} s"  # noqa: E731
    lines = [
        f"sessions finished      {report.finished}/{report.sessions} ({report.turns} Bash turns each)",
        f"duplicates             {len(report.duplicates)}",
        f"re-runs                {len(report.reruns)}",
        f"lost messages          {len(report.lost)}",
        f"outcome unknown        {report.unknown_outcomes} (commands killed mid-run, reported, not re-run)",
        f"workers SIGKILLed      {report.kills}",
        f"found dead after kill  p50 {fmt(pct(report.detections, 50))}  p90 {fmt(pct(report.detections, 90))}  "
        f"max {fmt(max(report.detections, default=None))}  ({len(report.detections)} workers: "
        f"{', '.join(f'{k} {n}' for k, n in report.detected_how.most_common()) or 'none'})",
        f"recovery after a kill  p50 {fmt(pct(report.recoveries, 50))}  p90 {fmt(pct(report.recoveries, 90))}  "
        f"max {fmt(max(report.recoveries, default=None))}  ({len(report.recoveries)} steps)",
        *_phase_lines(report, fmt),
        f"resume after Redis     p50 {fmt(pct(report.redis_resumes, 50))}  p90 {fmt(pct(report.redis_resumes, 90))}"
        f"  max {fmt(max(report.redis_resumes, default=None))}  ({len(report.redis_resumes)} sessions)",
        f"longest stall          {report.longest_stall:.2f} s (largest gap between two entries of a session: "
        f"{report.longest_stall_at})",
        f"wall                   {report.wall:.1f} s",
    ]
    if report.load:
        lines.append("load average           " + " -> ".join(f"{v:.1f}" for v in report.load) + " (start -> end)")
    if report.warnings:
        lines.append("recovery entries       " + ", ".join(f"{k}: {n}" for k, n in report.warnings.most_common()))
    for title, items in (("DUPLICATE", report.duplicates), ("RE-RUN", report.reruns), ("LOST", report.lost)):
        lines += [f"  {title}: {item}" for item in items[:20]]
    return "\n".join(lines)


__all__ = ["Kill", "Report", "check_session", "detection_times", "recovery_times", "redis_resume_times", "render", "pct",
           "statistics"]
