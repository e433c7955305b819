"""Opening the session a command's flags name: a new one with their options, or one taken up again
(``--resume``, ``--continue``, ``--fork-session``) with them applied, through the session service
(:mod:`workflows.sessions.service`). Shared by ``mainsail run``, ``submit`` (its local client,
cli/clients/local.py), print mode and the SDK's stream-json door (cli/headless/), and interactive mode
(cli/interactive_open.py).
"""

from __future__ import annotations

from pathlib import Path

import click

from cli.agents_flag import flag_agents
from cli.connect import Runtime
from cli.select import pick_session
from cli.session_service import say_warnings, service
from cli.slash_commands import read_commands
from cli.trust_flag import flag_trust
from workflows.mcp.sources import McpFlags
from workflows.model.lifecycle import lifecycle_note
from workflows.model.pricing import known_price, unknown_price_note
from workflows.models import PermissionMode
from workflows.models.options import SessionOptions

MODES = [m.value for m in PermissionMode]


def flag_options(*, model=None, permission_mode=None, allowed_tools=(), disallowed_tools=(), approval_timeout=None,
                 add_dirs=(), mcp: McpFlags = McpFlags(), **more) -> SessionOptions:
    """The options a command's flags give (``more``: the others by their :class:`SessionOptions` names), with
    this command's ``--agents`` and ``--trust-project``."""
    return SessionOptions(model=model, permission_mode=permission_mode, allowed_tools=list(allowed_tools),
                          disallowed_tools=list(disallowed_tools), approval_timeout_seconds=approval_timeout,
                          add_dirs=list(add_dirs), mcp_configs=list(mcp.configs), strict_mcp_config=mcp.strict,
                          agents=flag_agents(), trust=flag_trust(), **more)


def check_new_id(rt: Runtime, options: SessionOptions, resume, continue_) -> None:
    """``--session-id`` names a new session: not with --resume/--continue, and not one that exists."""
    sid = options.session_id
    if sid is None:
        return
    if resume or continue_:
        raise click.UsageError("--session-id starts a new session; it cannot go with --resume or --continue "
                               "(unless --fork-session names the copy's id, which Mainsail does not do).")
    if service(rt).exists(sid):
        raise click.UsageError(f"Session ID {sid} is already in use.")


def open_session(rt: Runtime, settings, options: SessionOptions, *, resume, continue_, fork, workspace: Path,
                 watched: bool = False) -> str:
    """The session these flags name (resumed, continued or forked, with ``options`` applied), or a new one.

    ``options.asks``: who answers its calls that would ask from now on ("deny": nobody, as in print mode);
    ``options.session_id``: the id of the new session (Claude Code's --session-id); it must not exist yet.
    ``watched``: the command shows the transcript as it runs (see :func:`warn_about_model`).
    """
    check_new_id(rt, options, resume, continue_)
    sid = None if options.session_id else pick_session(rt, resume=resume, continue_=continue_, fork=fork,
                                                       workspace=workspace)
    if sid is None:
        opened = service(rt).create(workspace, options, settings)
    else:
        trust_note(rt, sid, workspace)
        opened = service(rt).resume(sid, options, workspace)
        service(rt).mark_start(sid, "resume", opened.rec)  # SessionStart(resume) before its next prompt
    say_warnings(opened.warnings)
    warn_about_model(opened.rec, lifecycle=not watched)
    read_commands(rt, opened.rec.id)
    return opened.rec.id


def background_note(rt: Runtime, sid: str) -> None:
    """What ``submit`` and ``run --background`` print once the prompt is queued: the session id on stdout, how
    to watch it (and that no worker listens, if so) on stderr."""
    click.echo(sid)
    if not ({"model", "tools"} <= rt.store.live_queues()):
        click.echo("No worker is listening: the session waits in its queue until you start `mainsail worker`.",
                   err=True)
    click.echo(f"Watch it with: mainsail watch {sid[:8]}", err=True)


def trust_note(rt: Runtime, sid: str, workspace: Path) -> None:
    """``--trust-project`` applies to new sessions only: a session keeps the settings it started with (the
    trust is recorded for the next ones)."""
    if flag_trust() and rt.store.get_session(sid).untrusted_workspace:
        from workflows.trust.decide import workspace_trust

        workspace_trust(workspace.resolve(), Path.home(), grant=flag_trust())  # recorded for the next sessions
        click.secho(f"Warning: --trust-project applies to new sessions: session {sid[:8]} keeps the settings it "
                    "started with (without the workspace's own); the trust is recorded for the next ones.",
                    fg="yellow", err=True)


def session_model(rt: Runtime, resume: str | None, continue_: bool, workspace: Path, settings) -> str:
    """The model the session these flags name uses (a new one: the configured model); creates nothing."""
    from cli.select import latest_in

    if resume or continue_:
        sid = rt.store.resolve_session(resume) if resume else latest_in(rt, workspace)
        return rt.store.get_session(sid).model
    return settings.model


def warn_about_model(rec, *, lifecycle: bool = True) -> None:
    """Say once, at the start, that the session's model has no price (its cost will show as unknown), or is
    near or past its end of life (workflows/model/lifecycle.py). ``lifecycle`` False: the command shows the
    transcript as it runs, where the session says the latter itself (at its first call), so not twice."""
    sent = rec.sent_model()
    if not known_price(sent):
        click.secho(f"Warning: {unknown_price_note(sent)}", fg="yellow", err=True)
    if lifecycle and (note := lifecycle_note(sent)):
        click.secho(f"Warning: {note}", fg="yellow", err=True)


def asks_in_print_mode(settings, approval_timeout) -> str:
    """Print mode asks nobody, as Claude Code's -p: a call that would ask is denied and listed in the
    result. An approval timeout (flag or MAINSAIL_APPROVAL_TIMEOUT_SECONDS) makes it wait that long for
    an answer from another shell (`mainsail approve`) instead."""
    return "wait" if (approval_timeout or settings.approval_timeout_seconds) else "deny"


__all__ = ["MODES", "asks_in_print_mode", "background_note", "check_new_id", "flag_options", "open_session",
           "session_model", "trust_note", "warn_about_model"]
