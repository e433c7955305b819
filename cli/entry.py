"""The ``mainsail`` console script: a warm server runs the command where one can (cli/warm/), else this
process does (cli.main.main). Only the standard library is loaded before that choice."""

from __future__ import annotations

import sys


def main() -> None:
    from cli.warm.client import run

    code = run(sys.argv)
    if code is not None:
        sys.exit(code)
    from cli.main import main as command

    command()
