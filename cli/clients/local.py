"""The client protocol (:mod:`cli.clients.protocol`) on this machine's Redis: each verb through the session
service (:mod:`workflows.sessions.service`), its steps dispatched to the workers."""

from __future__ import annotations

import sys

import click

from cli.clients.protocol import cut, decided_line
from cli.readonly import existing_runtime
from cli.session_service import service
from workflows.models.valid_text import valid_str
from workflows.settings import load_settings

# (Each verb imports what only it needs: `approve` and `send` load neither the renderer nor the session
# opening, and their start stays short: bench/README.md.)


class LocalClient:
    """:class:`cli.clients.protocol.SessionClient` on Redis (``MAINSAIL_SERVER`` unset)."""

    def submit(self, prompt: str, *, model, resume, continue_, fork, max_turns, max_budget_usd, workspace,
               permission_mode, allowed_tools, disallowed_tools, approval_timeout, system_prompt,
               append_system_prompt, no_memory, add_dirs, fallback_model, mcp_config, strict_mcp_config) -> None:
        from cli.connect import connect
        from cli.opening import background_note, flag_options, open_session, session_model
        from cli.standby import require_model_access
        from workflows.mcp.sources import McpFlags

        settings = load_settings(model=model)
        rt = connect(settings)
        require_model_access(rt, settings, model or session_model(rt, resume, continue_, workspace, settings))
        options = flag_options(
            model=model, permission_mode=permission_mode, allowed_tools=allowed_tools,
            disallowed_tools=disallowed_tools, approval_timeout=approval_timeout, add_dirs=add_dirs,
            mcp=McpFlags(tuple(mcp_config), strict_mcp_config), max_turns=max_turns, max_budget_usd=max_budget_usd,
            system_prompt=system_prompt, append_system_prompt=append_system_prompt, no_memory=no_memory,
            fallback_model=fallback_model)
        sid = open_session(rt, settings, options, resume=resume, continue_=continue_, fork=fork, workspace=workspace)
        service(rt).submit(sid, prompt)
        background_note(rt, sid)

    def send(self, session: str, message: str | None, *, interrupt: bool, clear: bool) -> None:
        rt = existing_runtime(what=f"no session {session!r} to send to", code=1)
        sid = rt.store.resolve_session(session)
        sent = service(rt).send(sid, message, interrupt=interrupt, clear=clear)
        if clear:
            dropped = sent.dropped
            click.echo(f"Dropped {_messages(len(dropped))} queued for session {sid[:8]}"
                       + (": " + ", ".join(repr(cut(m, 40)) for m in dropped) if dropped else "") + ".")
        if interrupt and sent.stopped.cancelled:
            click.echo(f"Interrupted the running turn of session {sid[:8]}.")
        if message is None:
            return
        inbox = sent.inbox
        message = valid_str(message)  # (as the inbox holds it: workflows/models/valid_text.py)
        if not sent.queued:
            click.echo(f"Sent to session {sid[:8]}; it is working on it. Watch: mainsail watch {sid[:8]}")
            return
        n, where = len(inbox), len(inbox) - inbox[::-1].index(message)
        click.echo(f"Session {sid[:8]} is busy; queued as message {where} of {n}: it runs after the current turn"
                   + (" and the messages before it" if where > 1 else "") + ", in the order sent.")

    def cancel(self, session: str, *, clear: bool) -> None:
        rt = existing_runtime(what=f"no session {session!r} to cancel", code=1)
        sid = rt.store.resolve_session(session)
        stopped = service(rt).stop(sid, clear_queue=clear)
        from workflows.commit.support import cancel_message

        click.echo(cancel_message(sid, stopped))

    def decide(self, session: str, request: str | None, approve: bool, *, always: bool = False,
               message: str | None = None) -> None:
        rt = existing_runtime(what=f"no session {session!r} to decide for", code=1)
        from workflows.engine.approvals import request_of

        sid, req = request_of(rt.store, rt.store.resolve_session(session), request)
        steps = service(rt).decide(sid, req.id, approve, always=always, message=message)
        click.echo(decided_line(approve, req.tool, req.summary, sid, req.id, always, req.always))
        if steps and not ({"model", "tools"} & rt.store.live_queues()):
            click.echo("No worker is listening, so the session waits in its queue: start `mainsail worker`.",
                       err=True)

    def compact(self, session: str, instructions: str | None) -> None:
        from rich.console import Console

        from cli.follow import follow
        from cli.render import Renderer
        from cli.standby import ensure_worker
        from workflows.models import ResultEntry

        settings = load_settings()
        rt = existing_runtime(settings, what=f"no session {session!r} to compact", code=1)
        try:
            sid = rt.store.resolve_session(session)
            ensure_worker(rt, settings)
            after = rt.store.read_log(sid)[-1][0] if rt.store.log_length(sid) else None
            service(rt).compact(sid, instructions)
            r = Renderer(Console(highlight=False, soft_wrap=True), show_prompts=False)
            result = follow(rt.store, sid, on_entry=r.entry, after=after, stop=lambda e: isinstance(e, ResultEntry))
        finally:
            rt.close()
        click.echo(result.result if not result.is_error else f"Error: {result.result}")
        if result.is_error:
            sys.exit(1)


def _messages(n: int) -> str:
    return f"{n} message{'s' if n != 1 else ''}"


__all__ = ["LocalClient", "cut"]
