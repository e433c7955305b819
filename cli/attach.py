"""Submitting a prompt and staying attached until the run ends (shared by run and demo)."""

from __future__ import annotations

import sys

import click

from cli.connect import Runtime
from cli.render import Renderer, follow
from tasks.dispatch import dispatch
from workflows.models import ResultEntry


def submit_and_watch(rt: Runtime, sid: str, prompt: str, *, print_mode: bool = False,
                     renderer: Renderer | None = None) -> ResultEntry:
    """Submit ``prompt`` to session ``sid`` and follow it to its result entry.

    Ctrl-C detaches (the session goes on where a worker serves it) and exits 130.
    """
    after = _last_id(rt, sid)
    dispatch(rt.engine.submit(sid, prompt))
    r = None if print_mode else (renderer or Renderer(show_prompts=False))
    try:
        result = follow(
            rt.store, sid,
            on_entry=(r.entry if r else lambda e: None),
            on_delta=(r.delta if r else None),
            after=after,
        )
    except KeyboardInterrupt:
        if r:
            r.close()
        where = ("it stops with this command's in-process worker and resumes when a worker starts"
                 if rt.worker else "it keeps running on the workers")
        click.echo(f"\nDetached from session {sid[:8]}; {where}.", err=True)
        sys.exit(130)
    return result


def _last_id(rt: Runtime, sid: str) -> str | None:
    rows = rt.store.r.xrevrange(f"mainsail:session:{sid}:log", count=1)
    if not rows:
        return None
    rid = rows[0][0]
    return rid.decode() if isinstance(rid, bytes) else rid


def finish(result: ResultEntry, print_mode: bool) -> None:
    """Print-mode output and the exit code: 0 only for a successful result."""
    if print_mode:
        if result.is_error:
            click.echo(f"Error ({result.subtype}): {result.result}", err=True)
        else:
            click.echo(result.result)
    if result.is_error:
        sys.exit(1)
