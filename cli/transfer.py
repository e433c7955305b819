"""``mainsail export`` and ``mainsail import``: sessions as Claude Code-shaped JSONL transcripts."""

from __future__ import annotations

import os
import sys

import click

from cli.connect import connect
from cli.readonly import existing_runtime
from workflows.context.export import export_jsonl
from workflows.context.transcript import import_session
from workflows.exceptions import MainsailError
from workflows.settings import load_settings


@click.command("export")
@click.argument("session")
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True,
              help="Output format: Claude Code's transcript JSONL.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
              help="Write to FILE instead of stdout.")
def export_cmd(session: str, fmt: str, output: str | None) -> None:
    """Write SESSION's transcript (id or unique prefix) as JSONL, one entry a line."""
    try:
        rt = existing_runtime(what=f"no session {session!r} to export", code=1)
        try:
            sid = rt.store.resolve_session(session)
            rec = rt.store.get_session(sid)
            entries = rt.store.entries(sid)
        finally:
            rt.close()
    except MainsailError as exc:
        raise click.ClickException(str(exc)) from None
    lines = export_jsonl(entries, rec)
    if output is None:
        for line in lines:
            sys.stdout.write(line)
        sys.stdout.flush()
        return
    write_whole(output, lines)
    click.echo(f"Exported {len(entries)} entries of session {sid[:8]} to {output}.", err=True)


def write_whole(output: str, lines) -> None:
    """Write ``lines`` to ``output`` through a temporary file renamed over it: a reader never sees half.

    Raises:
        click.ClickException: the file cannot be written (its reason named).
    """
    try:
        tmp = f"{output}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(lines)
        os.replace(tmp, output)
    except OSError as exc:
        raise click.ClickException(f"Could not write {output}: {exc.strerror or exc}") from None


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--cwd", "workspace", type=click.Path(file_okay=False), metavar="DIR",
              help="Workspace of the new session (default: the transcript's cwd, if it exists here).")
def import_cmd(file: str, workspace: str | None) -> None:
    """Import a JSONL transcript (Mainsail's export or Claude Code's) as a new idle session."""
    try:
        if file == "-":
            lines = sys.stdin.read().splitlines()
        else:
            with open(file, encoding="utf-8") as f:
                lines = f.read().splitlines()
    except UnicodeDecodeError:
        raise click.ClickException(f"{file} is not a UTF-8 text file; expected a JSONL transcript.") from None
    except OSError as exc:
        raise click.ClickException(f"Could not read {file}: {exc.strerror or exc}") from None
    try:
        settings = load_settings()
        rt = connect(settings)
        try:
            rec = import_session(rt.store, lines, workspace=workspace, default_model=settings.model)
            n = rt.store.log_length(rec.id)
        finally:
            rt.close()
    except ValueError as exc:
        raise click.ClickException(f"Cannot import {file}: {exc}") from None
    except MainsailError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Imported {n} entries as session {rec.id} "
               f'(resume it: mainsail run --resume {rec.id[:8]} "...")')


__all__ = ["export_cmd", "import_cmd", "write_whole"]
