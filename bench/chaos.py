"""Chaos: many sessions on a few workers while workers are SIGKILLed and Redis restarts.

    python bench/chaos.py [--sessions 50] [--workers 3] [--processes 1] [--kill-every 5] [--turns 8] [--redis-restart-at 32.5]

One run:

1. starts a private ``redis-server`` with AOF on, a fake Messages API (the real SDK in the workers
   streams from it; each reply takes 0.2-0.8 s) and ``--workers`` ``mainsail worker`` processes;
2. starts ``--sessions`` sessions over ``--ramp`` seconds. Each session runs ``--turns`` Bash
   commands, one per model turn (``echo turn-N >> runs.txt && sleep 0.3`` in its own workspace, so
   a command run twice shows as a duplicate line), then answers;
3. meanwhile SIGKILLs a random worker every ``--kill-every`` seconds (and starts a replacement; with
   ``--processes`` P above 1 each worker is a supervisor of P processes, one of which is killed and
   replaced by its supervisor),
   SIGKILLs a random ``mainsail watch`` process each time (and starts another), and once, at
   ``--redis-restart-at`` seconds, stops Redis (SIGTERM) for ``--redis-down`` seconds and starts it
   again on its AOF;
   (no worker is killed from 4 s before the restart to 3 s after it, so that each recovery figure
   measures one kind of failure);
4. once every session has its result (or ``--timeout``), prints: sessions finished, duplicates
   (an entry, a model reply or a tool result recorded twice), re-runs (a command that ran twice),
   lost messages, and recovery times: per killed worker, from the kill to a reaper's verdict that it
   is dead (``mainsail:workers:events``); per step it held, from the kill to the step's commit
   elsewhere; per busy session, from Redis answering again to its next entry.

``--burn`` processes spin on the CPU meanwhile (each takes a core): the moderate load of
bench/README.md is ``--burn 1`` on this 2-core machine, one core taken from the workers. The
recovery of each step is split into its phases (bench/chaos_phases.py): found dead, taken back,
claimed elsewhere, committed; and per killed process of a supervisor, kill -> its replacement registered.

Exit status 1 on any unfinished session, duplicate, re-run or lost message (the recovery times are
reported, not asserted). ``tests/e2e/test_chaos.py`` runs the same with a handful of sessions.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.chaos_phases import PhaseWatch  # noqa: E402
from bench.chaos_report import (  # noqa: E402
    Kill,
    Report,
    check_session,
    detection_times,
    recovery_times,
    redis_resume_times,
    render,
)
from bench.step_overhead import Procs, child_env, free_port  # noqa: E402
from workflows.models.options import SessionOptions
from workflows.store.redis_store import stream_entries  # noqa: E402


@dataclass
class ChaosConfig:
    sessions: int = 50
    workers: int = 3
    turns: int = 8
    kill_every: float = 5.0
    redis_restart_at: float | None = 32.5
    redis_down: float = 3.0
    ramp: float = 40.0
    latency: tuple[float, float] = (0.2, 0.8)
    watchers: int = 8
    calm_before: float = 4.0  # no kill this long before the Redis restart ...
    calm_after: float = 3.0  # ... nor this long after Redis is back
    timeout: float = 400.0
    seed: int = 1
    min_live: int = 1  # kill only while at least this many workers are registered
    processes: int = 1  # worker processes per supervisor (1: a plain `mainsail worker`, replaced by the bench)
    burn: int = 0  # CPU burners (a busy loop each) running meanwhile: the load
    worker_env: dict[str, str] = field(default_factory=dict)


class Chaos:
    """One chaos run (see the module docstring); :meth:`run` returns its :class:`Report`."""

    def __init__(self, cfg: ChaosConfig, tmp: Path, log=print) -> None:
        self.cfg = cfg
        self.tmp = tmp
        self.say = log
        self.rnd = random.Random(cfg.seed)
        self.procs = Procs()
        self.workers: list[subprocess.Popen] = []
        self.watchers: list[subprocess.Popen] = []
        self.sessions: dict[str, Path] = {}
        self.kills: list[Kill] = []
        self.redis_down_at = self.redis_up_at = None
        self.busy_at_restart: list[str] = []
        self._n = 0
        self.orphans: list[str] = []

    # ------------------------------------------------------------------ processes

    def start_redis(self) -> None:
        binary = shutil.which("redis-server")
        if not binary:
            raise SystemExit("redis-server is not installed (apt-get install redis-server)")
        data = self.tmp / "redis"
        data.mkdir(exist_ok=True)
        self.redis_argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(data),
                           "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                           "--daemonize", "no"]
        self.redis = self.procs.start("redis-server", self.redis_argv, log=self.tmp / "redis.log")
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                self.procs.check(self.redis)
                if time.monotonic() > deadline:
                    raise RuntimeError("the private redis-server did not start")
                time.sleep(0.02)
        client.close()

    def restart_redis(self) -> None:
        self.busy_at_restart = [s for s in self.sessions if not self.finished(s)]
        self.say(f"restarting Redis ({len(self.busy_at_restart)} sessions busy)")
        self.redis.send_signal(signal.SIGTERM)
        self.redis.wait(30)
        self.redis_down_at = time.time()
        time.sleep(self.cfg.redis_down)
        self.start_redis()
        self.redis_up_at = time.time()
        self.say(f"Redis down at {self.redis_down_at % 1000:.2f}, back at {self.redis_up_at % 1000:.2f}")

    def start_worker(self) -> subprocess.Popen:
        n = self._n = self._n + 1
        p = self.procs.start(f"worker-{n}", [self.mainsail, "worker", "-l", "INFO", "--processes",
                                             str(self.cfg.processes)], env=self.env, log=self.tmp / f"worker-{n}.log")
        self.workers.append(p)
        return p

    def registry_name(self, pid: int) -> str | None:
        try:
            names = [n.decode() for n in self.store.r.zrange("mainsail:workers", 0, -1)]
        except redis.RedisError:
            return None
        return next((n for n in names if n.startswith(f"mainsail-{pid}@")), None)

    def live_pids(self) -> list[int]:
        """The registered worker processes (a supervisor's children, or the workers the bench started)."""
        if self.cfg.processes == 1:
            return [p.pid for p in self.workers if p.poll() is None and self.registry_name(p.pid)]
        try:
            names = [n.decode() for n in self.store.r.zrangebyscore("mainsail:workers", time.time(), "+inf")]
        except redis.RedisError:
            return []
        return [int(n.partition("@")[0].removeprefix("mainsail-")) for n in names]

    def kill_worker(self) -> None:
        live = self.live_pids()
        if len(live) < max(1, self.cfg.min_live):
            return
        victim = self.rnd.choice(live)
        name = self.registry_name(victim)
        try:
            held = self.store.workers.held(name)
        except redis.RedisError:
            held = {}
        registered = self.phases.registered()
        os.kill(victim, signal.SIGKILL)
        self.kills.append(Kill(at=time.time(), name=name, held=held))
        self.phases.watch(self.kills[-1].at, held, registered)
        if self.cfg.processes == 1:  # (a supervisor starts another child itself)
            proc = next(p for p in self.workers if p.pid == victim)
            proc.wait(10)
            self.workers.remove(proc)
            self.start_worker()
        self.say(f"killed {name.partition('#')[0]} holding {len(held)} step(s) at {self.kills[-1].at % 1000:.2f}")

    def churn_watchers(self) -> None:
        live = [p for p in self.watchers if p.poll() is None]
        if live:
            victim = self.rnd.choice(live)
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
        busy = [s for s in self.sessions if not self.finished(s)]
        if busy and len([p for p in self.watchers if p.poll() is None]) < self.cfg.watchers:
            sid = self.rnd.choice(busy)
            self.watchers.append(self.procs.start(f"watch-{sid[:8]}", [self.mainsail, "watch", sid],
                                                  env=dict(self.env, MAINSAIL_EMBEDDED_WORKER="false")))

    # ------------------------------------------------------------------ sessions

    def model_turn(self, body: dict):
        from demo.scripted import ToolUse, Turn

        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        delay = self.rnd.uniform(*self.cfg.latency)
        if n < self.cfg.turns:
            return Turn(text=f"Step {n}.", delay_seconds=delay * 0.7, stream_delay_seconds=delay * 0.03,
                        tool_uses=[ToolUse(name="Bash", input={"command": f"echo turn-{n} >> runs.txt && sleep 0.3"})])
        return Turn(text="All steps done.", delay_seconds=delay * 0.7, stream_delay_seconds=delay * 0.03)

    def start_session(self, i: int) -> None:
        from tasks.dispatch import dispatch

        ws = self.tmp / f"ws-{i}"
        ws.mkdir(exist_ok=True)
        rec = self.engine.create_session(str(ws), SessionOptions(permission_mode="bypassPermissions"))
        self.sessions[rec.id] = ws
        dispatch(self.engine.submit(rec.id, "Run the steps."))

    def finished(self, sid: str) -> bool:
        try:
            rows = self.store.r.xrevrange(f"mainsail:session:{sid}:log", count=1)
        except redis.RedisError:
            return False
        return bool(rows) and b'"type":"result"' in stream_entries(rows[0][1])[-1].replace(b" ", b"")

    # ------------------------------------------------------------------ the run

    def run(self) -> Report:
        from tasks import runtime
        from tasks.app import configure
        from tests.fakeapi import FakeMessagesServer
        from workflows.settings import load_settings

        cfg = self.cfg
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.mainsail = shutil.which("mainsail") or "mainsail"
        started = time.monotonic()
        api = FakeMessagesServer(self.model_turn)
        try:
            self.start_redis()
            self.env = child_env(self.tmp, MAINSAIL_REDIS_URL=self.url, ANTHROPIC_BASE_URL=api.url,
                                 ANTHROPIC_API_KEY="chaos", MAINSAIL_AUTO_MEMORY="false",
                                 MAINSAIL_SESSION_MEMORY="false", PYTHONUNBUFFERED="1", **cfg.worker_env)
            settings = load_settings(redis_url=self.url, auto_memory=False, session_memory=False,
                                     data_dir=self.tmp / "data")
            configure(self.url)
            self.engine = runtime.engine(settings)
            self.store = self.engine.store
            self.phases = PhaseWatch(self.store, replacements=cfg.processes > 1)
            for _ in range(cfg.workers):
                self.start_worker()
            deadline = time.monotonic() + 60
            while len(self.live_pids()) < cfg.workers * cfg.processes:
                for p in self.workers:
                    self.procs.check(p)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"workers did not register; see {self.tmp}/worker-*.log")
                time.sleep(0.1)
            burners = [self.procs.start(f"burn-{i}", [sys.executable, "-c", "while True: pass"])
                       for i in range(cfg.burn)]
            self.load = [os.getloadavg()[0]]
            self._loop()
            self.load.append(os.getloadavg()[0])
            for p in burners:
                p.kill()
            time.sleep(1.0)
            return self._report(time.monotonic() - started)
        finally:
            api.stop()
            self.procs.stop_all()
            self.orphans = left_running(self.tmp)
            if self.orphans:
                self.say(f"left running after the run, killed now: {'; '.join(self.orphans)[:600]}")

    def _loop(self) -> None:
        cfg = self.cfg
        t0 = time.monotonic()
        next_kill = t0 + cfg.kill_every
        restart_at = None if cfg.redis_restart_at is None else t0 + cfg.redis_restart_at
        started = 0
        while True:
            now = time.monotonic()
            while started < cfg.sessions and now >= t0 + started * cfg.ramp / cfg.sessions:
                try:
                    self.start_session(started)
                    started += 1
                except redis.RedisError:
                    break
            if restart_at and now >= restart_at:
                restart_at = None
                self.restart_redis()
            if now >= next_kill:
                next_kill = now + cfg.kill_every
                if not self.near_restart(now - t0):
                    self.kill_worker()
                self.churn_watchers()
            done = started == cfg.sessions and all(self.finished(s) for s in self.sessions)
            if done or now - t0 > cfg.timeout:
                if not done:
                    self.say(f"timed out after {cfg.timeout:g}s")
                return
            time.sleep(0.2)

    def near_restart(self, t: float) -> bool:
        """No kill from ``calm_before`` the Redis restart to ``calm_after`` Redis is back: each recovery
        figure then measures one kind of failure (a kill whose recovery overlaps the outage waits for Redis)."""
        at, cfg = self.cfg.redis_restart_at, self.cfg
        return at is not None and at - cfg.calm_before <= t <= at + cfg.redis_down + cfg.calm_after

    def _report(self, wall: float) -> Report:
        report = Report(sessions=self.cfg.sessions, turns=self.cfg.turns, wall=wall, kills=len(self.kills))
        for sid, ws in self.sessions.items():
            check_session(self.store, sid, ws, self.cfg.turns, report)
        report.recoveries = recovery_times(self.store, self.kills, report.details)
        report.detections, report.detected_how = detection_times(self.store, self.kills)
        if self.redis_up_at:
            report.redis_resumes = redis_resume_times(self.store, self.busy_at_restart, self.redis_down_at,
                                                      self.redis_up_at)
        report.sessions = max(report.sessions, len(self.sessions))
        report.phases = self.phases.stop()
        report.load = self.load
        return report


