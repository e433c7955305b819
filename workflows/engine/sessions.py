"""Creating, prompting, stopping, changing and removing sessions (the human-paced verbs).

A part of :class:`workflows.engine.Engine` (``engine.sessions``); it commits through
:class:`workflows.commit.Committer`.
"""

from __future__ import annotations

import os
import time
from datetime import date
from typing import Callable

from statemachines import State
from workflows.agents import load_agents, plugin_agents
from workflows.commit import Part, Tx, peers, retry_on_conflict
from workflows.commit.support import _git_branch, stop_shells
from workflows.context import claude_md
from workflows.context import files as context_files
from workflows.context.claude_copy import host, project_key
from workflows.exceptions import (
    SessionBusy,
    SessionNotFound,
)
from workflows.memory.access import MemoryAccess
from workflows.memory.records import (
    memory_context,
    project_id,
    project_root,
)
from workflows.model.tokens import estimate_tokens
from workflows.models import (
    PermissionMode,
    ResultEntry,
    RuleSet,
    SandboxSettings,
    SessionRecord,
    StepRecord,
    new_id,
)
from workflows.models.mcp import fresh
from workflows.models.options import SessionOptions, SessionSetup
from workflows.permissions import bypass
from workflows.permissions.decide import read_denied_for
from workflows.permissions.rules.paths import WorkArea
from workflows.store.housekeeping import Removal, apply_removal, busy_reason, plan_removal


