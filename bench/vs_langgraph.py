"""Mainsail against LangGraph with its Postgres (and SQLite) checkpointer, per agent step.

    pip install -e '.[bench]'
    python bench/vs_langgraph.py [--steps N] [--rounds R] [--pg-url URL]

The same scenario on every side: a scripted Read loop (N turns that each Read
``bench.txt``, then an end_turn; ``demo.scripted.read_loop``) served by one
fake Messages API over real HTTP (``python -m tests.fakeapi``, a subprocess of
its own), reached with the real anthropic SDK streaming, with zero model latency.

- Mainsail: a private ``redis-server``, a ``mainsail worker`` process (its
  defaults), and ``mainsail run -p --output-format json`` per session (a new
  session each round, no auto-memory, no session-memory fork unless
  ``--session-memory``: the graph keeps no memory). Per step is the run's own
  ``duration_ms`` (submit to result, as recorded by the engine) / N; the wall of
  the whole command, Python start-up included, is shown too.
- LangGraph: a minimal agent graph, model node (anthropic SDK) -> tool node
  (reads the file, ``cat -n`` style like Mainsail's Read) -> model node, compiled
  with ``PostgresSaver`` (a database this run creates and drops) or
  ``SqliteSaver`` (a file), invoked with ``durability="sync"``, one thread id per
  session. Per step is the ``invoke`` wall / N. Each model call sends what
  Mainsail's calls send besides the messages (Claude Code's system prompt and
  its tool schemas, ~27 KB, read back from the fake API after Mainsail's
  warm-up session), so that the fake API parses the same bytes for both: on
  this 2-core machine its parsing is on the step's path, where a real API's is
  not. ``--minimal-request`` sends the Read tool alone (earlier runs' setting).

One warm-up session per side, then R rounds, the sides interleaved in each
round so that load from elsewhere falls on all of them; medians are printed,
and the ratio Mainsail / LangGraph+Postgres on a line that says so (the aim of
issue 15 is <= 0.6). A fourth side, the same graph with no checkpointer, is
the floor every side pays (the SDK calls to the fake API and the file reads);
what each side adds above it is printed too. Exit status is 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Annotated, Callable, TypedDict

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.step_overhead import (  # noqa: E402
    BENCH_FILE_LINES,
    Procs,
    child_env,
    redis_command_stats,
    start_fake_api,
    start_redis,
)

TARGET_RATIO = 0.6
PROMPT = "Read bench.txt {n} times."
MODEL = "claude-sonnet-4-5"
READ_TOOL = {
    "name": "Read",
    "description": "Reads a file from the local filesystem.",
    "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
}


# --------------------------------------------------------------------------- the fake API


# --------------------------------------------------------------------------- Mainsail


class MainsailSide:
    """A ``mainsail worker`` process; :meth:`session` runs one ``mainsail run -p`` and times it."""

    def __init__(self, procs: Procs, tmp: Path, api_url: str, steps: int, session_memory: bool = False) -> None:
        self.steps = steps
        self.workspace = tmp / "workspace"
        self.redis_url = start_redis(procs, tmp) + "/0"
        self.env = child_env(tmp, MAINSAIL_REDIS_URL=self.redis_url, MAINSAIL_LOCAL_REDIS_URL=self.redis_url,
                             MAINSAIL_EMBEDDED_WORKER="false", ANTHROPIC_BASE_URL=api_url,
                             ANTHROPIC_API_KEY="bench-key", HOME=str(tmp / "home"),
                             # Like for like: the graph keeps no memory, so neither auto-memory (run's
                             # --no-memory) nor the session-memory fork (a second model call in the
                             # background from ~10k context tokens) run unless --session-memory.
                             MAINSAIL_SESSION_MEMORY="true" if session_memory else "false")
        (tmp / "home").mkdir()
        self.mainsail = shutil.which("mainsail") or "mainsail"
        self.worker = procs.start("mainsail worker", [self.mainsail, "worker", "-l", "WARNING"], env=self.env,
                                  cwd=ROOT, log=tmp / "mainsail-worker.log")
        self._wait_registered(procs)
        self.commands = 0

    def _wait_registered(self, procs: Procs) -> None:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        deadline = time.monotonic() + 60
        while not client.zrangebyscore("mainsail:workers", time.time(), "+inf"):
            procs.check(self.worker)
            if time.monotonic() > deadline:
                raise RuntimeError("the mainsail worker did not register within 60s")
            time.sleep(0.1)
        client.close()

    def session(self) -> tuple[float, float]:
        """One session: (duration_ms / N, command wall / N), in seconds."""
        import redis

        stats = redis.Redis.from_url(self.redis_url)
        before = sum(redis_command_stats(stats).values())
        t0 = time.perf_counter()
        out = subprocess.run(
            [self.mainsail, "run", "-p", "--output-format", "json", "--no-memory", "--model", MODEL,
             "--permission-mode", "bypassPermissions", PROMPT.format(n=self.steps)],
            cwd=self.workspace, env=self.env, capture_output=True, text=True, timeout=300)
        wall = time.perf_counter() - t0
        self.commands += sum(redis_command_stats(stats).values()) - before - 1  # less our own INFO
        stats.close()
        if out.returncode != 0:
            raise RuntimeError(f"mainsail run exited {out.returncode}: {out.stderr[-2000:]}")
        result = json.loads(out.stdout)
        if result.get("is_error") or result.get("num_turns") != self.steps + 1:
            raise RuntimeError(f"the Mainsail session ended badly: {result}")
        return result["duration_ms"] / 1000 / self.steps, wall / self.steps


# --------------------------------------------------------------------------- LangGraph

#: ``--minimal-request``: the graph sends the Read tool alone, no system prompt (earlier runs' setting).
MINIMAL_REQUEST = {"max_tokens": 1024, "tools": [READ_TOOL]}


def same_request(api_url: str) -> dict:
    """What Mainsail's first call of its warm-up session sent besides the messages (its system prompt,
    its tool schemas, max_tokens), read back from the fake API: the graph then sends the same request,
    so that the fake API parses, and the SDK carries, the same bytes on every side."""
    import httpx

    for body in httpx.get(f"{api_url}/_requests", timeout=10).json():
        first = body.get("messages") or [{}]
        if len(first) == 1 and PROMPT.split("{")[0] in json.dumps(first[0].get("content")):
            return {k: body[k] for k in ("system", "tools", "max_tokens") if k in body}
    raise RuntimeError("the fake API recorded no first request of the Mainsail warm-up session")


class AgentState(TypedDict):
    messages: Annotated[list, operator.add]


def _param(block) -> dict:
    """An SDK content block as the request param the next call sends back."""
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return {"type": "text", "text": block.text}


def agent_graph(client, workspace: Path, request: dict):
    """model -> (tool_use ? tools -> model : end): the smallest agent loop LangGraph offers. ``request``:
    what each model call sends besides the messages (tools, system prompt, max_tokens)."""
    from langgraph.graph import END, START, StateGraph

    def model(state: AgentState) -> dict:
        with client.messages.stream(model=MODEL, messages=state["messages"], **request) as stream:
            message = stream.get_final_message()
        return {"messages": [{"role": "assistant", "content": [_param(b) for b in message.content]}]}

    def tools(state: AgentState) -> dict:
        results = []
        for block in state["messages"][-1]["content"]:
            if block["type"] != "tool_use":
                continue
            lines = (workspace / block["input"]["file_path"]).read_text().splitlines()
            text = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=1))
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": text})
        return {"messages": [{"role": "user", "content": results}]}

    def route(state: AgentState) -> str:
        return "tools" if any(b["type"] == "tool_use" for b in state["messages"][-1]["content"]) else END

    g = StateGraph(AgentState)
    g.add_node("model", model)
    g.add_node("tools", tools)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", route, ["tools", END])
    g.add_edge("tools", "model")
    return g


class LangGraphSide:
    """The graph compiled with one checkpointer; :meth:`session` runs one thread and times it."""

    def __init__(self, name: str, checkpointer, api_url: str, workspace: Path, steps: int, request: dict) -> None:
        import anthropic

        self.name = name
        self.steps = steps
        client = anthropic.Anthropic(base_url=api_url, api_key="bench-key", max_retries=0)
        self.graph = agent_graph(client, workspace, request).compile(checkpointer=checkpointer)

    def session(self, durability: str | None = "sync") -> float:
        config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 4 * self.steps + 10}
        t0 = time.perf_counter()
        kw = {"durability": durability} if durability else {}
        state = self.graph.invoke({"messages": [{"role": "user", "content": PROMPT.format(n=self.steps)}]},
                                  config, **kw)
        wall = time.perf_counter() - t0
        if len(state["messages"]) != 2 * self.steps + 2:
            raise RuntimeError(f"the {self.name} session ended badly: {len(state['messages'])} messages")
        return wall / self.steps


def create_database(pg_url: str) -> tuple[str, Callable[[], None]]:
    """A fresh database on the server of ``pg_url``; its URL and a function that drops it."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"mainsail_bench_{os.getpid()}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return make_conninfo(**{**conninfo_to_dict(pg_url), "dbname": name}), drop