def left_running(tmp: Path) -> list[str]:
    """Processes still running whose command line names the run's directory (a killed worker's commands or
    sandboxes that outlived it), each as ``pid: program``; SIGKILLed."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(pid) != os.getpid() and any(str(tmp).encode() in a for a in argv):
            out.append(f"{pid}: {argv[0].decode(errors='replace')}")
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--processes", type=int, default=1, help="worker processes per supervisor (a kill takes one)")
    ap.add_argument("--turns", type=int, default=8, help="Bash commands per session (one per model turn)")
    ap.add_argument("--kill-every", type=float, default=5.0, help="seconds between two worker SIGKILLs")
    ap.add_argument("--redis-restart-at", type=float, default=32.5, help="seconds in; negative: no restart")
    ap.add_argument("--redis-down", type=float, default=3.0, help="seconds Redis stays down")
    ap.add_argument("--ramp", type=float, default=40.0, help="seconds over which the sessions start")
    ap.add_argument("--timeout", type=float, default=400.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--burn", type=int, default=0, help="CPU burners (a busy loop each) meanwhile: the load")
    ap.add_argument("--worker-env", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting for the workers (e.g. MAINSAIL_WORKER_HEARTBEAT_SECONDS=0.2); repeatable")
    ap.add_argument("-v", "--verbose", action="store_true", help="list each recovered step")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (worker logs) for inspection")
    args = ap.parse_args(argv)
    cfg = ChaosConfig(sessions=args.sessions, workers=args.workers, processes=args.processes, turns=args.turns,
                      kill_every=args.kill_every,
                      redis_restart_at=args.redis_restart_at if args.redis_restart_at >= 0 else None,
                      redis_down=args.redis_down, ramp=args.ramp, timeout=args.timeout, seed=args.seed,
                      burn=args.burn, worker_env=dict(kv.split("=", 1) for kv in args.worker_env))
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    tmp = Path(tempfile.mkdtemp(prefix="mainsail-chaos-"))
    os.environ.pop("ANTHROPIC_API_KEY", None)
    try:
        chaos = Chaos(cfg, tmp, log=lambda m: print(m, file=sys.stderr, flush=True))
        report = chaos.run()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if args.keep_tmp:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.verbose:
        print("\n".join(sorted(report.details)))
    print(render(report))
    print(f"left running           {len(chaos.orphans)} processes after the run (killed by the bench)")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
