"""Host crash: does a command run twice when the host dies and Redis's AOF loses what it had not fsynced?

    python bench/host_crash.py [--rounds 8] [--sessions 4] [--turns 6] [--fsync everysec|always]
                               [--no-durable] [--redis-server PATH]
    python bench/host_crash.py --measure-wait [--redis-server PATH]

Each round:

1. starts a private Redis (AOF on, ``--fsync``) under an ``LD_PRELOAD`` shim (bench/fsync_log.c, built
   with ``gcc`` into the round's temp dir) that logs, at each fsync Redis makes, how much of the file it is
   sure to have put on disk; the fake Messages API; one ``mainsail worker``;
2. starts ``--sessions`` sessions of ``--turns`` Bash commands each (``echo turn-N >> runs.txt; sleep
   0.2``: each command's effect is a line of its workspace's ``runs.txt``, so one run twice is a repeat);
3. after a random pause, as soon as the next command's line appears (its claim then is at most a few
   tens of milliseconds old: the worst moment), crashes the host: SIGKILL to Redis, the worker and every
   command, and cuts each AOF file back to its last fsynced size (what a power cut keeps: the page
   cache is gone, the fsynced part is not);
4. starts Redis again on the cut AOF and a new worker (whose reaper takes back the dead worker's steps and
   sends the ones left pending), lets every session finish, and counts commands whose line appears twice
   (re-runs), results of unknown outcome (a command killed mid-run: reported to the model, not re-run)
   and sessions that did not finish.

``--no-durable`` runs the workers with ``MAINSAIL_DURABLE_CLAIMS=false``: a mutating call does not wait
for its claim to reach the disk (workflows/store/durable.py), which is what the bench should show
re-runs for under ``everysec``. With the wait on, ``everysec`` needs a Redis with WAITAOF (7.2+, or
valkey-server; ``--redis-server``, default ``$MAINSAIL_TEST_WAITAOF_SERVER`` or ``redis-server``);
on an older Redis the wait is a no-op there and only ``--fsync always`` makes claims durable.
``--measure-wait`` prints what a durable write costs.
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
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.step_overhead import Procs, child_env, free_port  # noqa: E402


@dataclass
class Outcome:
    ran: int  # commands whose effect happened (lines)
    twice: int  # of them, effects that happened again
    unknown: int  # results of unknown outcome (not re-run)
    unfinished: int
    cut: int  # bytes of AOF the crash lost
    mode: str  # how the workers made a claim durable


def build_shim(tmp: Path) -> Path:
    """Compile bench/fsync_log.c (see its header) into ``tmp``."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        raise SystemExit("host_crash.py needs a C compiler (gcc) to build its fsync shim (bench/fsync_log.c)")
    out = tmp / "fsync_log.so"
    subprocess.run([gcc, "-O2", "-shared", "-fPIC", "-o", str(out), str(ROOT / "bench" / "fsync_log.c"), "-ldl"],
                   check=True)
    return out