# --------------------------------------------------------------------------- the run


def run(args, procs: Procs, tmp: Path, cleanups: list) -> dict[str, list[float]]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    workspace = tmp / "workspace"
    workspace.mkdir()
    (workspace / "bench.txt").write_text(BENCH_FILE_LINES)
    api_url = start_fake_api(procs, tmp, args.steps)
    print(f"fake Messages API at {api_url}; starting redis and a mainsail worker ...", file=sys.stderr)
    ms = MainsailSide(procs, tmp, api_url, args.steps, session_memory=args.session_memory)

    pg_conninfo, drop = create_database(args.pg_url)
    cleanups.append(drop)
    pg_cm = PostgresSaver.from_conn_string(pg_conninfo)
    pg = pg_cm.__enter__()
    cleanups.insert(0, lambda: pg_cm.__exit__(None, None, None))
    pg.setup()
    sq_cm = SqliteSaver.from_conn_string(str(tmp / "checkpoints.sqlite"))
    sq = sq_cm.__enter__()
    cleanups.insert(0, lambda: sq_cm.__exit__(None, None, None))
    print("warm-up: one session per side ...", file=sys.stderr)
    ms.session()
    request = MINIMAL_REQUEST if args.minimal_request else same_request(api_url)
    lg_pg = LangGraphSide("LangGraph+Postgres", pg, api_url, workspace, args.steps, request)
    lg_sq = LangGraphSide("LangGraph+SQLite", sq, api_url, workspace, args.steps, request)
    # The floor: the same graph, no checkpointer (nothing durable): what the model calls and the file
    # reads cost alone, on any side. What a side spends above it is its runtime and its durability.
    lg_none = LangGraphSide("LangGraph, no checkpointer", None, api_url, workspace, args.steps, request)
    lg_pg.session()
    lg_sq.session()
    lg_none.session(durability=None)
    ms.commands = 0
    out: dict[str, list[float]] = {"mainsail": [], "mainsail_wall": [], "postgres": [], "sqlite": [], "floor": [],
                                   "graph_request_bytes": [len(json.dumps(request))]}
    for i in range(args.rounds):
        step, wall = ms.session()
        out["mainsail"].append(step)
        out["mainsail_wall"].append(wall)
        out["postgres"].append(lg_pg.session())
        out["sqlite"].append(lg_sq.session())
        out["floor"].append(lg_none.session(durability=None))
        print(f"round {i + 1}/{args.rounds}: mainsail {step * 1000:.1f} ms/step, LangGraph+Postgres "
              f"{out['postgres'][-1] * 1000:.1f}, LangGraph+SQLite {out['sqlite'][-1] * 1000:.1f}, "
              f"no checkpointer {out['floor'][-1] * 1000:.1f}", file=sys.stderr)
    out["redis_commands_per_step"] = [ms.commands / (args.rounds * args.steps)]
    return out


