"""Agent step overhead vs a bare Celery round trip, on one private Redis.

    python bench/step_overhead.py [--steps N] [--rounds R]

One run:

1. starts a private ``redis-server`` (no persistence) on a free port;
2. starts ``mainsail worker -Q model,tools -c 4`` as a subprocess, waits for it
   to register, runs one warm-up session, then R measured sessions of the
   scripted model ``scripted:read_loop:N`` (N Read turns, then end_turn; the
   model answers in-process with zero latency). One agent step is
   model step -> tool step -> next model step, so the per-step overhead is
   (session wall time, submit -> ResultEntry) / N;
3. starts a bare ``celery worker`` (bench/bare_app.py, Redis DB 1) and times a
   no-op ``apply_async().get()``, three of them in a row, and a worker-driven
   ``chain`` of three no-ops;
4. prints a table, and stops every process it started (also on Ctrl-C).

Exit status is 0 whatever the figures: a benchmark reports, it does not assert.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from workflows.models.options import SessionOptions

TARGET_RATIO = 2.0
BENCH_FILE_LINES = "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(1, 21))


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Procs:
    """Every subprocess this run started; ``stop_all`` terminates them (kill after a timeout)."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen, Path | None]] = []

    def start(self, name: str, argv: list[str], *, env: dict | None = None, cwd: Path | None = None,
              log: Path | None = None) -> subprocess.Popen:
        out = open(log, "wb") if log else subprocess.DEVNULL
        try:
            # Own session: a Ctrl-C in the terminal reaches only us; we stop the children ourselves.
            p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            if log:
                out.close()
        self.procs.append((name, p, log))
        return p

    def check(self, p: subprocess.Popen) -> None:
        if p.poll() is not None:
            name, log = next((n, lg) for n, q, lg in self.procs if q is p)
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise RuntimeError(f"{name} exited with status {p.returncode}\n{tail}")

    def stop(self, p: subprocess.Popen, timeout: float = 10.0) -> None:
        name = next(n for n, q, _ in self.procs if q is p)
        t0 = time.monotonic()
        self._terminate([(name, p)], timeout)
        print(f"stopped {name} in {time.monotonic() - t0:.1f}s", file=sys.stderr)

    def stop_all(self, timeout: float = 10.0) -> None:
        """Terminate every process still running, wait up to ``timeout`` in all, kill the rest.

        Workers are signalled before Redis (they talk to it while shutting down).
        Further Ctrl-C / SIGTERM are ignored meanwhile, so cleanup cannot be cut short.
        """
        old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            workers = [(n, p) for n, p, _ in self.procs if n != "redis-server"]
            servers = [(n, p) for n, p, _ in self.procs if n == "redis-server"]
            for tier in (workers, servers):
                self._terminate(tier, timeout)
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    @staticmethod
    def _terminate(procs: list[tuple[str, subprocess.Popen]], timeout: float) -> None:
        live = [(n, p) for n, p in procs if p.poll() is None]
        for _, p in live:
            try:
                p.terminate()
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        for name, p in live:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"warning: {name} (pid {p.pid}) did not stop in {timeout:g}s; killing it", file=sys.stderr)
                p.kill()
                p.wait(5)


def start_redis(procs: Procs, tmp: Path) -> str:
    binary = shutil.which("redis-server")
    if not binary:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    data = tmp / "redis"
    data.mkdir()
    p = procs.start("redis-server", [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data),
                                     "--save", "", "--appendonly", "no", "--daemonize", "no"],
                    log=tmp / "redis.log")
    base = f"redis://127.0.0.1:{port}"
    client = redis.Redis.from_url(base + "/0")
    deadline = time.monotonic() + 10
    while True:
        procs.check(p)
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise RuntimeError("the private redis-server did not start")
            time.sleep(0.05)
    client.close()
    return base


def start_fake_api(procs: Procs, tmp: Path, steps: int, keep_requests: int | None = None) -> str:
    """``python -m tests.fakeapi`` serving ``read_loop:N`` in its own process; its base URL.

    ``keep_requests``: the request bodies it keeps for ``GET /_requests`` (default 1,000). Kept bodies
    are garbage its collector walks again and again, on the cores the measured processes run on.
    """
    port = free_port()
    log = tmp / "fakeapi.log"
    keep = ["--keep-requests", str(keep_requests)] if keep_requests else []
    p = procs.start("fake Messages API", [sys.executable, "-m", "tests.fakeapi", "--port", str(port),
                                          "--named", f"read_loop:{steps}", *keep],
                    env=child_env(tmp), cwd=ROOT, log=log)
    url = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 30
    while True:
        procs.check(p)
        try:
            if httpx.get(url + "/_health", timeout=1).status_code == 200:
                return url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the fake Messages API did not start; see {log}")
        time.sleep(0.05)


