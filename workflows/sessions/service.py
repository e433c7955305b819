"""The session service: the one way every front door opens, resumes and drives a session.

The CLI (``mainsail run``/``submit``/``-p``, interactive mode), the SDK's stream-json door, the team
server and a schedule's firing all call :class:`SessionService`: it resolves a new session's
:class:`~workflows.models.options.SessionOptions` once (:func:`workflows.sessions.setup.resolve`:
settings files, bypass policy), applies a resume's options by the same rules wherever it is resumed,
commits through the engine and hands the steps a verb returns to the ``dispatch`` it was given
(``tasks.dispatch.dispatch`` at a terminal or in the server; workflows/ never imports tasks/).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workflows.context.claude_copy import projects_dir
from workflows.mcp.sources import read_mcp_config
from workflows.models import SessionRecord, StepRecord
from workflows.models.options import SessionOptions, SessionSetup
from workflows.models.valid_text import valid_str
from workflows.permissions.bypass import resumed_mode
from workflows.permissions.token_reach import hide_other_workspaces
from workflows.sessions.settings_files import load_permission_settings
from workflows.sessions.setup import Resolved, added_dirs, checked_fallback, resolve

Dispatch = Callable[[list[StepRecord]], None]


@dataclass
class Sent:
    """What :meth:`SessionService.send` did: the queued messages it dropped, the turn it stopped (None: not
    asked to), and the inbox after the message (``queued``: the message waits in it)."""

    dropped: list[str] = field(default_factory=list)
    stopped: object | None = None
    inbox: list[str] = field(default_factory=list)
    queued: bool = False


@dataclass
class Opened:
    """A session opened (made, or taken up again with a resume's options) and what to tell its user."""

    rec: SessionRecord
    warnings: list[str] = field(default_factory=list)


class SessionService:
    """Open, resume, prompt, stop and change sessions through ``engine``; steps go to ``dispatch`` (None: the
    verbs return them undispatched, for a caller that must record something first, as a schedule's firing)."""

    def __init__(self, engine, dispatch: Dispatch | None = None) -> None:
        self.engine = engine
        self.dispatch = dispatch

    @property
    def store(self):
        return self.engine.store

    # ------------------------------------------------------------------ opening

    def create(self, workspace: Path, options: SessionOptions, settings, *, token=None,
               vet: Callable[[Resolved], Resolved] | None = None, **how) -> Opened:
        """A new session in ``workspace`` with ``options`` resolved once against ``settings`` and the
        settings files (``how``: :func:`~workflows.sessions.setup.session_options`'s ``cwd``, ``home``,
        ``mode_given_by``, ``ask_trust``). ``token``: the API token it is made for (its scope is checked, and
        a scoped token's session hides the other tokens' workspaces); ``vet``: a front door's last look at the
        resolved options (the server checks the added directories, a terminal asks about MCP servers).

        Raises:
            SettingsError, McpConfigError, BypassDisabled, ScopeMissing: see :func:`~workflows.sessions.setup.resolve`.
        """
        resolved = resolve(workspace, settings, options, token=token, **how)
        if vet is not None:
            resolved = vet(resolved)
        if token is not None:
            hidden = hide_other_workspaces({"sandbox": resolved.setup.sandbox}, token,
                                           self.store.tokens().records())
            resolved.setup.sandbox = hidden["sandbox"]
        # Claude Code's copy of the transcript, for a person at this machine (not a token's session: the server's
        # machine is not theirs): where their Claude Code keeps its own (workflows/context/claude_copy.py).
        claude = ""
        if token is None and self.engine.settings.claude_transcripts:
            claude = str(projects_dir(resolved.home, how.get("environ") or os.environ))
        rec = self.engine.create_session(str(workspace), resolved.options, resolved.setup, home=resolved.home,
                                         claude_projects=claude, token=token.name if token is not None else "")
        return Opened(rec, resolved.warnings)

    def resume(self, sid: str, options: SessionOptions, workspace: Path) -> Opened:
        """Take session ``sid`` up again with the options a resume gives: model, mode, limits, approval
        timeout; rules, ``add_dirs`` and MCP servers join its own; auto-memory, who answers asks and whether
        its replies' raw events are published (``stream_events``) as given; its offered tools and its
        structured output's schema only when ``options.tools`` and ``options.json_schema`` were set. The mode
        is chosen by :func:`~workflows.permissions.bypass.resumed_mode` (a refused bypassPermissions becomes the
        next mode, with a warning); a ``--settings`` layer that disables bypass joins the session's own. A new
        session's options (prompts, ``session_id``) do not apply. SessionStart(resume) runs before its
        next prompt, if configured."""
        eng, o = self.engine, options
        rec = eng.set_model(sid, o.model) if o.model else None
        mode, disabled_by, warnings = self.resumed_mode(sid, o.permission_mode, workspace, o.extra_settings)
        if o.mcp_configs:
            rec = eng.add_mcp_servers(sid, [s for value in o.mcp_configs for s in read_mcp_config(value, os.environ)])
        if o.add_dirs or o.fallback_model:
            model = (rec or self.store.get_session(sid)).model
            rec = eng.update_limits(sid, additional_directories=added_dirs([], o.add_dirs),
                                    fallback_model=checked_fallback(o.fallback_model, model))
        rules = self._flag_rules(o, workspace)
        if any(v is not None for v in (mode, rules, o.approval_timeout_seconds, o.max_turns, o.max_budget_usd,
                                       disabled_by)):
            eng.update_limits(sid, max_turns=o.max_turns, max_budget_usd=o.max_budget_usd, permission_mode=mode,
                              rules=rules, approval_timeout_seconds=o.approval_timeout_seconds,
                              bypass_disabled_by=disabled_by)
        given = {k: getattr(o, k) for k in ("tools", "json_schema") if k in o.model_fields_set}
        rec = eng.update_limits(sid, auto_memory=False if o.no_memory else None, asks=o.asks,
                                stream_events=o.stream_events, **given)
        return Opened(rec, warnings)

    def resumed_mode(self, sid: str, permission_mode, workspace: Path, extra_settings=None):
        """The mode to set on a session taken up again (None: keep its own), the ``--settings`` layers that
        disable bypassPermissions (None: none) and the warnings (a refused bypassPermissions)."""
        disabled_by = None
        if extra_settings:
            disabled_by = load_permission_settings(workspace.resolve(), Path.home(), sources=(),
                                                   extra=extra_settings).bypass_disabled_by or None
        mode, warnings = resumed_mode(self.store.get_session(sid), permission_mode, disabled_by or ())
        return mode, disabled_by, warnings

    @staticmethod
    def _flag_rules(o: SessionOptions, workspace: Path):
        """A resume's --allowedTools / --disallowedTools as rules (None: none given)."""
        if not (o.allowed_tools or o.disallowed_tools):
            return None
        rules = load_permission_settings(workspace.resolve(), Path.home(), allowed_tools=list(o.allowed_tools),
                                         disallowed_tools=list(o.disallowed_tools)).rules
        rules.allow = [r for r in rules.allow if r.source == "--allowedTools"]
        rules.deny = [r for r in rules.deny if r.source == "--disallowedTools"]
        rules.ask = []
        return rules

    def exists(self, sid: str) -> bool:
        """Whether a session ``sid`` exists (a new session's ``session_id`` must not)."""
        return self.store.session_exists(sid)

    def memory_index(self, rec: SessionRecord) -> str:
        """The MEMORY.md index of the session's project ("" without auto-memory or records)."""
        if not (rec.auto_memory and rec.project_id):
            return ""
        return self.store.project_memory(rec.project_id, rec.project_root).index()

    # ------------------------------------------------------------------ prompting and stopping

    def submit(self, sid: str, prompt: str, once: str | None = None, *,
               recorded: Callable[[], None] | None = None) -> list[StepRecord]:
        """Run ``prompt`` now, or queue it while the session is busy; its steps are dispatched.
        ``recorded()`` is called once the prompt is in the session (also when the commit failed), before
        anything is dispatched: a terminal takes the message out of its draft then."""
        try:
            steps = self.engine.submit(sid, prompt, once=once) if once is not None else self.engine.submit(sid, prompt)
        finally:
            if recorded is not None:
                recorded()
        return self._sent(steps)

    def send(self, sid: str, message: str | None, *, interrupt: bool = False, clear: bool = False) -> Sent:
        """``mainsail send`` / ``POST .../messages``: drop the queue (``clear``), stop the running turn
        (``interrupt``), then submit ``message`` (None: nothing), which runs now or waits in the inbox."""
        sent = Sent()
        if clear:
            sent.dropped = self.engine.clear_queue(sid)
        if interrupt:
            sent.stopped = self.stop(sid, "Interrupted by a new message")
        if message is not None:
            self.submit(sid, message)
            sent.inbox = self.store.inbox(sid)
            sent.queued = valid_str(message) in sent.inbox  # (as the inbox holds it: workflows/models/valid_text.py)
        return sent

    def stop(self, sid: str, reason: str = "Cancelled by user", *, clear_queue: bool = False):
        """Cancel the running turn (:meth:`Engine.stop`); the message that starts next is dispatched."""
        stopped = self.engine.stop(sid, reason, clear_queue=clear_queue)
        self._sent(stopped.steps)
        return stopped

    def unqueue(self, sid: str, texts: list[str]) -> None:
        """Take ``texts`` (each once) out of the session's inbox, under the engine's lock: messages that
        had not started yet (an interrupted terminal puts them back in its draft)."""
        with self.store.lock(sid):
            for text in texts:
                self.store.remove_queued(sid, text)

    def compact(self, sid: str, instructions: str | None = None) -> list[StepRecord]:
        """Compact an idle session now; the compaction's steps are dispatched."""
        return self._sent(self.engine.compact(sid, instructions))

    def decide(self, sid: str, request: str | None, approve: bool, **how) -> list[StepRecord]:
        """Answer a permission request (:meth:`Engine.decide_request`); the steps it frees are dispatched."""
        return self._sent(self.engine.decide_request(sid, request, approve, **how))

    def answer_hooks(self, sid: str, request_id: str, runs) -> list[StepRecord]:
        """An SDK client ran a call's hook callbacks (:meth:`Engine.answer_client_hooks`); dispatched."""
        return self._sent(self.engine.answer_client_hooks(sid, request_id, runs))

    def answer_mcp(self, sid: str, request_id: str, result: dict) -> list[StepRecord]:
        """An SDK client's MCP server answered a call (:meth:`Engine.answer_client_mcp`); dispatched."""
        return self._sent(self.engine.answer_client_mcp(sid, request_id, result))

    def record_client_servers(self, sid: str, found: dict) -> None:
        """What an SDK client's connection found of its in-process MCP servers (workflows.mcp.client)."""
        self.engine.record_client_servers(sid, found)

    def reconnect_mcp(self, sid: str, name: str) -> None:
        """Connect an MCP server again (found again at the next prompt).

        Raises:
            KeyError: no server of that name in the session.
        """
        self.engine.reset_mcp_server(sid, name)

    def end(self, sid: str, reason: str, rec: SessionRecord | None = None) -> list[StepRecord]:
        """SessionEnd hooks in a background step (none configured: nothing); dispatched."""
        return self._sent(self.engine.end_session(sid, reason, rec))

    # ------------------------------------------------------------------ changing a session

    def fresh(self, workspace: Path, options: SessionOptions, setup: SessionSetup | None = None, *,
              home: str | None = None, tools_queue: str = "tools") -> SessionRecord:
        """A new session with ``options`` and ``setup`` taken as they are, resolved already (``/clear``
        starts one with the old session's; the demo with its own), unlike :meth:`create`."""
        return self.engine.create_session(str(workspace), options, setup, home=home, tools_queue=tools_queue)

    def fork(self, sid: str) -> SessionRecord:
        """A new session that goes on from a copy of ``sid``'s conversation (``--fork-session``)."""
        return self.engine.fork_session(sid)

    def mark_start(self, sid: str, source: str, rec: SessionRecord | None = None) -> bool:
        """SessionStart hooks (``source``: resume, clear...) run before the session's next prompt, if any
        are configured; True when some will."""
        return self.engine.mark_session_start(sid, source, rec)

    def set_model(self, sid: str, model: str) -> SessionRecord:
        """``/model``: the model of the session's next call."""
        return self.engine.set_model(sid, model)

    def update_limits(self, sid: str, **limits) -> SessionRecord:
        """Change a session's limits (:meth:`Engine.update_limits`: permission mode, turns, budget, added
        directories...)."""
        return self.engine.update_limits(sid, **limits)

    def clear_queue(self, sid: str) -> list[str]:
        """Drop the messages waiting in the session's inbox; the dropped texts."""
        return self.engine.clear_queue(sid)

    def refresh_commands(self, sid: str) -> list[str]:
        """Read the session's custom command files afresh; what was left out, one line each."""
        return self.engine.refresh_commands(sid)

    def add_hooks(self, sid: str, hooks) -> None:
        """Add an SDK client's callback hooks to the session."""
        self.engine.add_hooks(sid, hooks)

    def add_agents(self, sid: str, agents) -> SessionRecord:
        """Add sub-agent types (the SDK's ``agents`` option) to the session."""
        return self.engine.add_agents(sid, agents)

    def context_size(self, rec: SessionRecord) -> int:
        """The tokens the session's next model call would send."""
        return self.engine.context_size(rec)

    def rewind_points(self, sid: str):
        """The user messages ``/rewind`` can go back to, oldest first."""
        return self.engine.rewind_points(sid)

    def rewind(self, sid: str, to: str, **how):
        """Rewind to the user message ``to`` (:meth:`Engine.rewind`: the code, the conversation or both)."""
        return self.engine.rewind(sid, to, **how)

    def remove(self, sid: str, *, force: bool = False):
        """Remove a session and what it saved (:meth:`Engine.delete_session`); what was removed."""
        return self.engine.delete_session(sid, force=force)

    def _sent(self, steps: list[StepRecord]) -> list[StepRecord]:
        if steps and self.dispatch is not None:
            self.dispatch(steps)
        return steps


__all__ = ["Opened", "Sent", "SessionService"]
