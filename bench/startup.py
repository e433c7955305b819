"""Start-up per command: the whole ``mainsail`` process against a bare interpreter.

Starts a private ``redis-server`` (no persistence) on a free port, makes one session in it (so ``show``
and ``approve`` find one), then runs each command and ``python3 -c pass`` in turn, R times each, and
prints per command the median wall, the median of the paired ratios (command / bare, pair by pair: the
ratio survives the machine's speed drifting) and the modules it loaded. Stops the server at the end.

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
        print(f"{'command':<30} {'median wall':>11} {'bare':>7} {'ratio':>6} {'modules':>8}  celery/anthropic")
        for label, cmd in COMMANDS:
            cmd = [sid if a == "SID" else a for a in cmd]
            ours, bare, ratios = [], [], []
            wall([mainsail, *cmd], env, tmp)  # warm-up (page cache)
            for _ in range(args.rounds):
                a, b = wall([mainsail, *cmd], env, tmp), wall([args.python, "-c", "pass"], env, tmp)
                ours.append(a), bare.append(b), ratios.append(a / b)
            loaded = modules(cmd, env, tmp)
            heavy = ",".join(m for m in ("celery", "anthropic") if m in loaded) or "-"
            print(f"mainsail {label:<21} {statistics.median(ours) * 1000:>9.0f}ms {statistics.median(bare) * 1000:>5.0f}ms "
                  f"{statistics.median(ratios):>5.1f}x {len(loaded):>8}  {heavy}")
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