class SessionVerbs(Part):
    """Creating, prompting, stopping, changing and removing sessions (the human-paced verbs)."""

    hooks: peers.Hooks

    def create_session(self, workspace: str, options: SessionOptions | None = None,
                       setup: SessionSetup | None = None, *, home: str | None = None,
                       tools_queue: str = "tools", claude_projects: str = "", token: str = "") -> SessionRecord:
        """Create an idle session for ``workspace`` (an existing directory) with ``options``, as resolved by
        :class:`workflows.sessions.service.SessionService` (unset ones: this engine's settings), and
        ``setup``, what the settings files add (rules, sandbox, hooks, MCP servers...; None: nothing).
        ``home``: the submitting user's home (default: this process's); ``tools_queue``: its tools' queue;
        ``claude_projects``: where this machine's Claude Code keeps transcripts (its copy is written there:
        workflows/context/claude_copy.py; "": none).

        Raises:
            BypassDisabled: the mode is bypassPermissions and it is disabled (:mod:`workflows.permissions.bypass`).

        With auto-memory on (not ``options.no_memory`` and the setting), the session belongs to the project
        of its git root and starts with that project's MEMORY.md index in its context.
        """
        opts, setup = options or SessionOptions(), setup or SessionSetup()
        ws = os.path.realpath(workspace)
        if not os.path.isdir(ws):
            raise FileNotFoundError(f"Workspace {workspace!r} is not a directory")
        home = home or os.path.expanduser("~")
        permission_mode = PermissionMode(opts.permission_mode or self.settings.permission_mode or "default")
        bypass.require(permission_mode, workspace=ws, home=home, recorded=setup.bypass_disabled_by)
        rec = SessionRecord(
            id=opts.session_id or new_id(),
            model=opts.model or self.settings.model,
            permission_mode=permission_mode,
            workspace=ws,
            git_branch=_git_branch(ws),
            max_turns=opts.max_turns if opts.max_turns is not None else self.settings.max_turns,
            max_budget_usd=opts.max_budget_usd,
            tools_queue=tools_queue,
            rules=setup.rules,
            asks=opts.asks,
            stream_events=opts.stream_events,
            tools=opts.tools,
            json_schema=opts.json_schema,
            home=home,
            custom_system_prompt=opts.system_prompt,
            append_system_prompt=opts.append_system_prompt,
            approval_timeout_seconds=opts.approval_timeout_seconds or self.settings.approval_timeout_seconds,
            sandbox=setup.sandbox or SandboxSettings(),
            hooks=setup.hooks,
            additional_directories=list(setup.additional_directories),
            env={**opts.env, **setup.env},
            model_env=dict(opts.model_env),
            model_overrides=dict(setup.model_overrides),
            fallback_model=opts.fallback_model,
            mcp_servers=list(setup.mcp_servers),
            bypass_disabled_by=list(setup.bypass_disabled_by),
            untrusted_workspace=setup.untrusted_workspace,
            token=token,
            output_style=setup.output_style,
            plugins=list(setup.plugins),
        )
        if claude_projects:
            rec.claude_transcript = os.path.join(claude_projects, project_key(ws), f"{rec.id}.jsonl")
            rec.claude_host = host()
        # Computed once, here: a resumed session, or any worker, sends the same bytes (the cache holds).
        rec.system_context = context_files.system_context(ws)
        rec.agents = load_agents(ws, rec.home, {**plugin_agents(rec.plugins), **(opts.agents or {})})
        rec.auto_memory = False if opts.no_memory else self.settings.auto_memory
        index = ""
        if rec.auto_memory:
            rec.project_root = project_root(ws)
            rec.project_id = project_id(rec.project_root)
            index = self.store.project_memory(rec.project_id, rec.project_root).index(
                self.settings.memory_index_lines)
        # The memory files' imports read only what a Read of this session could (issue 25, item 5).
        access = MemoryAccess(WorkArea(ws, rec.additional_directories), rec.home, read_denied_for(rec))
        rec.user_context = claude_md.user_context(ws, rec.home, date.today(),
                                                      auto_memory=memory_context(index), access=access,
                                                      sources=opts.setting_sources)
        rec.context_added = estimate_tokens(rec.system_context + rec.user_context)
        self.store.create_session(rec)
        return rec

    @retry_on_conflict
    def set_model(self, sid: str, model: str) -> SessionRecord:
        """Switch the model for the session's next calls (usage and cost stay per model)."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            rec.model = model
            self.committer.commit(Tx(rec))
        return rec

    @retry_on_conflict
    def update_limits(self, sid: str, *, max_turns: int | None = None, max_budget_usd: float | None = None,
                      permission_mode: PermissionMode | str | None = None, rules: RuleSet | None = None,
                      approval_timeout_seconds: float | None = None, auto_memory: bool | None = None,
                      asks: str | None = None, stream_events: bool | None = None,
                      tools: list[str] | None = ..., json_schema: dict | None = ...,
                      additional_directories: list[str] | None = None,
                      fallback_model: str | None = None,
                      bypass_disabled_by: list[str] | None = None,
                      removed_rules: RuleSet | None = None) -> SessionRecord:
        """Change a session's limits, mode, rules (added to its own), approval timeout, auto-memory, who
        answers its asks (``asks``, see :attr:`SessionRecord.asks`), whether its replies' raw events are published
        (``stream_events``), the tools it offers (``tools``: a
        list, or None for all; left as is unless given), its structured output's schema (``json_schema``:
        None for none; left as is unless given), added directories (joining its own),
        fallback model, or sources disabling bypassPermissions (``bypass_disabled_by``, joining its own);
        ``removed_rules`` go first (each rule with the source it must have: workflows/permissions/updates.py).

        Raises:
            BypassDisabled: ``permission_mode`` is bypassPermissions and it is disabled for the session.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            if asks is not None:
                rec.asks = asks
            if stream_events is not None:
                rec.stream_events = stream_events
            if tools is not ...:
                rec.tools = None if tools is None else list(tools)
            if json_schema is not ...:
                rec.json_schema = json_schema
            for path in additional_directories or ():
                if path not in rec.additional_directories:
                    rec.additional_directories.append(path)
            if fallback_model is not None:
                rec.fallback_model = fallback_model
            if auto_memory is False:  # turning it on later would need the project's index in the context
                rec.auto_memory = False
            for kind in ("allow", "ask", "deny") if removed_rules is not None else ():
                gone = {(r.rule, r.source) for r in getattr(removed_rules, kind)}
                setattr(rec.rules, kind, [r for r in getattr(rec.rules, kind) if (r.rule, r.source) not in gone])
            if rules is not None:
                for kind in ("allow", "ask", "deny"):
                    for spec in getattr(rules, kind):
                        rec.rules.add(kind, spec.rule, spec.source)
            if approval_timeout_seconds is not None:
                rec.approval_timeout_seconds = approval_timeout_seconds
            if max_turns is not None:
                rec.max_turns = max_turns
            if max_budget_usd is not None:
                rec.max_budget_usd = max_budget_usd
            for source in bypass_disabled_by or ():
                if source not in rec.bypass_disabled_by:
                    rec.bypass_disabled_by.append(source)
            if permission_mode is not None:
                bypass.require(permission_mode, workspace=rec.workspace, home=rec.home,
                               recorded=rec.bypass_disabled_by)
                rec.permission_mode = PermissionMode(permission_mode)
            self.committer.commit(Tx(rec))
        return rec

    def fork_session(self, sid: str) -> SessionRecord:
        """Copy a session's transcript into a new session; the original is left untouched.

        A busy session is copied up to the end of its last finished run, so the
        fork never holds a tool call without its result.
        """
        with self.store.lock(sid):
            src = self.store.get_session(sid)
            entries = self.store.entries(sid)
        if src.state is not State.IDLE:
            ends = [i for i, e in enumerate(entries) if isinstance(e, ResultEntry)]
            entries = entries[: ends[-1] + 1] if ends else []
        rec = src.model_copy(deep=True, update={
            "id": new_id(), "state": State.IDLE, "epoch": 0, "forked_from": src.id, "tool_calls": [],
            "memory_step": None, "memory_trailing": False, "extract_step": None, "extract_trailing": False,
            "permission_requests": [], "current_batch": 0, "created_at": time.time(),
            "command": None, "run_model": None, "run_allow": [],
            "last_uuid": entries[-1].uuid if entries else None,
            # Its MCP servers are found again at its first prompt (their tool list is the original's key).
            "mcp_tools_digest": None,
            "mcp_servers": fresh(src.mcp_servers),
        })
        self.store.create_session(rec)
        p = self.store.pipeline()
        copies = []
        for e in entries:
            e.session_id = rec.id
            copies.append(e)
        self.store.append(rec.id, copies, p)
        self.store.save_session(rec, p)
        self.store.copy_reads_and_commands(sid, rec.id, p)
        p.execute()
        return rec

    def delete_session(self, sid: str, *, force: bool = False,
                       check: Callable[[SessionRecord], bool] | None = None) -> Removal | None:
        """Remove a session: its keys, its members of the shared sets, its saved tool results.

        Under the session's lock. ``check`` (gc's re-check of age and state) may
        decline: then nothing is removed and None is returned.

        Raises:
            SessionBusy: the session is busy and ``force`` is not set (cancel it first:
                ``mainsail rm --force`` does).
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            steps = self.store.steps(sid)
            if check is not None and not check(rec):
                return None
            why = busy_reason(rec, steps)
            if why and not force:
                raise SessionBusy(f"Cannot remove session {sid[:8]}: {why}. Wait for it, or "
                                  f"`mainsail rm --force {sid[:8]}` (cancels it first).")
            removal = plan_removal(self.store, rec)
            apply_removal(self.store, removal)
        for child in rec.children:  # its sub-agents' sessions go with it (nothing lists them without it)
            try:
                self.delete_session(child, force=True)
            except SessionNotFound:
                pass
        return removal

    def end_session(self, sid: str, reason: str, rec: SessionRecord | None = None) -> list[StepRecord]:
        """An interactive session ends (``reason``: clear, logout, prompt_input_exit, other): its background shells
        are stopped, and SessionEnd hooks run in a background step (:meth:`HookCommits.session_end`). Nothing
        waits for it and it cannot block. Without such hooks: no write, no step."""
        stop_shells(self.store, sid, "the session ended")
        return self.hooks.session_end(sid, reason, rec)
