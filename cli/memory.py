"""``mainsail memory``: a session's running notes, and the project's auto-memory records.

Records belong to a project (the git root of ``--project``, default the current
directory), live in Redis so every worker shares them, and export to (and import
from) Claude Code's layout: one markdown file per record with YAML frontmatter,
plus a ``MEMORY.md`` index.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from cli.connect import Runtime, connect
from cli.readonly import existing_runtime
from workflows.exceptions import MemoryRecordError, SessionNotFound
from workflows.memory.records import INDEX_NAME, MEMORY_TYPES, make_record, parse_markdown
from workflows.settings import load_settings
from workflows.store.memory import ProjectMemory

project_option = click.option(
    "--project", "project", type=click.Path(exists=True, file_okay=False, path_type=Path), default=".",
    help="A directory of the project (its git root names it; default: the current directory).")


def _open(project: Path, *, read_only: str | None = None, code: int = 0) -> tuple[Runtime, ProjectMemory]:
    """The project's memory; with ``read_only`` (what there would be nothing of), never start a server."""
    rt = existing_runtime(what=read_only, code=code) if read_only else connect(load_settings())
    return rt, rt.store.workspace_memory(str(project))


@click.group("memory")
def memory() -> None:
    """Session memory (a session's notes) and auto-memory (the project's durable records)."""


@memory.command("list")
@project_option
def list_cmd(project: Path) -> None:
    """List the project's memory records."""
    _, mem = _open(project, read_only="no memories to list")
    records = mem.records()
    if not records:
        click.echo(f"No memories for project {mem.root}. They are saved after answers (auto-memory), "
                   f"or add one with `mainsail memory edit NAME`.")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("NAME", "TYPE", "DESCRIPTION"):
        table.add_column(col, overflow="fold")
    for r in records:
        table.add_row(r.name, r.type, r.description)
    Console(soft_wrap=False).print(table)
    click.echo(click.style(f"{len(records)} record(s) · project {mem.root}", dim=True))


@memory.command("show")
@click.argument("target", required=False)
@click.option("--session", "session", metavar="SID", help="Show this session's memory (its notes).")
@project_option
def show(target: str | None, session: str | None, project: Path) -> None:
    """Show MEMORY.md, a record (by NAME), or a session's notes (by SID or prefix)."""
    named = target or session
    rt, mem = _open(project, read_only=f"no memory {named!r} to show" if named else "no memories to show",
                    code=1 if named else 0)
    if session is None and target and target.removesuffix(".md").upper() == INDEX_NAME:
        target = None
    if session is None and target is None:
        click.echo(mem.index() or f"MEMORY.md is empty: project {mem.root} has no memory records yet.", nl=False)
        return
    if session is None:
        record = mem.get(target.removesuffix(".md"))
        if record is not None:
            click.echo(record.markdown(), nl=False)
            return
        try:
            sid = rt.store.resolve_session(target)
        except SessionNotFound:
            names = ", ".join(r.name for r in mem.records()) or "none"
            raise click.ClickException(
                f"{target!r} is neither a memory record of project {mem.root} (records: {names}) nor a session "
                "id. See `mainsail memory list` and `mainsail sessions`.") from None
    else:
        sid = rt.store.resolve_session(session)
    doc = rt.store.session_memory(sid)
    if not doc:
        rec = rt.store.get_session(sid)
        settings = rt.engine.settings
        why = ("session memory is off (MAINSAIL_SESSION_MEMORY)" if not settings.session_memory else
               f"it is first written once the context passes {settings.session_memory_init_tokens:,} tokens "
               "(MAINSAIL_SESSION_MEMORY_INIT_TOKENS)")
        click.echo(f"Session {sid[:8]} ({rec.title or 'untitled'}) has no session memory yet: {why}.")
        return
    click.echo(doc if doc.endswith("\n") else doc + "\n", nl=False)


