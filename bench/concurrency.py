"""Concurrency: many live sessions on real workers, each waiting on a slow model.

    python bench/concurrency.py [--sessions 50,200,1000] [--calls 5] [--latency 1.0]
                                [--workers 2] [--concurrency 100] [--pool threads] [--prefetch 1]

One run per value of ``--sessions``:

1. starts a private ``redis-server`` (no persistence) on a free port, a fake Messages API in a
   process of its own (asyncio: thousands of connections, each reply held ``--latency`` seconds
   before its headers) and ``--workers`` ``mainsail worker -Q model`` processes;
2. creates N sessions, then submits them all. Each session makes ``--calls`` model calls: the
   first ``calls - 1`` replies ask for TodoWrite (applied inline where the reply is committed, so
   no tools worker is involved) and the last one answers. Every step is a model step;
3. waits until every session has its result (or ``--timeout``) and prints, per N:
   the wall from the first submit to the last result against the ideal (``calls * latency`` when
   every session runs at once; ``calls * latency * N / slots`` when the workers' slots are fewer),
   model steps per second, CPU per step (the workers' user + system CPU over the steps), Redis
   memory, duplicate model calls (a (session, turn) asked of the API more than once: a model call
   paid twice) and the sessions not finished.

Exit status is 0 whatever the figures: a benchmark reports, it does not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from bench.step_overhead import Procs, child_env, free_port, process_cpu, start_redis  # noqa: E402
from workflows.models.options import SessionOptions
from workflows.store.redis_store import stream_entries  # noqa: E402

PROMPT = "Session {i}: plan the work."
SESSION_TAG = re.compile(rb"Session (\d+): plan the work")
#: In the workers' logs: a Redis call that failed (e.g. MaxConnectionsError), and steps sent again.
REDIS_ERROR = re.compile(r"Redis error|MaxConnectionsError|Too many connections|cannot reach Redis")
RESENT = re.compile(r"re-dispatched (\d+) step")
TODOS = [{"content": "Plan the work", "status": "in_progress", "activeForm": "Planning the work"}]


# --------------------------------------------------------------------------- the slow model


class SlowApi:
    """A minimal HTTP/1.1 Messages API on asyncio: each reply waits ``latency`` before its headers.

    ``GET /_counts`` returns ``{"requests": n, "by_turn": {"<session no>|<turn>": count}}``.
    """

    def __init__(self, calls: int, latency: float) -> None:
        from demo.scripted import Script, ScriptedMessagesAPI, ToolUse, Turn

        todo = Turn(tool_uses=[ToolUse(name="TodoWrite", input={"todos": TODOS})], delay_seconds=latency)
        turns = [todo] * (calls - 1) + [Turn(text="Planned.", delay_seconds=latency)]
        self.api = ScriptedMessagesAPI(Script(turns=turns))
        self.counts: Counter[str] = Counter()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *fields = head.decode("latin-1").split("\r\n")
                method, path, _ = line.split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields if f)}
                raw = await reader.readexactly(int(headers.get("content-length") or 0))
                if path.startswith("/_counts"):
                    data = json.dumps({"requests": sum(self.counts.values()), "by_turn": self.counts}).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                                 % (len(data), data))
                    await writer.drain()
                    continue
                if path.split("?")[0].endswith("/v1/messages"):
                    session = SESSION_TAG.search(raw)
                    turn = self.api.turn_index(json.loads(raw or b"{}"))
                    self.counts[f"{session.group(1).decode() if session else '?'}|{turn}"] += 1
                reply = self.api.handle(method, path, raw)
                if reply.head_delay:
                    await asyncio.sleep(reply.head_delay)
                status = f"HTTP/1.1 {reply.status} X\r\n"
                extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items())
                payload = b"".join(reply.chunks)
                writer.write(f"{status}{extra}content-length: {len(payload)}\r\n\r\n".encode() + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def serve(self, port: int) -> None:
        server = await asyncio.start_server(self.handle, "127.0.0.1", port, backlog=4096, limit=2 ** 24)
        print(f"LISTENING http://127.0.0.1:{port}", flush=True)
        async with server:
            await server.serve_forever()


def api_counts(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{url}/_counts", timeout=30) as r:
        return json.load(r)


# --------------------------------------------------------------------------- one run


@dataclass
class Config:
    sessions: int
    calls: int = 5
    latency: float = 1.0
    workers: int = 1
    concurrency: int | None = None  # None: the worker's default for -Q model
    processes: int | None = None  # per worker; None: the worker's default for -Q model
    pool: str | None = None
    prefetch: int | None = None
    timeout: float = 300.0


@dataclass
class Result:
    cfg: Config
    wall: float
    submit_wall: float
    steps: int
    cpu: float
    redis_memory: int
    requests: int
    duplicates: int
    unfinished: int
    redis_errors: int
    reaped: int
    other_cpu: dict  # CPU seconds of the rest over the run: redis-server, the slow API, this driver


def run_one(cfg: Config, tmp: Path, say=print) -> Result:
    procs = Procs()
    try:
        base = start_redis(procs, tmp)
        url = base + "/0"
        api_port = free_port()
        api = procs.start("slow api", [sys.executable, __file__, "--serve-api", str(api_port), "--calls",
                                       str(cfg.calls), "--latency", str(cfg.latency)],
                          env=child_env(tmp), cwd=ROOT, log=tmp / "api.log")
        api_url = f"http://127.0.0.1:{api_port}"
        wait_for(lambda: "LISTENING" in (tmp / "api.log").read_text(), procs, api, "the slow API")
        return _measure(cfg, tmp, procs, url, api_url, say)
    finally:
        procs.stop_all()


def wait_for(ready, procs: Procs, p: subprocess.Popen, what: str, timeout: float = 60.0, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        procs.check(p)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {timeout:g}s")
        time.sleep(poll)


def _measure(cfg: Config, tmp: Path, procs: Procs, url: str, api_url: str, say) -> Result:
    from tasks import runtime
    from tasks.app import configure
    from tasks.dispatch import dispatch
    from workflows.settings import load_settings

    settings = load_settings(redis_url=url, auto_memory=False, session_memory=False, data_dir=tmp / "data")
    configure(url)
    engine = runtime.engine(settings)
    store = engine.store
    env = child_env(tmp, MAINSAIL_REDIS_URL=url, ANTHROPIC_BASE_URL=api_url, ANTHROPIC_API_KEY="bench",
                    MAINSAIL_AUTO_MEMORY="false", MAINSAIL_SESSION_MEMORY="false", PYTHONUNBUFFERED="1")
    ws = tmp / "ws"
    ws.mkdir()
    sids = [engine.create_session(str(ws), SessionOptions(permission_mode="bypassPermissions")).id for _ in range(cfg.sessions)]
    # Submitted before the workers start, so the driver's own work does not compete with them for the
    # CPU: the clock starts once every worker has registered (its consumer runs), all N sessions waiting.
    t0 = time.monotonic()
    for i, sid in enumerate(sids):
        dispatch(engine.submit(sid, PROMPT.format(i=i)))
    submit_wall = time.monotonic() - t0
    say(f"N={cfg.sessions}: {len(sids)} sessions submitted in {submit_wall:.1f}s; starting the workers")
    mainsail = shutil.which("mainsail") or "mainsail"
    argv = [mainsail, "worker", "-Q", "model", "-l", "WARNING"]
    argv += ["-c", str(cfg.concurrency)] if cfg.concurrency else []
    argv += ["--processes", str(cfg.processes)] if cfg.processes else []
    argv += ["--pool", cfg.pool] if cfg.pool else []
    argv += ["--prefetch-multiplier", str(cfg.prefetch)] if cfg.prefetch else []
    workers = [procs.start(f"worker-{i}", argv, env=env, cwd=ROOT, log=tmp / f"worker-{i}.log")
               for i in range(cfg.workers)]
    live = lambda: len(store.workers.live()) >= cfg.workers * shape(cfg).processes  # noqa: E731
    for w in workers:
        wait_for(live, procs, w, "the workers", poll=0.02)
    t0 = time.monotonic()
    others = {name: p.pid for name, p, _ in procs.procs if name in ("redis-server", "slow api")}
    cpu0 = sum(process_cpu(w.pid) for w in workers)
    others0 = {name: process_cpu(pid) for name, pid in others.items()}
    driver0 = time.process_time()
    pending = set(sids)
    last = t0
    while pending and time.monotonic() - t0 < cfg.timeout:
        for w in workers:
            procs.check(w)
        order = list(pending)
        p = store.r.pipeline(transaction=False)
        for sid in order:
            p.xrevrange(f"mainsail:session:{sid}:log", count=1)
        for sid, rows in zip(order, p.execute()):
            if rows and b'"type":"result"' in stream_entries(rows[0][1])[-1].replace(b" ", b""):
                pending.discard(sid)
                last = time.monotonic()
        time.sleep(0.2)
    wall = last - t0
    cpu = sum(process_cpu(w.pid) for w in workers) - cpu0
    other_cpu = {name: process_cpu(pid) - others0[name] for name, pid in others.items()}
    other_cpu["driver"] = time.process_time() - driver0
    memory = int(store.r.info("memory")["used_memory"])
    counts = api_counts(api_url)
    by_turn = counts["by_turn"]
    logs = "".join((tmp / f"worker-{i}.log").read_text(errors="replace") for i in range(cfg.workers))
    return Result(cfg=cfg, wall=wall, submit_wall=submit_wall, steps=counts["requests"], cpu=cpu,
                  redis_memory=memory, requests=counts["requests"], other_cpu=other_cpu,
                  duplicates=sum(n - 1 for n in by_turn.values() if n > 1), unfinished=len(pending),
                  redis_errors=len(REDIS_ERROR.findall(logs)), reaped=sum(int(n) for n in RESENT.findall(logs)))


# --------------------------------------------------------------------------- report


def shape(cfg: Config):
    """The workers' shape: the options given, the rest ``mainsail worker -Q model``'s defaults here."""
    from cli.worker import WorkerShape, defaults_for

    d = defaults_for(["model"])
    return WorkerShape(cfg.pool or d.pool, cfg.concurrency or d.concurrency, cfg.processes or d.processes,
                       cfg.prefetch or d.prefetch)


def worker_options(cfg: Config) -> str:
    given = " ".join(f"{k} {v}" for k, v in (("--pool", cfg.pool), ("-c", cfg.concurrency), ("--processes", cfg.processes),
                                             ("--prefetch-multiplier", cfg.prefetch)) if v)
    s = shape(cfg)
    return (f"{given or '(defaults)'}: {s.processes} process(es) x {s.concurrency} {s.pool}, "
            f"prefetch x{s.prefetch}")


def ideal(cfg: Config) -> float:
    s = shape(cfg)
    slots = cfg.workers * s.processes * s.concurrency
    return cfg.calls * cfg.latency * max(1.0, cfg.sessions / slots)


def render(results: list[Result]) -> str:
    head = (f"{'N':>6} {'wall s':>8} {'ideal s':>8} {'wall/ideal':>10} {'steps/s':>8} {'CPU ms/step':>11} "
            f"{'redis MB':>9} {'dup calls':>9} {'unfinished':>10} {'redis errs':>10} {'re-sent':>7}")
    lines = [head, "-" * len(head)]
    for r in results:
        i = ideal(r.cfg)
        lines.append(f"{r.cfg.sessions:>6} {r.wall:>8.1f} {i:>8.1f} {r.wall / i:>10.2f} "
                     f"{r.steps / max(r.wall, 1e-9):>8.1f} {1000 * r.cpu / max(r.steps, 1):>11.1f} "
                     f"{r.redis_memory / 2 ** 20:>9.1f} {r.duplicates:>9} {r.unfinished:>10} "
                     f"{r.redis_errors:>10} {r.reaped:>7}")
    for r in results:
        cores = os.cpu_count() or 1
        used = r.cpu + sum(r.other_cpu.values())
        lines.append(f"N={r.cfg.sessions}: CPU over the {r.wall:.1f} s ({cores} cores: {cores * r.wall:.1f} s to share, "
                     f"with whatever else runs here): workers {r.cpu:.1f} s, "
                     + ", ".join(f"{k} {v:.1f} s" for k, v in r.other_cpu.items())
                     + f"; {used:.1f} s in all ({used / max(cores * r.wall, 1e-9):.0%} of the cores)")
        floor = used / cores
        bound = "CPU-bound" if floor > ideal(r.cfg) else "not CPU-bound"
        lines.append(f"  floor: that CPU on {cores} otherwise idle cores takes {floor:.1f} s against the {ideal(r.cfg):.1f} s "
                     f"ideal: {bound}; the workers' {1000 * r.cpu / max(r.steps, 1):.1f} ms per step is their share "
                     "(bench/profile_step.py splits a step: SDK, fake API, Mainsail)")
    c = results[0].cfg
    lines.append(f"workers: {c.workers} x `mainsail worker -Q model` {worker_options(c)}; {c.calls} model "
                 f"calls per session, {c.latency:g} s each; wall from the workers' start (sessions submitted before); "
                 "ideal = calls x latency x max(1, N / slots); CPU = the workers' user+system; redis errs = Redis "
                 "calls that failed (workers' logs); re-sent = steps the reaper sent again")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", default="50,200", help="comma-separated N values (default 50,200)")
    ap.add_argument("--calls", type=int, default=5, help="model calls per session (default 5)")
    ap.add_argument("--latency", type=float, default=1.0, help="seconds per model call (default 1)")
    ap.add_argument("--workers", type=int, default=1, help="`mainsail worker -Q model` commands (default 1)")
    ap.add_argument("--concurrency", type=int, help="threads per process (default: the worker's own for -Q model)")
    ap.add_argument("--processes", type=int, help="processes per worker (default: the worker's own for -Q model)")
    ap.add_argument("--pool", help="threads, gevent, ... (default: the worker's own for -Q model)")
    ap.add_argument("--prefetch", type=int, help="--prefetch-multiplier of the workers (default: theirs)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per N")
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--serve-api", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve_api:
        asyncio.run(SlowApi(args.calls, args.latency).serve(args.serve_api))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    results = []
    for n in [int(x) for x in args.sessions.split(",") if x.strip()]:
        cfg = Config(sessions=n, calls=args.calls, latency=args.latency, workers=args.workers,
                     concurrency=args.concurrency, processes=args.processes, pool=args.pool, prefetch=args.prefetch,
                     timeout=args.timeout)
        tmp = Path(tempfile.mkdtemp(prefix="mainsail-conc-"))
        try:
            results.append(run_one(cfg, tmp, say=lambda m: print(m, file=sys.stderr, flush=True)))
            print(render(results[-1:]), flush=True)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            break
        except Exception as exc:  # report and go on with the next N
            print(f"N={n}: run failed: {exc}", file=sys.stderr)
        finally:
            if args.keep_tmp:
                print(f"kept {tmp}", file=sys.stderr)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    if results:
        print()
        print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
