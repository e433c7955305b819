"""Host crash: does a command run twice when the host dies and Redis's AOF loses its last second?

    python bench/host_crash.py [--rounds 5] [--sessions 4] [--fsync everysec|always] [--redis-server PATH]

Each round:

1. starts a private Redis (AOF on, ``--fsync``), the fake Messages API and one ``mainsail worker``;
2. starts ``--sessions`` sessions of ``--turns`` Bash commands each (``echo turn-N >> runs.txt; sleep
   0.2``: a command run twice shows as a repeated line), while a thread notes the AOF's size every 10 ms;
3. after a random pause, as soon as the next command has started (its claim then lies in the AOF's last
   second), crashes the host: SIGKILL to Redis, the worker and every command;
4. cuts the AOF as the crash would have: with ``everysec`` to its size one second before (what Redis
   had written but maybe not fsynced is gone); with ``always`` nothing (every acknowledged write was on
   disk before its reply);
5. starts Redis again on the cut AOF and a new worker (whose reaper takes back the dead worker's steps and
   sends the ones left pending), lets every session finish, and counts the commands that ran twice
   (re-runs) and the sessions that did not finish.

A Redis with WAITAOF (7.2 and later: ``--redis-server`` a valkey-server or redis-server 7.2+) and
``everysec`` is not simulated by step 4: what it has fsynced cannot be seen from outside the process
(its guarantee is WAITAOF's own contract; ``--measure-wait`` prints what the wait costs per call).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.step_overhead import Procs, child_env, free_port  # noqa: E402


class Round:
    """One crash (see the module docstring)."""

    def __init__(self, args, tmp: Path, rnd: random.Random) -> None:
        self.args, self.tmp, self.rnd = args, tmp, rnd
        self.procs = Procs()
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.data = tmp / "redis"
        self.data.mkdir()
        self.sizes: list[tuple[float, int]] = []
        self.sampling = True
        self.workspaces: list[Path] = []

    def redis_up(self) -> redis.Redis:
        argv = [self.args.redis_server, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data),
                "--save", "", "--appendonly", "yes", "--appendfsync", self.args.fsync, "--daemonize", "no"]
        self.redis = self.procs.start("redis", argv, log=self.tmp / "redis.log")
        client = redis.Redis.from_url(self.url)
        for _ in range(500):
            try:
                client.ping()
                return client
            except redis.ConnectionError:
                time.sleep(0.02)
        raise RuntimeError(f"redis did not start; see {self.tmp}/redis.log")

    def aof(self) -> Path:
        """The AOF file writes go to (Redis 7's multi-part AOF: the newest incr file)."""
        return max((self.data / "appendonlydir").glob("*.incr.aof"), key=lambda p: p.stat().st_mtime)

    def sample(self) -> None:
        while self.sampling:
            try:
                self.sizes.append((time.monotonic(), self.aof().stat().st_size))
            except (OSError, ValueError):
                pass
            time.sleep(0.01)

    def worker(self, n: int) -> subprocess.Popen:
        return self.procs.start(f"worker-{n}", [shutil.which("mainsail") or "mainsail", "worker"], env=self.env,
                                log=self.tmp / f"worker-{n}.log")

    def turn(self, body: dict):
        from demo.scripted import ToolUse, Turn

        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if n < self.args.turns:
            return Turn(text=f"Step {n}.", delay_seconds=self.rnd.uniform(0.02, 0.1),
                        tool_uses=[ToolUse(name="Bash", input={"command": f"echo turn-{n} >> runs.txt; sleep 0.2"})])
        return Turn(text="All steps done.")

    def run(self) -> tuple[int, int, int]:
        """(commands run, commands run twice, sessions unfinished)."""
        from tests.fakeapi import FakeMessagesServer

        api = FakeMessagesServer(self.turn)
        try:
            client = self.redis_up()
            self.env = child_env(self.tmp, MAINSAIL_REDIS_URL=self.url, ANTHROPIC_BASE_URL=api.url,
                                 ANTHROPIC_API_KEY="crash", MAINSAIL_AUTO_MEMORY="false",
                                 MAINSAIL_SESSION_MEMORY="false", MAINSAIL_EMBEDDED_WORKER="false",
                                 MAINSAIL_LEASE_SECONDS="5", PYTHONUNBUFFERED="1")
            worker = self.worker(1)
            wait(lambda: client.zcard("mainsail:workers") > 0, 90, "the worker to register")
            threading.Thread(target=self.sample, daemon=True).start()
            runs = []
            for i in range(self.args.sessions):
                ws = self.tmp / f"ws-{i}"
                ws.mkdir()
                self.workspaces.append(ws)
                runs.append(self.procs.start(f"run-{i}", [shutil.which("mainsail") or "mainsail", "run",
                                                          "--permission-mode", "bypassPermissions", "Run the steps."],
                                             env=self.env, cwd=ws, log=self.tmp / f"run-{i}.log"))
            wait(lambda: all(lines(ws) for ws in self.workspaces), 90, "every session's first command")
            time.sleep(self.rnd.uniform(0.0, self.args.turns * 0.2))
            ran = sum(lines(ws) for ws in self.workspaces)  # then the worst moment: a command has just started
            wait(lambda: sum(lines(ws) for ws in self.workspaces) > ran, 60, "another command")
            self.crash(worker, runs)
            client = self.redis_up()
            self.worker(2)
            wait(lambda: self.finished(client) == len(self.workspaces), self.args.timeout, None)
            total = sum(lines(ws) for ws in self.workspaces)
            twice = sum(repeats(ws) for ws in self.workspaces)
            return total, twice, len(self.workspaces) - self.finished(client)
        finally:
            self.sampling = False
            api.stop()
            self.procs.stop_all()
            kill_under(self.tmp)

    def crash(self, worker: subprocess.Popen, runs: list[subprocess.Popen]) -> None:
        at = time.monotonic()
        for p in (self.redis, worker, *runs):
            p.send_signal(signal.SIGKILL)
        kill_under(self.tmp)
        for p in (self.redis, worker, *runs):
            p.wait(10)
        self.sampling = False
        aof = self.aof()
        if self.args.fsync == "everysec":
            keep = max((size for t, size in self.sizes if t <= at - 1.0), default=0)
            before = aof.stat().st_size
            with open(aof, "r+b") as fh:
                fh.truncate(min(keep, before))
            self.cut = before - min(keep, before)
        else:
            self.cut = 0

    def finished(self, client: redis.Redis) -> int:
        """How many sessions recorded their final answer (the workers, not the dead clients, carry them on)."""
        done = 0
        for sid in client.zrange("mainsail:sessions", 0, -1):
            text = b"".join(v for _, fields in client.xrange(f"mainsail:session:{sid.decode()}:log")
                            for v in fields.values())
            done += b"All steps done" in text
        return done


def lines(ws: Path) -> int:
    try:
        return len((ws / "runs.txt").read_text().splitlines())
    except FileNotFoundError:
        return 0


def repeats(ws: Path) -> int:
    try:
        seen = (ws / "runs.txt").read_text().splitlines()
    except FileNotFoundError:
        return 0
    return len(seen) - len(set(seen))


def kill_under(tmp: Path) -> None:
    """SIGKILL every process whose working directory is under ``tmp`` (the commands and their guards)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(tmp)) and int(pid) != os.getpid():
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def wait(predicate, timeout: float, what: str | None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except redis.RedisError:
            pass
        time.sleep(0.05)
    if what:
        raise RuntimeError(f"timed out waiting for {what}")
    return False


def measure_wait(server: str, n: int = 30) -> None:
    """What a durable claim costs: WAITAOF under everysec, and one write under appendfsync always."""
    tmp = Path(tempfile.mkdtemp(prefix="mainsail-fsync-"))
    procs, port = Procs(), free_port()
    procs.start("redis", [server, "--port", str(port), "--dir", str(tmp), "--save", "", "--appendonly", "yes",
                          "--appendfsync", "everysec"], log=tmp / "redis.log")
    r = redis.Redis(port=port)
    wait(lambda: r.ping(), 10, "redis")
    try:
        for mode in ("everysec", "always"):
            r.config_set("appendfsync", mode)
            what = "a write + WAITAOF (everysec)" if mode == "everysec" else "a write (appendfsync always)"
            times = []
            try:
                for _ in range(n):
                    t = time.perf_counter()
                    p = r.pipeline(transaction=False)
                    p.hincrby("m", "x", 1)
                    if mode == "everysec":
                        p.execute_command("WAITAOF", 1, 0, 5000)
                    p.execute()
                    times.append((time.perf_counter() - t) * 1000)
                    time.sleep(0.02)
            except redis.ResponseError as exc:
                print(f"{what}: {server} refuses it ({str(exc).split(',')[0]})")
                continue
            times.sort()
            print(f"{what}: p50 {statistics.median(times):.1f} ms, p90 {times[int(n * 0.9)]:.1f} ms")
    finally:
        procs.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--fsync", choices=("everysec", "always"), default="everysec")
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--measure-wait", action="store_true", help="only measure the cost of a durable write")
    args = ap.parse_args(argv)
    if args.measure_wait:
        measure_wait(args.redis_server)
        return 0
    rnd = random.Random(args.seed)
    ran = twice = unfinished = 0
    for n in range(args.rounds):
        tmp = Path(tempfile.mkdtemp(prefix="mainsail-crash-"))
        try:
            one = Round(args, tmp, rnd)
            r, t, u = one.run()
            print(f"round {n + 1}: AOF cut by {one.cut} bytes; {r} commands, {t} run twice, {u} sessions unfinished",
                  flush=True)
            ran, twice, unfinished = ran + r, twice + t, unfinished + u
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    sessions = args.rounds * args.sessions
    print(f"appendfsync {args.fsync}: {sessions} sessions, {ran} commands, {twice} run twice, "
          f"{unfinished} unfinished")
    return 1 if twice or unfinished else 0


if __name__ == "__main__":
    sys.exit(main())
