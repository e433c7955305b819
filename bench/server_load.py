"""The team server under load: many live watchers of one session, and a long session list.

    python bench/server_load.py [--watchers 200] [--turns 40] [--sessions 1000] [--requests 30]

1. Starts a private ``redis-server`` (no persistence), the fake Messages API in a process of its own
   (``python -m tests.fakeapi``), a ``mainsail worker`` and ``mainsail serve --no-worker`` (log level
   warning: no access log lines).
2. **Watchers.** Opens ``--watchers`` Server-Sent Events streams (``GET /api/sessions/{id}/events``,
   no deltas) on one session from this process (asyncio + httpx), then sends it a prompt whose reply
   runs ``--turns`` Read calls (the model answers each after 0.2 s), so the session writes entries
   steadily. For every entry each watcher receives, the latency is the receive time less the
   entry's commit time (its stream id is Redis's clock in ms; same machine, same clock). Prints
   p50/p95/max over all (watcher, entry) pairs, entries missed by any watcher, the serve process's
   CPU over the phase and its peak RSS, and Redis's connected clients (peak).
3. **Listing.** Seeds ``--sessions`` session records (each with a first prompt) directly through the
   engine and times ``GET /api/sessions?limit=N`` ``--requests`` times (p50/p95), ``limit=50`` for
   comparison, and two searches (``q``): one nothing matches (every record and first prompt read)
   and one only the last prompt matches.

The watchers' own process also parses 200 streams: its CPU is printed, since a saturated client
adds to the latencies it measures. Exit status 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.step_overhead import Procs, child_env, free_port, process_cpu, start_redis
from demo.scripted import Script, ToolUse, Turn
from workflows.models.options import SessionOptions
from workflows.store.api_tokens import TokenStore

PROMPT = "steady"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def wait_http(url: str, proc, procs: Procs, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        procs.check(proc)
        try:
            if httpx.get(url, timeout=5).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout:g}s")
        time.sleep(0.2)


# --------------------------------------------------------------------------- processes


def start_stack(procs: Procs, tmp: Path, redis_url: str, turns: int) -> tuple[str, int, dict]:
    """Fake API, worker and server; returns (server URL, serve pid, env)."""
    script = Script(turns=[Turn(text=f"Step {i}.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})],
                                delay_seconds=0.2) for i in range(turns)] + [Turn(text="Steady done.")])
    (tmp / "script.json").write_text(script.model_dump_json())
    api_port, port = free_port(), free_port()
    env = child_env(tmp, MAINSAIL_REDIS_URL=redis_url + "/0", MAINSAIL_EMBEDDED_WORKER="false",
                    ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{api_port}",
                    MAINSAIL_AUTO_MEMORY="false", PYTHONUNBUFFERED="1")
    fake = procs.start("fake-api", [sys.executable, "-m", "tests.fakeapi", "--port", str(api_port), "--script",
                                    str(tmp / "script.json")], env=env, cwd=ROOT, log=tmp / "fakeapi.log")
    wait_http(f"http://127.0.0.1:{api_port}/_health", fake, procs)
    mainsail = shutil.which("mainsail") or sys.exit("the mainsail command is not installed (pip install -e .)")
    worker = procs.start("mainsail worker", [mainsail, "worker"], env=env, log=tmp / "worker.log")
    serve = procs.start("mainsail serve", [mainsail, "serve", "--no-worker", "--port", str(port), "--log-level",
                                           "warning"], env=env, log=tmp / "serve.log")
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/api/openapi.json", serve, procs)
    r = redis.Redis.from_url(redis_url + "/0")
    deadline = time.monotonic() + 60
    while not r.zrangebyscore("mainsail:workers", time.time(), "+inf"):
        procs.check(worker)
        if time.monotonic() > deadline:
            raise RuntimeError("the worker did not register")
        time.sleep(0.2)
    return url, serve.pid, env


# --------------------------------------------------------------------------- watchers


async def watch(client: httpx.AsyncClient, sid: str, connected: asyncio.Event, ready: list, got: dict) -> None:
    """One watcher: records (event id -> receive time) until the session's final result arrives."""
    async with client.stream("GET", f"/api/sessions/{sid}/events", params={"deltas": "false"}) as resp:
        resp.raise_for_status()
        ready.append(1)
        if len(ready) == got["watchers"]:
            connected.set()
        mine: dict[str, float] = {}
        got["per"].append(mine)
        eid = None
        async for line in resp.aiter_lines():
            if line.startswith("id: "):
                eid = line[4:]
            elif line.startswith("data: ") and eid:
                mine[eid] = time.time()
                if '"type":"result"' in line:
                    return
                eid = None