def child_env(tmp: Path, **extra: str) -> dict:
    env = dict(os.environ)
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MAINSAIL_MODEL"):
        env.pop(var, None)
    env["MAINSAIL_DATA_DIR"] = str(tmp / "data")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


# --------------------------------------------------------------------------- mainsail phase


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its children (Linux /proc; 0 elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents.setdefault(int(stat.rpartition(")")[2].split()[1]), []).append(int(entry))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        todo.extend(parents.get(p, []))
    return total


def redis_command_stats(client: redis.Redis) -> dict[str, int]:
    info = client.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in info.items()}


def run_agent_phase(procs: Procs, tmp: Path, base_url: str, steps: int, rounds: int) -> dict:
    url = base_url + "/0"
    os.environ["MAINSAIL_REDIS_URL"] = url
    os.environ["MAINSAIL_DATA_DIR"] = str(tmp / "data")

    from cli.follow import follow
    from tasks import runtime
    from tasks.app import configure
    from tasks.dispatch import dispatch
    from workflows.models import ResultEntry
    from workflows.settings import load_settings

    settings = load_settings(redis_url=url)
    configure(url)
    engine = runtime.engine(settings)
    store = engine.store

    mainsail = shutil.which("mainsail") or "mainsail"
    worker = procs.start(
        "mainsail worker",
        [mainsail, "worker", "-Q", "model,tools", "-c", "4", "-l", "WARNING"],
        env=child_env(tmp, MAINSAIL_REDIS_URL=url, MAINSAIL_LOCAL_REDIS_URL=url),
        cwd=ROOT, log=tmp / "mainsail-worker.log",
    )
    deadline = time.monotonic() + 60
    while not {"model", "tools"} <= store.live_queues():
        procs.check(worker)
        if time.monotonic() > deadline:
            raise RuntimeError("the mainsail worker did not register within 60s; see " + str(tmp / "mainsail-worker.log"))
        time.sleep(0.1)

    workspace = tmp / "workspace"
    workspace.mkdir()
    (workspace / "bench.txt").write_text(BENCH_FILE_LINES)
    model = f"scripted:read_loop:{steps}"

    def one_session() -> tuple[float, ResultEntry]:
        rec = engine.create_session(str(workspace), SessionOptions(model=model, permission_mode="bypassPermissions"))
        t0 = time.perf_counter()
        dispatch(engine.submit(rec.id, f"Read bench.txt {steps} times."))
        result = follow(store, rec.id, on_entry=lambda e: None, block_ms=200, timeout=120)
        wall = time.perf_counter() - t0
        if not isinstance(result, ResultEntry):
            procs.check(worker)
            raise RuntimeError(f"session {rec.id} did not finish within 120s")
        if result.is_error or result.num_turns != steps + 1:
            raise RuntimeError(f"session {rec.id} ended badly: {result.subtype} after {result.num_turns} "
                               f"turns: {result.result}")
        return wall, result

    one_session()  # warm-up: imports, SDK client, connections in the worker

    stats_client = redis.Redis.from_url(url)
    stats_client.config_resetstat()
    walls = []
    cpu0 = process_cpu(worker.pid)
    for _ in range(rounds):
        wall, _result = one_session()
        walls.append(wall)
    cpu = process_cpu(worker.pid) - cpu0
    cmds = redis_command_stats(stats_client)
    stats_client.close()

    procs.stop(worker)
    median_wall = statistics.median(walls)
    return {
        "walls": walls,
        "median_wall": median_wall,
        "per_step": median_wall / steps,
        "per_hop": median_wall / (2 * steps + 1),
        "redis_cmds": cmds,
        "redis_cmds_per_step": sum(cmds.values()) / (steps * rounds),
        "cpu_per_step": cpu / (steps * rounds),
    }


# --------------------------------------------------------------------------- bare phase