@memory.command("edit")
@click.argument("name")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), help="With --description and --body: no editor.")
@click.option("--description", help="One line, shown in MEMORY.md.")
@click.option("--body", help="The memory itself (markdown).")
@project_option
def edit(name: str, type_: str | None, description: str | None, body: str | None, project: Path) -> None:
    """Create or change the record NAME: in $EDITOR, or from --type/--description/--body."""
    _, mem = _open(project)
    existing = mem.get(name)
    if type_ or description or body is not None:
        base = existing
        record = make_record(name, description or (base.description if base else ""),
                             type_ or (base.type if base else ""), body if body is not None else (base.body if base else ""))
    else:
        start = existing.markdown() if existing else (
            f"---\nname: {name}\ndescription: \ntype: {'|'.join(MEMORY_TYPES)}\n---\n\n")
        text = click.edit(start, extension=".md", require_save=True)
        if text is None:
            click.echo("No change (the editor was closed without saving).")
            return
        try:
            record = parse_markdown(text, where=f"{name}.md", default_name=name)
        except MemoryRecordError as exc:
            kept = _keep(text, name)
            raise click.ClickException(f"{exc}\nYour text is saved in {kept}; fix it and run "
                                       f"`mainsail memory import` on its folder, or edit again.") from None
        if record.name != name:
            raise click.ClickException(f"The frontmatter names {record.name!r}, but you are editing {name!r}; "
                                       "keep the name (rename with edit NEW and rm OLD).")
    mem.put(record)
    click.echo(f"{'Updated' if existing else 'Saved'} memory {record.name!r} ({record.type}) in project {mem.root}.")


def _keep(text: str, name: str) -> str:
    folder = tempfile.mkdtemp(prefix="mainsail-memory-")
    path = os.path.join(folder, f"{name}.md")
    Path(path).write_text(text, encoding="utf-8")
    return path


@memory.command("rm")
@click.argument("names", nargs=-1, required=True)
@project_option
def rm(names: tuple[str, ...], project: Path) -> None:
    """Delete memory records by name."""
    _, mem = _open(project)
    missing = [n for n in names if mem.get(n) is None]
    if missing:
        have = ", ".join(r.name for r in mem.records()) or "none"
        raise click.ClickException(f"No memory named {', '.join(map(repr, missing))} in project {mem.root} "
                                   f"(records: {have}); nothing was deleted.")
    for n in names:
        mem.delete(n)
    click.echo(f"Deleted {len(names)} memory record(s): {', '.join(names)}.")


@memory.command("export")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@project_option
def export(folder: Path, project: Path) -> None:
    """Write the records to FOLDER as NAME.md files with YAML frontmatter, plus MEMORY.md."""
    _, mem = _open(project, read_only="no memories to export", code=1)
    records = mem.records()
    folder.mkdir(parents=True, exist_ok=True)
    for r in records:
        (folder / f"{r.name}.md").write_text(r.markdown(), encoding="utf-8")
    (folder / "MEMORY.md").write_text(mem.index(), encoding="utf-8")
    click.echo(f"Exported {len(records)} memory record(s) and MEMORY.md to {folder}.")


@memory.command("import")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@project_option
def import_cmd(folder: Path, project: Path) -> None:
    """Read NAME.md files (YAML frontmatter) from FOLDER into the project; all or nothing."""
    _, mem = _open(project)
    files = sorted(p for p in folder.glob("*.md") if p.stem.upper() != INDEX_NAME)
    if not files:
        raise click.ClickException(f"{folder} holds no memory files (NAME.md with YAML frontmatter).")
    records, problems = [], []
    for path in files:
        try:
            records.append(parse_markdown(path.read_text(encoding="utf-8"), where=path.name, default_name=path.stem))
        except (MemoryRecordError, UnicodeDecodeError) as exc:
            problems.append(str(exc))
    if problems:
        raise click.ClickException("Nothing was imported; fix these files first:\n  " + "\n  ".join(problems))
    replaced = sum(1 for r in records if mem.get(r.name) is not None)
    for r in records:
        mem.put(r)
    click.echo(f"Imported {len(records)} memory record(s) into project {mem.root}"
               + (f" ({replaced} replaced)." if replaced else "."))
