"""Opening interactive mode's session: a new one (asking about trust and the project's MCP servers) or one
taken up again, announced and recapped; /clear's options; ending one (SessionEnd hooks)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import click

from cli.connect import Runtime
from cli.mcp import approve_project_servers
from cli.opening import check_new_id, trust_note, warn_about_model
from cli.render import Renderer
from cli.select import pick_session
from cli.session_service import say_warnings, service
from cli.slash_commands import read_commands
from cli.standby import require_model_access
from cli.trust_flag import ask_trust
from statemachines import State
from workflows.models import SessionRecord
from workflows.models.mcp import fresh
from workflows.models.model_names import describe_model
from workflows.models.options import SessionOptions, SessionSetup
from workflows.permissions.bypass import effective_mode
from workflows.settings import Settings


def announce(rec: SessionRecord, headline: str | None = None) -> None:
    """``Resumed session 1a2b3c4d: <title>`` plus what a user needs to know about its state."""
    click.echo(f"{headline or f'Resumed session {rec.id[:8]}'}: {rec.title or '(no messages yet)'}")
    facts = f"  {rec.model} · {rec.permission_mode.value} · {rec.workspace}"
    if rec.state not in (State.IDLE, State.EXTRACTING):
        facts += f" · {rec.state.value} (a message now runs after its current turn)"
    click.echo(click.style(facts, dim=True))


def recap(store, sid: str) -> None:
    """Show the conversation so far, compactly (prompts, the model's text, tool lines; cli/replay.py),
    so you know where it stands, as Claude Code does on a resume."""
    from cli.replay import replay

    r = Renderer(show_prompts=True, show_requests=True)
    replay(store, sid, r, compact=True)
    r.close()


def open_interactive_session(rt: Runtime, settings: Settings, options: SessionOptions, *, resume, continue_, fork,
                             workspace: Path, ask: Callable[[str], str | None] | None = None) -> str:
    """The session the flags name (with ``options`` applied), or a new one with them; announced.

    ``ask``: how a question is put to the person (a new session asks about trust and unapproved .mcp.json
    servers)."""
    check_new_id(rt, options, resume, continue_)
    sid = None if options.session_id else pick_session(rt, resume=resume, continue_=continue_, fork=fork,
                                                       workspace=workspace)
    if sid is None:
        require_model_access(rt, settings, settings.model)

        def vet(resolved):
            if ask is not None:
                resolved.setup.mcp_servers = approve_project_servers(resolved.setup.mcp_servers, workspace, ask)
            return resolved

        opened = service(rt).create(workspace, options, settings, vet=vet,
                                    ask_trust=ask_trust(ask) if ask is not None else None)
        say_warnings(opened.warnings)
        rec = opened.rec
        click.echo(f"New session {rec.id[:8]} in {rec.workspace}")
        click.echo(click.style(f"  {describe_model(rec.model, rec.sent_model())} · {rec.permission_mode.value}",
                               dim=True))
        warn_about_model(rec, lifecycle=False)  # the transcript says it at its first call
        read_commands(rt, rec.id)
        return rec.id
    rec = rt.store.get_session(sid)
    require_model_access(rt, settings, options.model or rec.model)
    trust_note(rt, sid, workspace)
    opened = service(rt).resume(sid, options, workspace)
    say_warnings(opened.warnings)
    rec = opened.rec
    announce(rec, f"Forked session {rec.id[:8]} from {rec.forked_from[:8]}" if rec.forked_from else None)
    recap(rt.store, sid)
    service(rt).mark_start(sid, "resume", rec)  # SessionStart(resume) before its next prompt, if configured
    read_commands(rt, sid)
    return sid


def same_options(old: SessionRecord) -> SessionOptions:
    """/clear's new session: the options of ``old`` (its model, mode, limits), its mode as in effect now."""
    return SessionOptions(model=old.model, permission_mode=effective_mode(old), max_turns=old.max_turns,
                          max_budget_usd=old.max_budget_usd, approval_timeout_seconds=old.approval_timeout_seconds,
                          fallback_model=old.fallback_model)


def same_setup(old: SessionRecord) -> SessionSetup:
    """/clear's new session: the rules, sandbox, hooks, directories, env, MCP servers, output style and plugins of ``old``."""
    return SessionSetup(rules=old.rules.model_copy(deep=True), sandbox=old.sandbox.model_copy(deep=True),
                        hooks=old.hooks, additional_directories=old.additional_directories, env=old.env,
                        model_overrides=old.model_overrides, mcp_servers=fresh(old.mcp_servers),
                        bypass_disabled_by=old.bypass_disabled_by, untrusted_workspace=old.untrusted_workspace,
                        output_style=old.output_style, plugins=old.plugins)


def end_session(rt: Runtime, sid: str, reason: str, rec=None, *, wait: bool = True) -> None:
    """SessionEnd hooks, in a background hook step (nothing in the session waits for it). With the in-process
    worker and ``wait``, let it run before the command exits (at most its hooks' timeouts); without one, a
    worker runs it later. Without SessionEnd hooks: nothing is written or sent."""
    from workflows.models.hooks import HookEvent

    rec = rec or rt.store.get_session(sid)
    steps = service(rt).end(sid, reason, rec)
    if not steps:
        return
    if rt.worker is None or not wait:
        return
    deadline = time.monotonic() + max(h.timeout for h in rec.hooks.for_event(HookEvent.SESSION_END, reason)) + 5
    while time.monotonic() < deadline and not rt.store.get_step(sid, steps[0].id).finished:
        time.sleep(0.1)


__all__ = ["announce", "end_session", "open_interactive_session", "recap", "same_options", "same_setup"]