def report(args, out: dict[str, list[float]]) -> None:
    med = {k: statistics.median(v) for k, v in out.items()}
    rows = [
        ("Mainsail (mainsail worker + mainsail run -p; run's duration_ms / N)", med["mainsail"]),
        ("  the same, wall of the whole command (Python start-up included) / N", med["mainsail_wall"]),
        ("LangGraph + Postgres checkpointer (durability=sync)", med["postgres"]),
        ("LangGraph + SQLite checkpointer (durability=sync)", med["sqlite"]),
        ("LangGraph, no checkpointer (the floor: model calls and file reads only)", med["floor"]),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"per agent step, {args.steps}-step Read loop, median of {args.rounds} sessions; the graph sends "
          + ("the Read tool alone (--minimal-request)" if args.minimal_request else
             "Mainsail's system prompt and tool schemas")
          + f" ({med['graph_request_bytes'] / 1000:.1f} KB besides the messages)")
    print(f"{'side':<{width}}  {'ms/step':>8}")
    print("-" * (width + 10))
    for name, value in rows:
        print(f"{name:<{width}}  {value * 1000:8.2f}")
    print("-" * (width + 10))
    ratio = med["mainsail"] / med["postgres"]
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(f"aim: Mainsail / LangGraph+Postgres <= {TARGET_RATIO:g}: {verdict} it ({ratio:.2f}x)")
    print(f"ratio Mainsail / LangGraph+SQLite: {med['mainsail'] / med['sqlite']:.2f}x")
    floor = med["floor"]
    print(f"above the floor ({floor * 1000:.2f} ms): Mainsail +{(med['mainsail'] - floor) * 1000:.2f} ms, "
          f"LangGraph+Postgres +{(med['postgres'] - floor) * 1000:.2f} ms, LangGraph+SQLite "
          f"+{(med['sqlite'] - floor) * 1000:.2f} ms per step")
    if floor > TARGET_RATIO * med["postgres"]:
        print(f"  the floor alone is {floor / med['postgres']:.2f}x LangGraph+Postgres: a runtime that calls the "
              f"model as the floor does (the SDK's streaming helper) cannot reach {TARGET_RATIO:g}x here; "
              f"compare what each side adds above it")
    print(f"redis commands per Mainsail step (whole server: worker, broker and the run -p client): "
          f"{med['redis_commands_per_step']:.1f}")
    for key in ("mainsail", "postgres", "sqlite", "floor"):
        print(f"{key} ms/step by round: " + ", ".join(f"{v * 1000:.1f}" for v in out[key]))


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="Read turns per session (N); default 20")
    ap.add_argument("--rounds", type=int, default=5, help="measured sessions per side (R); default 5")
    ap.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgresql://127.0.0.1:5432/postgres"),
                    help="a PostgreSQL server where this run may create and drop a database "
                         "(default $BENCH_PG_URL or postgresql://127.0.0.1:5432/postgres)")
    ap.add_argument("--session-memory", action="store_true",
                    help="keep Mainsail's session-memory fork on (off by default: the graph keeps no memory)")
    ap.add_argument("--minimal-request", action="store_true",
                    help="the graph sends only the Read tool and no system prompt (by default it sends the "
                         "system prompt and tool schemas Mainsail sends, read from the fake API)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (logs) for inspection")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.rounds < 1:
        ap.error("--steps and --rounds must be >= 1")
    try:
        import langgraph.checkpoint.postgres  # noqa: F401
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError as exc:
        print(f"{exc}: install the bench extra: pip install -e '.[bench]'", file=sys.stderr)
        return 0

    signal.signal(signal.SIGTERM, _interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="mainsail-vs-langgraph-"))
    procs = Procs()
    cleanups: list[Callable[[], None]] = []
    try:
        report(args, run(args, procs, tmp, cleanups))
    except KeyboardInterrupt:
        print("interrupted; stopping processes", file=sys.stderr)
        return 130
    except Exception as exc:  # a benchmark reports; the figures it could not take are the report
        print(f"the benchmark could not finish: {exc}", file=sys.stderr)
    finally:
        for cleanup in cleanups:
            try:
                cleanup()
            except Exception as exc:
                print(f"warning: cleanup failed: {exc}", file=sys.stderr)
        procs.stop_all()
        if args.keep_tmp:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
