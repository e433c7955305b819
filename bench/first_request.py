"""``mainsail -p`` against Claude Code's own CLI: the first model request's latency and a whole session.

A private ``redis-server``, the fake Messages API in a process of its own (``read_loop:N``: N turns that
each Read ``bench.txt``, then an answer; one for each side) and one ``mainsail worker`` (all its queues, so ``-p`` runs none of its own), registered before
anything is timed. Then, R rounds, in turn: ``mainsail -p`` and the bundled Claude Code CLI
(``claude_agent_sdk/_bundled/claude``, HOME in a temp dir) on the same prompt, each in a workspace of its
own, in bypassPermissions. Per run: the wall of the whole process, and the time from its start to the
fake API receiving its first Messages API request (``GET /_arrivals``). ``mainsail`` runs warm (its warm
server, cli/warm/, is started by the warm-up run and waited for); ``--cold`` adds runs without it. Prints the medians, the median
of the paired ratios (Mainsail / Claude Code, pair by pair) and every round. Stops everything at the end.

    python bench/first_request.py [--turns 20] [--rounds 5] [--cold] [--mainsail-only] [--keep-tmp]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.step_overhead import BENCH_FILE_LINES, Procs, child_env, start_fake_api, start_redis  # noqa: E402

MODEL = "claude-sonnet-4-6"
#: Claude Code's environment beside HOME and the API (tests/e2e/parity_runner.py's): no updates, no side traffic.
CLAUDE_ENV = {"ANTHROPIC_API_KEY": "test-key", "IS_SANDBOX": "1", "DISABLE_AUTOUPDATER": "1",
              "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def claude_cli() -> Path | None:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return path if path.exists() else None


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def _reset(api: str) -> None:
    req = urllib.request.Request(api + "/_reset", data=b"{}", method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass


def wait_for_worker(procs: Procs, worker: subprocess.Popen, url: str, log: Path) -> None:
    from tasks import runtime
    from workflows.settings import load_settings

    store = runtime.store(load_settings(redis_url=url))
    deadline = time.monotonic() + 120
    while not {"model", "tools", "memory"} <= store.live_queues():  # (cli/standby.py's BASE_QUEUES)
        procs.check(worker)
        if time.monotonic() > deadline:
            raise RuntimeError(f"the mainsail worker did not register within 120 s; see {log}")
        time.sleep(0.1)


def quiet(api: str, settle: float = 0.5, limit: float = 30.0) -> None:
    """Wait until ``api`` has received nothing for ``settle`` seconds: the worker's memory forks of the last
    run call it after that run's result, and must not count as the next run's first request."""
    deadline = time.monotonic() + limit
    seen = -1
    while time.monotonic() < deadline:
        now = len(_get(api + "/_arrivals"))
        if now == seen:
            return
        seen = now
        time.sleep(settle)


def timed_run(argv: list[str], env: dict, cwd: Path, api: str, turns: int) -> tuple[float, float]:
    """(wall, start -> first Messages API request) of one CLI run; the run must answer after ``turns`` Reads."""
    quiet(api)
    _reset(api)
    t0 = time.time()
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result.get("num_turns") != turns + 1 or result.get("is_error"):
        raise RuntimeError(f"{argv[0]} ended after {result.get('num_turns')} turns: {result.get('result')!r}")
    firsts = [a["at"] for a in _get(api + "/_arrivals") if a["path"].split("?")[0] == "/v1/messages"]
    return wall, min(firsts) - t0


def wait_for_warm_server(mainsail: str, env: dict, cwd: Path) -> None:
    deadline = time.monotonic() + 60
    while "pid" not in subprocess.run([mainsail, "warm", "status"], env=env, cwd=cwd, capture_output=True,
                                      text=True).stdout:
        if time.monotonic() > deadline:
            raise RuntimeError("the warm server did not start (see `mainsail warm status`)")
        time.sleep(0.2)


def workspace(tmp: Path, name: str) -> Path:
    ws = tmp / name
    ws.mkdir()
    (ws / "bench.txt").write_text(BENCH_FILE_LINES)
    return ws


def run(args, procs: Procs, tmp: Path, claude: Path | None) -> dict[str, list[tuple[float, float]]]:
    url = start_redis(procs, tmp) + "/0"
    api = start_fake_api(procs, tmp, args.turns, keep_requests=1)
    mainsail = shutil.which("mainsail") or "mainsail"
    log = tmp / "mainsail-worker.log"
    env = child_env(tmp, MAINSAIL_REDIS_URL=url, ANTHROPIC_BASE_URL=api, ANTHROPIC_API_KEY="test-key")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (an installed package has its bytecode: the warm-up writes it)
    worker = procs.start("mainsail worker", [mainsail, "worker", "-l", "WARNING"],
                         env=env, cwd=ROOT, log=log)
    wait_for_worker(procs, worker, url, log)
    prompt = f"Read bench.txt {args.turns} times."
    flags = ["-p", prompt, "--model", MODEL, "--permission-mode", "bypassPermissions", "--output-format", "json"]
    (tmp / "home-ours").mkdir()
    (tmp / "home-claude").mkdir()
    ours = {**env, "HOME": str(tmp / "home-ours")}
    sides = {"mainsail": ([mainsail, *flags], ours, workspace(tmp, "ours"), api)}
    if args.cold:
        sides["mainsail-cold"] = ([mainsail, *flags], {**ours, "MAINSAIL_WARM": "false"}, sides["mainsail"][2], api)
    if claude is not None:
        # A fake API of its own: the worker's memory forks of Mainsail's last run may still be calling its API.
        (tmp / "claude-api").mkdir()
        theirs = start_fake_api(procs, tmp / "claude-api", args.turns, keep_requests=1)
        claude_env = {**child_env(tmp), **CLAUDE_ENV, "HOME": str(tmp / "home-claude"), "ANTHROPIC_BASE_URL": theirs}
        sides["claude"] = ([str(claude), *flags], claude_env, workspace(tmp, "theirs"), theirs)
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for name, (argv, env_, ws, api_) in sides.items():  # warm-up: page cache, Claude Code's first-run files
        timed_run(argv, env_, ws, api_, args.turns)
    wait_for_warm_server(mainsail, ours, tmp)  # (the warm-up started it)
    for _ in range(args.rounds):
        for name, (argv, env_, ws, api_) in sides.items():
            out[name].append(timed_run(argv, env_, ws, api_, args.turns))
    return out


def report(args, out: dict[str, list[tuple[float, float]]]) -> None:
    print(f"{args.turns + 1}-turn -p session ({args.turns} Reads), worker already running, {args.rounds} rounds")
    print(f"{'side':<10} {'median wall':>12} {'first request':>14}")
    for name, runs in out.items():
        print(f"{name:<10} {statistics.median(w for w, _ in runs) * 1000:>10.0f}ms "
              f"{statistics.median(f for _, f in runs) * 1000:>12.0f}ms")
    if "claude" in out:
        for name in [n for n in out if n.startswith("mainsail")]:
            ratios = [a[0] / b[0] for a, b in zip(out[name], out["claude"])]
            print(f"wall {name} / claude (median of paired ratios): {statistics.median(ratios):.2f}x  (aim <= 0.35x)")
    for name, runs in out.items():
        print(f"  {name} rounds: " + ", ".join(f"{w * 1000:.0f}ms (first {f * 1000:.0f}ms)" for w, f in runs))


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=20, help="Reads in the session (default 20)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--cold", action="store_true", help="also time Mainsail without its warm server (MAINSAIL_WARM=false)")
    ap.add_argument("--mainsail-only", action="store_true", help="time Mainsail alone (no Claude Code runs between)")
    args = ap.parse_args(argv)
    claude = None if args.mainsail_only else claude_cli()
    if claude is None and not args.mainsail_only:
        print("no bundled Claude Code CLI (pip install claude-agent-sdk): timing Mainsail alone", file=sys.stderr)
    signal.signal(signal.SIGTERM, _interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="mainsail-first-request-"))
    procs = Procs()
    try:
        report(args, run(args, procs, tmp, claude))
    finally:
        subprocess.run([shutil.which("mainsail") or "mainsail", "warm", "stop"], capture_output=True,
                       env={**child_env(tmp), "HOME": str(tmp / "home-ours")}, cwd=tmp)
        procs.stop_all()
        if not args.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
