"""Fuzz the Bash permission checker against what bash really executes.

    python bench/fuzz_checker.py [--seconds N] [--batch B] [--seed S]

Generates Bash tool commands from the grammar in tests/bashgen.py (hypothesis),
asks the checker about each (default, acceptEdits and plan modes, and default
with a few allow rules), runs every line it approves without asking the way the
Bash tool runs it (bash -c in the bwrap sandbox) under ``strace -f -e
trace=execve`` in a throwaway workspace, and compares the programs executed with
the ones the checker saw (tests/exec_oracle.py); a line that only deny rules
(``Bash(touch:*)``, ``Read(**/.env)`` in bypass mode) let through must execute no touch and open no .env. Prints every disagreement as it
is found (the command repr'd) and, at the end, lines generated and run per
second. Exits 1 if any disagreement was found, 2 if the oracle cannot run here
(bwrap or strace missing), else 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.bashgen import lines  # noqa: E402
from tests.exec_oracle import Oracle, unavailable  # noqa: E402


class _Stop(Exception):
    """The time is up (raised from inside hypothesis's loop)."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz (default 60)")
    ap.add_argument("--batch", type=int, default=1000,
                    help="generated lines per oracle batch (its approved ones run in one sandbox launch; default 1000)")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    args = ap.parse_args()
    if why := unavailable():
        print(f"fuzz_checker: cannot run the oracle here: {why}", file=sys.stderr)
        return 2
    oracle = Oracle()
    totals = {"asked": 0, "ran": 0, "past_deny": 0, "batches": 0}
    found: list[str] = []
    pending: list[str] = []  # hypothesis draws a few lines per example; one sandbox launch runs a batch
    start = time.monotonic()
    deadline = start + args.seconds

    @settings(max_examples=10**9, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def fuzz(data):
        pending.extend(data.draw(lines(min_size=10, max_size=25)))
        if time.monotonic() >= deadline:  # after the draw: hypothesis replays this example, drawing the same
            raise _Stop
        if len(pending) < args.batch:
            return
        result = oracle.check(pending[:])
        pending.clear()
        totals["asked"] += result.asked
        totals["ran"] += result.ran
        totals["past_deny"] += result.ran_past_deny
        totals["batches"] += 1
        for why in result.disagreements:
            if why not in found:
                found.append(why)
                print(f"DISAGREEMENT: {why}", flush=True)
        print(f"{time.monotonic() - start:7.1f}s  {totals['asked']:,} lines, {totals['ran']:,} approved and run, "
              f"{totals['past_deny']:,} run past a deny rule, {len(found)} disagreements", flush=True)

    if args.seed is not None:
        fuzz = __import__("hypothesis").seed(args.seed)(fuzz)
    try:
        fuzz()
    except _Stop:  # hypothesis replays the example that raised, then raises it again
        pass
    wall = time.monotonic() - start
    print(f"\n{totals['asked']:,} lines generated, {totals['ran']:,} approved and run, {totals['past_deny']:,} "
          f"run past the deny rule in bypass mode, in {wall:.0f} s: {totals['asked'] / wall:.1f} lines/s checked, "
          f"{(totals['ran'] + totals['past_deny']) / wall:.1f} lines/s run ({totals['batches']} sandbox launches); "
          f"{len(found)} disagreements")
    for why in found:
        print(f"  {why}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
