"""Start-up per command: the whole ``mainsail`` process against a bare interpreter, cold and warm.

Starts a private ``redis-server`` (no persistence) on a free port, makes one session in it (so ``show``
and ``approve`` find one), then runs each command and ``python3 -c pass`` in turn, R times each: first
cold (``MAINSAIL_WARM=false``: the process imports what it needs), then warm (a warm server, cli/warm/,
started before and running the command in a fork). Prints per command and way the median wall, the median
of the paired ratios (command / bare, pair by pair: the ratio survives the machine's speed drifting) and,
cold, the modules it loaded. Stops the servers at the end.

    python bench/startup.py [--rounds R] [--python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.first_request import wait_for_warm_server  # noqa: E402

#: (label, mainsail arguments); SID is replaced by the session made at the start.
COMMANDS = [
    ("--version", ["--version"]),
    ("--help", ["--help"]),
    ("sessions", ["sessions"]),  # (the session is working: its row's note reads the steps and the registry)
    ("sessions --state idle", ["sessions", "--state", "idle"]),  # (no working row listed)
    ("show SID", ["show", "SID", "--no-transcript"]),
    ("pending", ["pending"]),
    ("approve SID", ["approve", "SID"]),
    ("send SID --clear", ["send", "SID", "--clear"]),
]
#: Run the command as the console script does, then write how many modules it loaded.
PROBE = ("import json, sys\nout = sys.argv.pop(1)\nfrom cli.main import main\ntry:\n    main()\nexcept SystemExit:\n"
         "    pass\nfinally:\n    open(out, 'w').write(json.dumps(sorted(sys.modules)))\n")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(tmp: Path) -> tuple[subprocess.Popen, str]:
    binary = shutil.which("redis-server")
    if not binary:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp), "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True).stdout.strip() != "PONG":
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("the private redis-server did not start")
        time.sleep(0.05)
    return proc, url


def wall(cmd: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def modules(args: list[str], env: dict, cwd: Path) -> list[str]:
    out = cwd / "modules.json"
    subprocess.run([sys.executable, "-c", PROBE, str(out), *args], env=env, cwd=cwd, capture_output=True)
    return json.loads(out.read_text())


def start_warm_server(mainsail: str, env: dict, cwd: Path) -> None:
    """Start the warm server the commands will find (the first warm command starts it) and wait for it."""
    subprocess.run([mainsail, "sessions"], env=env, cwd=cwd, capture_output=True)
    wait_for_warm_server(mainsail, env, cwd)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--python", default=shutil.which("python3") or sys.executable,
                    help="the bare interpreter (default: python3 on the PATH)")
    args = ap.parse_args(argv)
    mainsail = shutil.which("mainsail")
    if not mainsail:
        raise SystemExit("the mainsail command is not installed (pip install -e .)")
    tmp = Path(tempfile.mkdtemp(prefix="mainsail-startup-"))
    server, url = start_redis(tmp)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))
               and k != "PYTHONDONTWRITEBYTECODE"}  # (an installed package has its bytecode: the warm-up writes it)
        env.update(MAINSAIL_REDIS_URL=url, MAINSAIL_DATA_DIR=str(tmp / "data"), HOME=str(tmp),
                   MAINSAIL_EMBEDDED_WORKER="false", ANTHROPIC_API_KEY="unused")
        made = subprocess.run([mainsail, "submit", "hello"], env=env, cwd=tmp, capture_output=True, text=True)
        sid = made.stdout.strip()[:8]
        if made.returncode or not sid:
            raise SystemExit(f"could not make a session: {made.stderr}")
        warm_env = dict(env)
        start_warm_server(mainsail, warm_env, tmp)
        cold_env = {**env, "MAINSAIL_WARM": "false"}
        print(f"{'command':<30} {'cold wall':>9} {'ratio':>6} {'warm wall':>10} {'ratio':>6} {'bare':>6} "
              f"{'modules':>8}  celery/anthropic (cold)")
        for label, cmd in COMMANDS:
            cmd = [sid if a == "SID" else a for a in cmd]
            cold, warm, bare, cold_ratios, warm_ratios = [], [], [], [], []
            wall([mainsail, *cmd], cold_env, tmp)  # warm-up (page cache)
            wall([mainsail, *cmd], warm_env, tmp)
            for _ in range(args.rounds):
                b = wall([args.python, "-c", "pass"], env, tmp)
                c, w = wall([mainsail, *cmd], cold_env, tmp), wall([mainsail, *cmd], warm_env, tmp)
                cold.append(c), warm.append(w), bare.append(b), cold_ratios.append(c / b), warm_ratios.append(w / b)
            loaded = modules(cmd, cold_env, tmp)
            heavy = ",".join(m for m in ("celery", "anthropic") if m in loaded) or "-"
            print(f"mainsail {label:<21} {statistics.median(cold) * 1000:>7.0f}ms {statistics.median(cold_ratios):>5.1f}x "
                  f"{statistics.median(warm) * 1000:>8.0f}ms {statistics.median(warm_ratios):>5.1f}x "
                  f"{statistics.median(bare) * 1000:>4.0f}ms {len(loaded):>8}  {heavy}")
    finally:
        subprocess.run([mainsail, "warm", "stop"], env=env, cwd=tmp, capture_output=True)
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
