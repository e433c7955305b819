"""More of Claude Code's REPL habits: ``!cmd`` (bash mode), ``# note`` (a memory line), and the slash commands
``/context``, ``/export``, ``/agents``, ``/add-dir``, ``/hooks``, ``/todos``.

``!cmd`` is submitted as ``<bash-input>cmd</bash-input>`` (Claude Code's transcript shape): the engine runs
it as one Bash call, decided by the same permission function and run in the same sandbox as the model's
calls, and its output joins the conversation as context for the next turn (workflows/engine/commands.py).
:func:`commands` adds the slash commands to the interactive table.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import click

from cli.session_service import service

if TYPE_CHECKING:
    from cli.repl_state import Repl


def commands(ui: "Repl") -> dict[str, tuple[Callable[[str], None], str]]:
    """These commands as entries of the interactive command table."""
    return {
        "/context": (lambda arg: context(ui), "what fills the context window, with token figures"),
        "/export": (lambda arg: export(ui, arg), "[FILE]  write the conversation to a text file"),
        "/agents": (lambda arg: agents(ui), "the sub-agent types the Task tool can start"),
        "/add-dir": (lambda arg: add_dir(ui, arg), "DIR  add a working directory (as --add-dir)"),
        "/hooks": (lambda arg: hooks(ui), "the session's hooks, by event"),
        "/todos": (lambda arg: todos(ui), "the session's todo list"),
        # /rewind: checkpoints of edited files (cli/rewind.py adds its entry).
    }


# ---------------------------------------------------------------------------------------------- !cmd and # note


def bash_prompt(line: str) -> str | None:
    """What ``!cmd`` submits (Claude Code's transcript shape); None for a bare ``!``."""
    command = line[1:].strip()
    return f"<bash-input>{command}</bash-input>" if command else None


def bash(ui: "Repl", line: str) -> None:
    """``!cmd``: run ``cmd`` in the session (bash mode); its output joins the conversation."""
    prompt = bash_prompt(line)
    if prompt is None:
        click.echo("Usage: !COMMAND (runs COMMAND in the workspace; its output goes into the conversation).",
                   err=True)
        return
    ui.turn(prompt)


def note(ui: "Repl", line: str) -> None:
    """``# note``: append ``- note`` to the memory file the person picks, as Claude Code asks."""
    text = line.lstrip("#").strip()
    if not text:
        click.echo("Usage: # NOTE (saves NOTE to CLAUDE.md: this project's or yours).", err=True)
        return
    rec = ui.record()
    home = Path(rec.home or Path.home())
    places = {"p": Path(rec.workspace) / "CLAUDE.md", "u": home / ".claude" / "CLAUDE.md"}
    click.echo(f"Save to (p)roject memory {places['p']} (checked in, for everyone), or (u)ser memory "
               f"{places['u']} (yours, every project)?")
    answer = (ui.reader.prompt("Where? p / u (Enter cancels) ") or "").strip().lower()
    if answer not in places:
        click.echo("Not saved." if not answer else f"Not saved: {answer!r} is neither p nor u.")
        return
    path = places[answer]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        sep = "" if not old or old.endswith("\n") else "\n"
        with path.open("a", encoding="utf-8") as f:
            f.write(f"{sep}- {text}\n")
    except (OSError, UnicodeDecodeError) as exc:
        click.echo(f"Not saved: cannot write {path} ({exc}). Fix its permissions or pick the other file.", err=True)
        return
    click.echo(f"Saved to {path}. It is read at the start of each new session (/clear starts one).")


# ---------------------------------------------------------------------------------------------- slash commands


def context(ui: "Repl") -> None:
    """The context window: the last measured size, and an estimate of each part of the next request."""
    from workflows.context.assemble import build_request
    from workflows.mcp.catalog import tool_schemas
    from workflows.model.tokens import describe_usage, estimate_tokens, model_limits, thresholds

    rec = ui.record()
    model = rec.sent_model()
    request = build_request(rec, ui.store.entries(rec.id), 1, tool_schemas(ui.store, rec))
    mcp_names = {t["name"] for t in tool_schemas(ui.store, rec)}
    own = [t for t in request["tools"] if t["name"] not in mcp_names]
    mcp = [t for t in request["tools"] if t["name"] in mcp_names]
    memory = estimate_tokens(rec.user_context) if rec.user_context else 0
    messages = estimate_tokens(request["messages"]) - memory
    parts = [("System prompt", estimate_tokens(request["system"])), ("System tools", estimate_tokens(own) if own else 0),
             ("MCP tools", estimate_tokens(mcp) if mcp else 0), ("Memory files", memory),
             ("Messages", max(0, messages))]
    total = sum(n for _, n in parts)
    window = model_limits(model)[0]
    pct = ui.settings.autocompact_pct_override
    limits = thresholds(model, pct)
    click.echo(click.style(f"Context of session {rec.id[:8]} · {model} · {window:,}-token window", bold=True))
    width = max(len(k) for k, _ in parts)
    for name, n in parts:
        click.echo(f"  {name:<{width}}  {n:>9,} tokens  {100 * n / window:5.1f}%")
    click.echo(f"  {'Total (estimate)':<{width}}  {total:>9,} tokens  {100 * total / window:5.1f}%")
    click.echo(f"  {'Free space':<{width}}  {max(0, limits.auto_compact - total):>9,} tokens until auto-compact "
               f"(at {limits.auto_compact:,})")
    if rec.context_tokens:
        click.echo(f"Last model call: {describe_usage(rec.context_tokens, model, pct)}")
    click.echo(click.style("Estimates are four characters a token; the last model call's figure is measured.",
                           dim=True))
    from workflows.context.claude_md import memory_files

    files = [f for f in memory_files(rec.workspace, rec.home or str(Path.home())) if f.content]
    for f in files:
        click.echo(f"  {f.path}  {estimate_tokens(f.content):,} tokens ({f.kind})")


def export(ui: "Repl", arg: str) -> None:
    """The conversation as plain text (as Claude Code's /export): to ``arg``, or a dated file in the workspace."""
    rec = ui.record()
    name = arg.strip() or time.strftime("%Y-%m-%d-%H%M%S-") + _slug(rec.title or rec.id[:8]) + ".txt"
    path = Path(os.path.expanduser(name))
    if not path.is_absolute():
        path = ui.workspace / path
    if path.is_dir():
        click.echo(f"Not exported: {path} is a directory. Give a file name: /export FILE.", err=True)
        return
    text = conversation_text(ui.store.entries(rec.id))
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        click.echo(f"Not exported: cannot write {path} ({exc.strerror or exc}). Give another file: /export FILE.",
                   err=True)
        return
    click.echo(f"Conversation exported to {path} ({len(text.splitlines()):,} lines). "
               f"(mainsail export {rec.id[:8]} writes the full transcript as JSONL.)")


def conversation_text(entries: list) -> str:
    """The conversation as interactive mode shows it (prompts, replies, tool calls and their results), no colour."""
    from rich.console import Console

    from cli.render import Renderer

    out = io.StringIO()
    r = Renderer(Console(file=out, no_color=True, highlight=False, soft_wrap=True, width=120),
                 show_prompts=True, show_requests=True)
    for e in entries:
        r.entry(e)
    r.close()
    return out.getvalue()


def _slug(title: str) -> str:
    keep = "".join(c if c.isalnum() else "-" for c in title.lower())
    return "-".join(p for p in keep.split("-") if p)[:50] or "conversation"


def agents(ui: "Repl") -> None:
    rec = ui.record()
    if not rec.agents:
        click.echo("No sub-agents: the Task tool is off for this session.")
        return
    click.echo("Sub-agent types (the Task tool's subagent_type); files: .claude/agents/*.md, ~/.claude/agents/*.md:")
    width = max(len(n) for n in rec.agents)
    for name, a in rec.agents.items():
        tools = "all tools" if a.tools is None else (", ".join(a.tools) or "no tools")
        model = a.model if a.model and a.model != "inherit" else "inherits the model"
        click.echo(f"  {name:<{width}}  {a.description[:90]}")
        click.echo(click.style(f"  {'':<{width}}  {tools} · {model} · from {a.source}", dim=True))


def add_dir(ui: "Repl", arg: str) -> None:
    """Add a working directory, checked as ``--add-dir`` is (an existing directory, not /)."""
    from workflows.sessions.setup import added_dirs

    if not arg.strip():
        click.echo("Usage: /add-dir DIR (an existing directory the session may then read and edit in).", err=True)
        return
    rec = ui.record()
    (path,) = added_dirs([], [arg.strip()], cwd=str(ui.workspace), home=Path(rec.home or Path.home()))
    if path in rec.additional_directories or path == rec.workspace:
        click.echo(f"{path} is already a working directory of this session.")
        return
    service(ui.rt).update_limits(rec.id, additional_directories=[path])
    click.echo(f"Added {path} as a working directory for this session.")


def hooks(ui: "Repl") -> None:
    rec = ui.record()
    if not rec.hooks:
        click.echo("No hooks configured (settings files' \"hooks\": .claude/settings.json, ~/.claude/settings.json).")
        return
    for event, groups in rec.hooks.events.items():
        for group in groups:
            for hook in group.hooks:
                what = getattr(hook, "command", None) or f"callback {getattr(hook, 'callback_id', '')}"
                matcher = f" [{group.matcher}]" if group.matcher and group.matcher != "*" else ""
                source = getattr(hook, "source", "") or "session"
                click.echo(f"  {event.value}{matcher}  {what}  (timeout {hook.timeout:g}s, from {source})")


def todos(ui: "Repl") -> None:
    from cli.render import todo_lines

    rec = ui.record()
    if not rec.todos:
        click.echo("No todos: the model has not written a todo list in this session.")
        return
    done = sum(1 for t in rec.todos if t.get("status") == "completed")
    click.echo(f"Todos ({done} of {len(rec.todos)} done):")
    for line in todo_lines(rec.todos):
        click.echo(f"  {line}")


__all__ = ["bash", "bash_prompt", "commands", "conversation_text", "note"]