class Round:
    """One crash (see the module docstring)."""

    def __init__(self, args, tmp: Path, rnd: random.Random, shim: Path) -> None:
        self.args, self.tmp, self.rnd, self.shim = args, tmp, rnd, shim
        self.procs = Procs()
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.data = tmp / "redis"
        self.data.mkdir()
        self.workspaces: list[Path] = []
        self.starts = 0

    def redis_up(self) -> redis.Redis:
        self.starts += 1
        self.fsync_log = self.tmp / f"fsync-{self.starts}.log"
        argv = [self.args.redis_server, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data),
                "--save", "", "--appendonly", "yes", "--appendfsync", self.args.fsync, "--daemonize", "no"]
        env = dict(os.environ, LD_PRELOAD=str(self.shim), FSYNC_LOG=str(self.fsync_log))
        self.redis = self.procs.start("redis", argv, env=env, log=self.tmp / f"redis-{self.starts}.log")
        client = redis.Redis.from_url(self.url)
        wait(client.ping, 10, f"redis to start (see {self.tmp}/redis-{self.starts}.log)")
        return client

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

    def run(self) -> Outcome:
        from tests.fakeapi import FakeMessagesServer
        from workflows.store.durable import Durability

        api = FakeMessagesServer(self.turn)
        try:
            client = self.redis_up()
            mode = "off" if self.args.no_durable else Durability(client, say=False).wait()
            self.env = child_env(self.tmp, MAINSAIL_REDIS_URL=self.url, ANTHROPIC_BASE_URL=api.url,
                                 ANTHROPIC_API_KEY="crash", MAINSAIL_AUTO_MEMORY="false",
                                 MAINSAIL_SESSION_MEMORY="false", MAINSAIL_EMBEDDED_WORKER="false",
                                 MAINSAIL_DURABLE_CLAIMS=str(not self.args.no_durable).lower(),
                                 MAINSAIL_LEASE_SECONDS="5", PYTHONUNBUFFERED="1")
            worker = self.worker(1)
            wait(lambda: client.zcard("mainsail:workers") > 0, 90, "the worker to register")
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
            cut = self.crash(worker, runs)
            client = self.redis_up()
            self.worker(2)
            wait(lambda: self.finished(client)[0] == len(self.workspaces), self.args.timeout, None)
            done, unknown = self.finished(client)
            return Outcome(ran=sum(lines(ws) for ws in self.workspaces),
                           twice=sum(repeats(ws) for ws in self.workspaces), unknown=unknown,
                           unfinished=len(self.workspaces) - done, cut=cut, mode=mode)
        finally:
            api.stop()
            self.procs.stop_all()
            kill_under(self.tmp)

    def crash(self, worker: subprocess.Popen, runs: list[subprocess.Popen]) -> int:
        """SIGKILL everything, then cut each AOF file to what its last fsync covered; the bytes cut."""
        for p in (self.redis, worker, *runs):
            p.send_signal(signal.SIGKILL)
        kill_under(self.tmp)
        for p in (self.redis, worker, *runs):
            p.wait(10)
        synced: dict[int, int] = {}
        for line in self.fsync_log.read_text().splitlines() if self.fsync_log.exists() else ():
            inode, size = map(int, line.split())
            synced[inode] = size  # (the last fsync of a file covers the most)
        cut = 0
        for path in (self.data / "appendonlydir").iterdir():
            st = path.stat()
            keep = synced.get(st.st_ino, 0 if path.name.endswith(".incr.aof") else st.st_size)
            if keep < st.st_size:
                os.truncate(path, keep)
                cut += st.st_size - keep
        return cut

    def finished(self, client: redis.Redis) -> tuple[int, int]:
        """(sessions that recorded their final answer, results of unknown outcome): the workers, not the dead
        clients, carry the sessions on."""
        done = unknown = 0
        for sid in client.zrange("mainsail:sessions", 0, -1):
            values = [v.replace(b" ", b"") for _, fields in client.xrange(f"mainsail:session:{sid.decode()}:log")
                      for v in fields.values()]
            done += any(b"Allstepsdone" in v for v in values)
            unknown += sum(b'"origin":"tool_result"' in v and b"outcomeisunknown" in v for v in values)
        return done, unknown


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
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--fsync", choices=("everysec", "always"), default="everysec")
    ap.add_argument("--no-durable", action="store_true",
                    help="workers do not wait for a claim's fsync (MAINSAIL_DURABLE_CLAIMS=false)")
    ap.add_argument("--redis-server", default=os.environ.get("MAINSAIL_TEST_WAITAOF_SERVER")
                    or shutil.which("redis-server") or "redis-server")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--measure-wait", action="store_true", help="only measure the cost of a durable write")
    args = ap.parse_args(argv)
    if args.measure_wait:
        measure_wait(args.redis_server)
        return 0
    rnd = random.Random(args.seed)
    total = Outcome(0, 0, 0, 0, 0, "")
    for n in range(args.rounds):
        tmp = Path(tempfile.mkdtemp(prefix="mainsail-crash-"))
        try:
            o = Round(args, tmp, rnd, build_shim(tmp)).run()
            print(f"round {n + 1}: AOF cut by {o.cut} bytes; {o.ran} commands, {o.twice} run twice, {o.unknown} of "
                  f"unknown outcome, {o.unfinished} sessions unfinished", flush=True)
            total = Outcome(total.ran + o.ran, total.twice + o.twice, total.unknown + o.unknown,
                            total.unfinished + o.unfinished, total.cut + o.cut, o.mode)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    server = subprocess.run([args.redis_server, "--version"], capture_output=True, text=True).stdout.split(" sha")[0]
    print(f"{server}, appendfsync {args.fsync}, durable claims: {total.mode}: {args.rounds * args.sessions} sessions, "
          f"{total.ran} commands, {total.twice} run twice, {total.unknown} of unknown outcome, "
          f"{total.unfinished} unfinished")
    return 1 if total.twice or total.unfinished else 0


if __name__ == "__main__":
    sys.exit(main())
