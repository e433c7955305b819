"""Print mode (``mainsail -p``, and the Agent SDK's connection): open the session, run, print.

Print mode never waits for a person: a call that would ask is denied at once and listed in the
result's ``permission_denials``, as in Claude Code, unless the client answers asks
(``--permission-prompt-tool stdio``) or ``--approval-timeout`` says how long to wait for
``mainsail approve`` from another shell.
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from cli.attach import finish, submit_and_watch, wait_for_memory
from cli.connect import Runtime, connect
from cli.headless.leave import interrupt_on_leave
from cli.opening import open_session, session_model
from cli.output import StreamJson, result_json
from cli.session_service import service
from cli.slash_commands import unknown_command_note
from cli.standby import ensure_worker, require_model_access
from workflows.models import PermissionMode
from workflows.models.options import SessionOptions
from workflows.settings import load_settings


def api_key_source(rt: Runtime, settings) -> str:
    """``apiKeySource`` as Claude Code reports it: whether the model calls will carry a key."""
    if settings.anthropic_api_key:
        return "ANTHROPIC_API_KEY"
    workers = rt.store.workers.live().values()
    if any(i.get("api_key") == "yes" and "model" in i.get("queues", "").split(",") for i in workers):
        return "ANTHROPIC_API_KEY"
    return "none"


@dataclass
class PrintRun:
    """One print-mode command: ``options`` for the session (new, or the one ``resume``/``continue_`` name,
    forked with ``fork``), and how the run is fed and printed."""

    prompt: str | None
    output_format: str
    streaming: bool
    options: SessionOptions
    resume: str | None = None
    continue_: bool = False
    fork: bool = False
    prompt_tool: bool = False
    partial_messages: bool = False
    replay_user_messages: bool = False
    workspace: Path | None = None  # default: the current directory
    # --allow-dangerously-skip-permissions: an SDK client may switch to bypassPermissions (as it may when the
    # command starts in it).
    allow_bypass: bool = False

    def asks(self, settings) -> str:
        waits = self.prompt_tool or self.options.approval_timeout_seconds or settings.approval_timeout_seconds
        return "wait" if waits else "deny"

    @property
    def stream_events(self) -> bool:
        """The session publishes its replies' raw events (they become ``stream_event`` lines)."""
        return self.partial_messages and self.output_format == "stream-json"

    def run(self) -> None:
        settings = load_settings(model=self.options.model)
        workspace = self.workspace or Path.cwd()
        rt = connect(settings)
        result = None
        try:
            # Before anything is created: a refusal must not leave an empty session behind.
            require_model_access(rt, settings, self.options.model or session_model(rt, self.resume, self.continue_,
                                                                                    workspace, settings))
            # Print mode always sets the tools offered (None: all) and the structured output's schema (None: none),
            # on a resumed session too: they are this command's.
            options = self.options.model_copy(update={"asks": self.asks(settings), "tools": self.options.tools,
                                                      "json_schema": self.options.json_schema,
                                                      "stream_events": self.stream_events})
            sid = open_session(rt, settings, options, resume=self.resume, continue_=self.continue_, fork=self.fork,
                               workspace=workspace)
            ensure_worker(rt, settings, quiet=True, sid=sid)
            # The client leaving (SIGTERM, SIGHUP) interrupts the turn, as in Claude Code (cli/headless/leave.py).
            with interrupt_on_leave(sid, lambda why: service(rt).stop(sid, why, clear_queue=True)):
                if self.output_format == "stream-json":
                    result = self._stream(rt, settings, sid)
                else:
                    note = unknown_command_note(self.prompt, rt.store.commands(sid))
                    if note:
                        click.echo(f"mainsail: {note}", err=True)
                    result = submit_and_watch(rt, sid, self.prompt, print_mode=True)
            if rt.worker is not None:
                wait_for_memory(rt, sid, quiet=True)
        finally:
            rt.close()
        if getattr(self, "unfinished", False):
            sys.exit(1)
        if result is None:
            return
        if self.output_format == "json":
            click.echo(json.dumps(result_json(result, _last_stop_reason(rt, result))))
        elif self.output_format == "text":
            finish(result, print_mode=True)
        if result.is_error:
            sys.exit(1)

    def _stream(self, rt: Runtime, settings, sid: str):
        from cli.headless.stream import StreamServer

        out = StreamJson(sys.stdout.write, sys.stdout.flush, replay_user_messages=self.replay_user_messages,
                         partial_messages=self.partial_messages)
        stdin = sys.stdin if self.streaming else as_stream_input(self.prompt)
        allow_bypass = self.allow_bypass or self.options.permission_mode is PermissionMode.BYPASS
        server = StreamServer(rt, sid, out, prompt_tool=self.prompt_tool, api_key_source=api_key_source(rt, settings),
                              stdin=stdin, allow_bypass=allow_bypass)
        result = server.serve()
        if server.abandoned:
            self.unfinished = True
        return result


def as_stream_input(prompt: str) -> io.StringIO:
    """A prompt given as an argument, as the one user line of a stream-json conversation."""
    return io.StringIO(json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n")


def _last_stop_reason(rt: Runtime, result) -> str | None:
    """The stop reason of the run's last model reply (for the json result)."""
    from workflows.models import AssistantEntry

    try:
        entries = rt.store.entries(result.session_id)
    except Exception:  # the result itself is what matters
        return None
    for e in reversed(entries):
        if isinstance(e, AssistantEntry):
            return e.message.stop_reason
    return None


__all__ = ["PrintRun", "api_key_source", "as_stream_input"]