def run_bare_phase(procs: Procs, tmp: Path, base_url: str, rounds: int) -> dict:
    url = base_url + "/1"
    os.environ["BENCH_BARE_URL"] = url
    from celery import chain

    from bench import bare_app

    bare_app.app.conf.broker_url = url
    bare_app.app.conf.result_backend = url
    celery_bin = shutil.which("celery") or "celery"
    worker = procs.start(
        "bare celery worker",
        [celery_bin, "-A", "bench.bare_app", "worker", "-P", "threads", "-c", "4", "--without-mingle",
         "--without-gossip", "--without-heartbeat", "-Q", bare_app.QUEUE, "-l", "WARNING"],
        env=child_env(tmp, BENCH_BARE_URL=url), cwd=ROOT, log=tmp / "bare-worker.log",
    )
    noop = bare_app.noop
    deadline = time.monotonic() + 60
    while True:  # ready when a no-op comes back
        procs.check(worker)
        try:
            noop.apply_async(queue=bare_app.QUEUE).get(timeout=2)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise RuntimeError("the bare celery worker did not answer within 60s; see "
                                   + str(tmp / "bare-worker.log"))

    def timed(fn, n: int) -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out

    def one() -> None:
        noop.apply_async(queue=bare_app.QUEUE).get(timeout=30)

    def three() -> None:
        for _ in range(3):
            one()

    def chained() -> None:
        sig = noop.si().set(queue=bare_app.QUEUE)
        chain(sig, sig.clone(), sig.clone()).apply_async().get(timeout=30)

    n = max(50, rounds * 20)
    timed(one, 20)  # warm-up
    stats_client = redis.Redis.from_url(url)
    stats_client.config_resetstat()
    cpu0 = process_cpu(worker.pid)
    ones = timed(one, n)
    cpu = process_cpu(worker.pid) - cpu0
    cmds = redis_command_stats(stats_client)
    stats_client.close()
    threes = timed(three, max(20, n // 3))
    chains = timed(chained, max(20, n // 3))
    procs.stop(worker)
    return {
        "one": statistics.median(ones),
        "three": statistics.median(threes),
        "chain3": statistics.median(chains),
        "n": n,
        "redis_cmds_per_rt": sum(cmds.values()) / n,
        "cpu_per_rt": cpu / n,
    }


# --------------------------------------------------------------------------- report


def report(steps: int, rounds: int, agent: dict, bare: dict) -> None:
    ms = lambda s: f"{s * 1000:8.2f}"  # noqa: E731
    step = agent["per_step"]
    rows = [
        (f"bare round trip (apply_async().get(), median of {bare['n']})", ms(bare["one"]) + " ms"),
        ("3 bare round trips (sequential, client-driven)", ms(bare["three"]) + " ms"),
        ("chain of 3 no-ops (worker-driven hops)", ms(bare["chain3"]) + " ms"),
        (f"agent session wall, {steps} steps (median of {rounds})", ms(agent["median_wall"]) + " ms"),
        ("agent step overhead (wall / N)", ms(step) + " ms"),
        ("  per task hop (wall / (2N+1))", ms(agent["per_hop"]) + " ms"),
        ("ratio agent step / bare round trip", f"{step / bare['one']:8.2f} x"),
        ("ratio agent step / 3 bare round trips", f"{step / bare['three']:8.2f} x"),
        ("ratio agent step / chain of 3", f"{step / bare['chain3']:8.2f} x"),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'measure':<{width}}  {'value':>11}")
    print("-" * (width + 13))
    for name, value in rows:
        print(f"{name:<{width}}  {value:>11}")
    print("-" * (width + 13))
    verdict = "meets" if step <= TARGET_RATIO * bare["one"] else "misses"
    print(f"aim: agent step <= {TARGET_RATIO:g}x bare round trip ({TARGET_RATIO * bare['one'] * 1000:.2f} ms): "
          f"{verdict} it ({step / bare['one']:.2f}x)")
    cmds = agent["redis_cmds"]
    top = sorted(cmds.items(), key=lambda kv: -kv[1])[:int(os.environ.get("BENCH_TOP", "8"))]
    per = steps * rounds
    print(f"redis commands per agent step (whole server, incl. broker and watcher): "
          f"{agent['redis_cmds_per_step']:.1f}  [" + ", ".join(f"{k} {v / per:.1f}" for k, v in top) + "]")
    print(f"redis commands per bare round trip (incl. result backend): {bare['redis_cmds_per_rt']:.1f}")
    print(f"worker CPU (user+system, steadier than walls on a busy machine): {agent['cpu_per_step'] * 1000:.2f} ms per "
          f"agent step, {bare['cpu_per_rt'] * 1000:.2f} ms per bare round trip "
          f"({agent['cpu_per_step'] / max(bare['cpu_per_rt'], 1e-9):.2f}x)")
    print("session walls (ms): " + ", ".join(f"{w * 1000:.0f}" for w in agent["walls"]))


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10, help="tool rounds per session (N); default 10")
    ap.add_argument("--rounds", type=int, default=5, help="measured sessions (R); default 5")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (logs) for inspection")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.rounds < 1:
        ap.error("--steps and --rounds must be >= 1")

    # SIGTERM (e.g. from a CI timeout) cleans up like Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="mainsail-bench-"))
    procs = Procs()
    try:
        base = start_redis(procs, tmp)
        print(f"private redis at {base} (temp dir {tmp})", file=sys.stderr)
        print(f"agent phase: mainsail worker, 1 warm-up + {args.rounds} sessions of {args.steps} steps ...",
              file=sys.stderr)
        agent = run_agent_phase(procs, tmp, base, args.steps, args.rounds)
        print("bare phase: celery worker, no-op round trips ...", file=sys.stderr)
        bare = run_bare_phase(procs, tmp, base, args.rounds)
        report(args.steps, args.rounds, agent, bare)
        return 0
    except KeyboardInterrupt:
        print("interrupted; stopping processes", file=sys.stderr)
        return 130
    finally:
        procs.stop_all()
        if args.keep_tmp:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
