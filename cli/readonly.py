"""Commands that read (or remove) what exists: they never start a Redis or a worker.

``mainsail sessions`` on a machine where nothing runs says so and exits; it does not
start an embedded server to find it empty.
"""

from __future__ import annotations

import click

from cli.connect import Runtime, connect_existing
from workflows.settings import Settings, load_settings


def no_server(what: str) -> str:
    return (f"No Mainsail server is running here ({what}). Set MAINSAIL_REDIS_URL to reach one "
            "elsewhere; `mainsail run` or `mainsail worker` starts one here.")


def existing_runtime(settings: Settings | None = None, *, what: str = "nothing to show",
                     code: int = 0) -> Runtime:
    """The runtime of the server running here; without one, say so and exit with ``code``.

    A message for exit code 0 goes to stdout (it is the answer), for any other to stderr.
    """
    rt = connect_existing(settings or load_settings())
    if rt is None:
        click.echo(no_server(what), err=code != 0)
        click.get_current_context().exit(code)
    return rt


__all__ = ["existing_runtime", "no_server"]
