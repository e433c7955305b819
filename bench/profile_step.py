"""Where an agent step's time goes, without Celery: run the steps in this process.

    python bench/profile_step.py [--steps N] [--rounds R] [--sizes 100,2000] [--growth-api http|in-process]
                                 [--pyinstrument]

Starts a private redis-server, then runs sessions of ``scripted:read_loop:N``
by calling :func:`workflows.steps.run.run_one` in a loop as a worker serving the model and tools queues
does (each step runs the one its commit claimed next, a reply's quick calls run in its model step; the
"dispatch" callable appends to a local queue instead of sending Celery messages). It reports, per
agent step (model step + tool step), the wall time and Redis round trips of
each phase (claim, build request, model call, record, tool run, ...), the cost
of one ``send_task`` to the real broker, and, with ``--pyinstrument``, the
profile of the whole loop. It also prints the per-step time at ~100 and ~2,000
transcript entries and their ratio (bench/long_transcript.py; its model is the fake API in a process
of its own unless ``--growth-api in-process``). Compare with bench/step_overhead.py: what that
measures minus what this one does is Celery's transport and worker overhead.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench import long_transcript  # noqa: E402
from bench.step_overhead import BENCH_FILE_LINES, Procs, start_fake_api, start_redis  # noqa: E402
from workflows.models.options import SessionOptions

_tls = threading.local()
TIME: collections.Counter = collections.Counter()
CALLS: collections.Counter = collections.Counter()
RTT: collections.Counter = collections.Counter()
CMDS: collections.Counter = collections.Counter()


def _phase() -> str:
    stack = getattr(_tls, "stack", None)
    return stack[-1] if stack else "other"


def timed(name: str, fn):
    def wrapper(*a, **kw):
        stack = _tls.__dict__.setdefault("stack", [])
        stack.append(name)
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            TIME[name] += time.perf_counter() - t0
            CALLS[name] += 1
            stack.pop()
    wrapper.__wrapped__ = fn
    return wrapper


def instrument_redis() -> None:
    orig_cmd = redis.client.Redis.execute_command
    orig_exec = redis.client.Pipeline.execute

    def execute_command(self, *args, **kw):
        if not isinstance(self, redis.client.Pipeline):
            RTT[_phase()] += 1
            CMDS[str(args[0]).upper()] += 1
        return orig_cmd(self, *args, **kw)

    def execute(self, *a, **kw):
        RTT[_phase()] += 1
        CMDS[f"PIPELINE[{len(self.command_stack)}]"] += 1
        return orig_exec(self, *a, **kw)

    redis.client.Redis.execute_command = execute_command
    redis.client.Pipeline.execute = execute


def instrument_mainsail() -> None:
    import workflows.context.assemble
    import workflows.steps.model_call as call_mod
    import workflows.steps.run as steps_mod
    import workflows.steps.runners as runners_mod
    import workflows.steps.tool as tool_step_mod
    from workflows import tools
    from workflows.engine import Engine
    from workflows.model import client as model_client
    from workflows.store.redis_store import Store

    for name in ("claim", "record_model_reply", "record_tool_output", "submit", "create_session"):
        setattr(Engine, name, timed(f"engine.{name}", getattr(Engine, name)))
    Store.get_session = timed("store.get_session", Store.get_session)
    Store.entries = timed("store.entries (full transcript)", Store.entries)
    call_mod.build_request = timed("context.build_request", workflows.context.assemble.build_request)
    call_mod.client_for = timed("model_client.client_for", model_client.client_for)
    call_mod.stream_reply = timed("model_client.stream_reply (SDK, scripted)", model_client.stream_reply)
    tool_step_mod.run_tool = timed("tools.run_tool (Read)", tools.run_tool)
    steps_mod.Heartbeat.start = timed("Heartbeat thread start", steps_mod.Heartbeat.start)
    runners_mod.model_step = timed("model_step (total)", runners_mod.model_step)
    call_mod.run_quick = timed("tool_step.run_quick (its quick calls)", call_mod.run_quick)
    runners_mod.tool_step = timed("tool_step (total)", runners_mod.tool_step)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--sizes", default="100,2000", help="transcript lengths for the growth figure")
    ap.add_argument("--growth-steps", type=int, default=30, help="agent steps timed at each length")
    ap.add_argument("--growth-api", choices=("http", "in-process"), default="http",
                    help="the growth figure's model: the fake API in its own process (as a real API is remote), "
                         "or the scripted API in this process (earlier rows of bench/README.md)")
    ap.add_argument("--pyinstrument", action="store_true", help="also profile the loop (pip install pyinstrument)")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="mainsail-profile-"))
    procs = Procs()
    try:
        base = start_redis(procs, tmp)
        url = base + "/0"
        os.environ["MAINSAIL_REDIS_URL"] = url
        os.environ["MAINSAIL_DATA_DIR"] = str(tmp / "data")
        import workflows.steps.run as steps_mod
        from tasks import runtime
        from tasks.app import app, configure
        from tasks.dispatch import dispatch as celery_dispatch
        from workflows.settings import load_settings

        configure(url)
        engine = runtime.engine(load_settings(redis_url=url))
        from tasks.worker import settle_heap

        settle_heap()  # (as a worker does once ready: its start-up heap frozen, the collector's thresholds)
        ws = tmp / "workspace"
        ws.mkdir()
        (ws / "bench.txt").write_text(BENCH_FILE_LINES)
        model = f"scripted:read_loop:{args.steps}"

        def session() -> float:
            """One session, its steps run as a worker serving model and tools runs them: each runs the
            step that follows it (claimed by its commit) and a reply's quick calls itself."""
            rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
            queue = collections.deque()
            t0 = time.perf_counter()
            queue.extend(engine.submit(rec.id, "go"))
            while queue:
                step, claimed = queue.popleft(), None
                sid, step_id = step.session_id, step.id
                while True:
                    _, claimed = steps_mod.run_one(engine, sid, step_id, queue.extend, worker=long_transcript.WORKER,
                                                   keep=long_transcript.serves, claimed=claimed)
                    if claimed is None:
                        break
                    sid, step_id = claimed[0].session_id, claimed[0].id
            return time.perf_counter() - t0

        session()  # warm-up
        plain = [session() for _ in range(args.rounds)]
        sizes = tuple(int(n) for n in args.sizes.split(","))
        api_url = None
        if args.growth_api == "http":
            # (its last request only: 1,000 kept bodies of ~800 KB parsed made its collector's work, on
            # these 2 cores, land on Mainsail's figure: 1.17-1.32x against 1.07-1.13x keeping one)
            api_url = start_fake_api(procs, tmp, long_transcript.turns_for(max(sizes)) + args.growth_steps + 2,
                                     keep_requests=1)
            engine.settings.anthropic_base_url, engine.settings.anthropic_api_key = api_url, "bench-key"
        long_transcript.report(engine, str(ws), BENCH_FILE_LINES, sizes, args.growth_steps, api_url)

        instrument_redis()
        instrument_mainsail()
        TIME.clear(), CALLS.clear(), RTT.clear(), CMDS.clear()
        inst = [session() for _ in range(args.rounds)]
        n_steps = args.steps * args.rounds

        print(f"\nin-process steps, no Celery: read_loop:{args.steps}, {args.rounds} sessions")
        print(f"  per agent step (model+tool), uninstrumented: {statistics.median(plain) / args.steps * 1000:.2f} ms"
              f"   instrumented: {statistics.median(inst) / args.steps * 1000:.2f} ms")
        print(f"\n  {'phase (inclusive; per agent step)':<46} {'ms':>7} {'calls':>6} {'redis RTs':>9}")
        print("  (ms inclusive of nested phases; redis round trips counted in the innermost phase only)")
        for name, t in sorted(TIME.items(), key=lambda kv: -kv[1]):
            print(f"  {name:<46} {t / n_steps * 1000:7.2f} {CALLS[name] / n_steps:6.1f} "
                  f"{RTT.get(name, 0) / n_steps:9.1f}")
        print(f"  {'redis round trips outside those phases':<46} {'':7} {'':6} {RTT.get('other', 0) / n_steps:9.1f}")
        print(f"  total redis round trips per agent step: {sum(RTT.values()) / n_steps:.1f} (store client)")
        print("  by command: " + ", ".join(f"{k} {v / n_steps:.1f}" for k, v in CMDS.most_common(12)))

        # send_task to the real broker (no consumer: the queue is deleted afterwards).
        from workflows.models import StepKind, StepRecord

        fake = [StepRecord(id=f"s{i}", session_id="bench", kind=StepKind.MODEL, epoch=0, queue="bench-sink")
                for i in range(1)]
        celery_dispatch(fake)  # connect
        sends = []
        before = sum(RTT.values())
        for _ in range(200):
            t0 = time.perf_counter()
            celery_dispatch(fake)
            sends.append(time.perf_counter() - t0)
        with app.connection_for_write() as conn:
            conn.default_channel.client.delete("mainsail-celery:bench-sink")
        send_ms = statistics.median(sends) * 1000

        print(f"\n  one send_task to the broker (tasks.dispatch.dispatch of 1 step): {send_ms:.2f} ms median "
              f"({(sum(RTT.values()) - before) / 200:.0f} redis round trip(s) each)")

        if args.pyinstrument:
            from pyinstrument import Profiler

            prof = Profiler(interval=0.0002)
            prof.start()
            for _ in range(args.rounds):
                session()
            prof.stop()
            print(prof.output_text(unicode=False, color=False, show_all=False))
        return 0
    finally:
        procs.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
