"""What the permission checker and the OS sandbox cost per call.

    python bench/permission_cost.py [--calls N]

Prints, as medians over N calls in one run (compare the ratios, not the absolute
figures, on a shared machine):

* the permission check of typical Bash commands (tree-sitter parse + decision;
  parsing is cached per command text, so the first figure is a cold parse of a
  fresh command each time and the second the cached one);
* one Bash call of ``true`` run plainly, and run in bubblewrap (when it works
  here), with the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workflows.models import PermissionMode, RuleSet, SandboxSettings  # noqa: E402
from workflows.permissions import evaluate  # noqa: E402
from workflows.permissions.sandbox import sandbox_status  # noqa: E402
from workflows.permissions.shell.bash_parse import parse  # noqa: E402
from workflows.tools import ToolContext, run_tool  # noqa: E402

COMMANDS = [
    "npm test -- --watch=false",
    "git diff HEAD~1 -- src/app.py | head -50",
    "cd src && ls -la && cat main.py",
    "mkdir -p build/out && cp -r src build/out/",
    "python3 -m pytest tests/unit -q > out.txt 2>&1",
]


def _median_ms(fn, n: int) -> float:
    times = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=200)
    n = ap.parse_args().calls
    ws = tempfile.mkdtemp(prefix="mainsail-bench-ws-")
    for d in ("src", "build"):
        os.makedirs(os.path.join(ws, d))
    rules = RuleSet()
    rules.add("allow", "Bash(npm test:*)", "bench")
    rules.add("deny", "Bash(rm:*)", "bench")
    rules.add("deny", "Read(./.env)", "bench")

    def check(i: int, fresh: bool) -> None:
        command = COMMANDS[i % len(COMMANDS)] + (f" # {i}" if fresh else "")
        evaluate("Bash", {"command": command}, mode=PermissionMode.ACCEPT_EDITS, rules=rules, workspace=ws,
                 home=os.path.expanduser("~"), read_only=False)

    cold = _median_ms(lambda i: check(i, True), n)
    warm = _median_ms(lambda i: check(i, False), n)
    parse_only = _median_ms(lambda i: parse.__wrapped__(COMMANDS[i % len(COMMANDS)]), n)
    print(f"permission check, new command text : {cold:7.2f} ms   (tree-sitter parse alone {parse_only:.2f} ms)")
    print(f"permission check, cached parse     : {warm:7.2f} ms")

    calls = max(10, n // 10)
    plain = ToolContext(workspace=ws, sandbox=SandboxSettings(enabled=False))
    boxed = ToolContext(workspace=ws, sandbox=SandboxSettings())
    plain_ms = _median_ms(lambda i: run_tool("Bash", {"command": "true"}, plain), calls)
    print(f"Bash `true`, plain                 : {plain_ms:7.2f} ms")
    status = sandbox_status()
    if status.available:
        run_tool("Bash", {"command": "true"}, boxed)  # the one-time availability check
        boxed_ms = _median_ms(lambda i: run_tool("Bash", {"command": "true"}, boxed), calls)
        print(f"Bash `true`, in bubblewrap         : {boxed_ms:7.2f} ms   ({boxed_ms / plain_ms:.2f}x plain, "
              f"+{boxed_ms - plain_ms:.1f} ms per command)")
    else:
        print(f"Bash `true`, in bubblewrap         : n/a ({status.detail})")


if __name__ == "__main__":
    main()
