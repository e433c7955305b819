"""The ``mainsail`` console script: a warm server runs the command where one can (cli/warm/), else this
process does (cli.main.main). Only the standard library is loaded before that choice."""

from __future__ import annotations

import sys


def main() -> None:
    from cli.warm.client import run

    try:
        code = run(sys.argv)
    except KeyboardInterrupt:  # (Ctrl-C before the command began: as cli.main.main says it)
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
    if code is not None:
        sys.exit(code)
    from cli.main import main as command

    command()