async def watchers_phase(url: str, token: str, n: int, serve_pid: int, r: redis.Redis, ws: Path) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=httpx.Timeout(300)) as client:
        resp = await client.post("/api/sessions", json={"workspace": str(ws)})
        resp.raise_for_status()
        sid = resp.json()["id"]
        connected, ready, got = asyncio.Event(), [], {"watchers": n, "per": []}
        tasks = [asyncio.create_task(watch(client, sid, connected, ready, got)) for _ in range(n)]
        await asyncio.wait_for(connected.wait(), 120)
        peak_rss, peak_clients = rss_mb(serve_pid), 0
        cpu0, mine0, t0 = process_cpu(serve_pid), time.process_time(), time.monotonic()
        (await client.post(f"/api/sessions/{sid}/messages", json={"message": PROMPT})).raise_for_status()
        while not all(t.done() for t in tasks):
            peak_rss = max(peak_rss, rss_mb(serve_pid))
            peak_clients = max(peak_clients, int(r.info("clients")["connected_clients"]))
            await asyncio.sleep(0.25)
            if time.monotonic() - t0 > 600:
                raise RuntimeError("the watched session did not finish in 600 s")
        for t in tasks:
            t.result()
        wall = time.monotonic() - t0
        cpu, mine = process_cpu(serve_pid) - cpu0, time.process_time() - mine0
    ids = []
    for row, fields in r.xrange(f"mainsail:session:{sid}:log"):
        row = row.decode()
        n_entries = sum(1 for k in fields if k.decode().startswith("entry"))
        ids += [f"{row}.{i}" for i in range(n_entries - 1)] + [row]
    latencies, missed, by_entry = [], 0, {eid: [] for eid in ids}
    for mine_ids in got["per"]:
        for eid in ids:
            if eid in mine_ids:
                latencies.append(mine_ids[eid] - int(eid.split("-")[0]) / 1000)
                by_entry[eid].append(latencies[-1])
            else:
                missed += 1
    tenth = max(1, len(ids) // 10)
    trend = [percentile([v for e in ids[i:i + tenth] for v in by_entry[e]], 50) for i in range(0, len(ids), tenth)]
    return {"entries": len(ids), "latencies": latencies, "missed": missed, "wall": wall, "cpu": cpu, "trend": trend,
            "client_cpu": mine, "rss": peak_rss, "clients": peak_clients}


# --------------------------------------------------------------------------- listing


def seed_sessions(redis_url: str, tmp: Path, count: int) -> None:
    from workflows.engine import Engine
    from workflows.settings import load_settings
    from workflows.store.redis_store import Store

    ws = tmp / "seeded"
    ws.mkdir()
    from workflows.models.content import Message
    from workflows.models.entries import UserEntry

    engine = Engine(Store(redis.Redis.from_url(redis_url + "/0")), load_settings(data_dir=tmp / "data"))
    for i in range(count):
        rec = engine.create_session(str(ws), SessionOptions(model="claude-sonnet-4-5" if i % 2 else "claude-haiku-4-5"))
        with engine.store.pipeline() as pipe:  # a first prompt, for the search (q) to read
            engine.store.append(rec.id, [UserEntry(session_id=rec.id, message=Message(
                role="user", content=f"seeded prompt number {i}: fix the failing test"))], pipe)
            pipe.execute()


def listing_phase(url: str, token: str, limit: int, requests: int, q: str | None = None,
                  rows: int | None = None) -> list[float]:
    """Walls of ``GET /api/sessions?limit=LIMIT[&q=Q]``, each answering ``rows`` sessions (default ``limit``)."""
    walls, params = [], {"limit": limit, **({"q": q} if q else {})}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
        client.get("/api/sessions", params=params).raise_for_status()  # warm-up
        for _ in range(requests):
            t0 = time.perf_counter()
            resp = client.get("/api/sessions", params=params)
            walls.append(time.perf_counter() - t0)
            resp.raise_for_status()
            assert len(resp.json()) == (limit if rows is None else rows), len(resp.json())
    return walls


# --------------------------------------------------------------------------- report


def ms(v: float) -> str:
    return f"{v * 1000:.0f} ms" if v >= 0.1 else f"{v * 1000:.1f} ms"


def report(args, w: dict, lists: dict[str, list[float]]) -> None:
    lat = w["latencies"]
    print(f"\n== {args.watchers} SSE watchers on one session ({w['entries']} entries in {w['wall']:.1f} s) ==")
    print(f"commit -> watcher latency: p50 {ms(percentile(lat, 50))}, p95 {ms(percentile(lat, 95))}, "
          f"max {ms(max(lat))} over {len(lat)} deliveries; missed {w['missed']}")
    print("p50 by tenth of the session (first to last): " + ", ".join(ms(v) for v in w["trend"]))
    print(f"serve process: CPU {w['cpu']:.1f} s ({w['cpu'] / w['wall'] * 100:.0f}% of one core), peak RSS "
          f"{w['rss']:.0f} MB; Redis connected clients (peak, all processes) {w['clients']}; "
          f"the watchers' own process CPU {w['client_cpu']:.1f} s")
    print(f"\n== listing, {args.sessions} sessions seeded ==")
    for query, walls in lists.items():
        print(f"GET /api/sessions?{query}: p50 {ms(percentile(walls, 50))}, p95 {ms(percentile(walls, 95))}, "
              f"max {ms(max(walls))} over {len(walls)} requests")
    print("\nload average: " + " ".join(Path("/proc/loadavg").read_text().split()[:3]))


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--watchers", type=int, default=200)
    ap.add_argument("--turns", type=int, default=40, help="Read calls of the watched reply (default 40)")
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=30)
    ap.add_argument("--keep-tmp", action="store_true")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="mainsail-bench-server-"))
    procs = Procs()
    ws = tmp / "ws"
    try:
        ws.mkdir()
        (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        redis_url = start_redis(procs, tmp)
        url, serve_pid, _ = start_stack(procs, tmp, redis_url, args.turns)
        r = redis.Redis.from_url(redis_url + "/0")
        token, _ = TokenStore(r).create("bench")
        print(f"server {url}, redis {redis_url}; {args.watchers} watchers ...", file=sys.stderr)
        w = asyncio.run(watchers_phase(url, token, args.watchers, serve_pid, r, ws))
        print(f"seeding {args.sessions} sessions ...", file=sys.stderr)
        seed_sessions(redis_url, tmp, args.sessions)
        lists = {f"limit={limit}": listing_phase(url, token, limit, args.requests) for limit in (args.sessions, 50)}
        # a search no title, id or prompt matches: every record and every first prompt read (the worst case)
        lists["limit=50&q=nothing-matches"] = listing_phase(url, token, 50, args.requests, "nothing-matches", 0)
        lists[f"limit=50&q=number {args.sessions - 1}:"] = listing_phase(url, token, 50, args.requests,
                                                                        f"number {args.sessions - 1}:", 1)
        report(args, w, lists)
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
