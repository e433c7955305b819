"""Creating, prompting, stopping, changing and removing sessions (the human-paced verbs).

A part of :class:`workflows.engine.Engine` (a mixin); see :mod:`workflows.engine.commit` for the
commit every event goes through.
"""

from __future__ import annotations

import os
import time
from datetime import date
from typing import Callable

from statemachines import State
from workflows import context_files, keys
from workflows.engine.support import (
    Stopped,
    stop_shells,
    _git_branch,
    _reset_run_figures,
    _Tx,
    require_idle,
    retry_on_conflict,
)
from workflows.exceptions import (
    ContextFull,
    SessionBusy,
    SessionNotFound,
)
from workflows.housekeeping import Removal, apply_removal, busy_reason, plan_removal
from workflows.mcp.config import fresh
from workflows.memory import (
    ProjectMemory,
    memory_context,
    project_id,
    project_root,
)
from workflows.agents import load_agents
from workflows.models import (
    PermissionMode,
    ResultEntry,
    RuleSet,
    SandboxSettings,
    SessionRecord,
    StepRecord,
    SystemEntry,
    Usage,
    new_id,
)
from workflows.memory_access import MemoryAccess
from workflows.sessions.options import SessionOptions, SessionSetup
from workflows.permissions import bypass
from workflows.permissions.decide import read_denied_for
from workflows.permissions.paths import WorkArea
from workflows.tokens import estimate_tokens, thresholds

#: Message keys a session remembers (:meth:`SessionVerbs.submit`'s ``once``).
SUBMIT_KEYS_KEPT = 20


class SessionVerbs:
    """Creating, prompting, stopping, changing and removing sessions (the human-paced verbs)."""

    def create_session(self, workspace: str, options: SessionOptions | None = None,
                       setup: SessionSetup | None = None, *, home: str | None = None,
                       tools_queue: str = "tools") -> SessionRecord:
        """Create an idle session for ``workspace`` (an existing directory) with ``options``, as resolved by
        :class:`workflows.sessions.service.SessionService` (unset ones: this engine's settings), and
        ``setup``, what the settings files add (rules, sandbox, hooks, MCP servers...; None: nothing).
        ``home``: the submitting user's home (default: this process's); ``tools_queue``: its tools' queue.

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
            tools=opts.tools,
            home=home,
            custom_system_prompt=opts.system_prompt,
            append_system_prompt=opts.append_system_prompt,
            approval_timeout_seconds=opts.approval_timeout_seconds or self.settings.approval_timeout_seconds,
            sandbox=setup.sandbox or SandboxSettings(),
            hooks=setup.hooks,
            additional_directories=list(setup.additional_directories),
            env=dict(setup.env),
            model_overrides=dict(setup.model_overrides),
            fallback_model=opts.fallback_model,
            mcp_servers=list(setup.mcp_servers),
            bypass_disabled_by=list(setup.bypass_disabled_by),
            untrusted_workspace=setup.untrusted_workspace,
        )
        # Computed once, here: a resumed session, or any worker, sends the same bytes (the cache holds).
        rec.system_context = context_files.system_context(ws)
        rec.agents = load_agents(ws, rec.home, opts.agents)
        rec.auto_memory = False if opts.no_memory else self.settings.auto_memory
        index = ""
        if rec.auto_memory:
            rec.project_root = project_root(ws)
            rec.project_id = project_id(rec.project_root)
            index = ProjectMemory(self.store.r, rec.project_id, rec.project_root).index(
                self.settings.memory_index_lines)
        # The memory files' imports read only what a Read of this session could (issue 25, item 5).
        access = MemoryAccess(WorkArea(ws, rec.additional_directories), rec.home, read_denied_for(rec))
        rec.user_context = context_files.user_context(ws, rec.home, date.today(),
                                                      auto_memory=memory_context(index), access=access)
        rec.context_added = estimate_tokens(rec.system_context + rec.user_context)
        self.store.create_session(rec)
        return rec

    @retry_on_conflict
    def submit(self, sid: str, prompt: str, once: str | None = None) -> list[StepRecord]:
        """Start a run with ``prompt``, or queue it in the inbox while the session is busy.

        The inbox is a queue: while messages wait in it, ``prompt`` goes behind them
        and the oldest runs first (an idle session with a queue starts its oldest now).

        ``once``: a key for this message; if a message with the same key was submitted to the session
        (among its last :data:`SUBMIT_KEYS_KEPT`), nothing is submitted and no step returned. The key
        is written by the same commit as the message, so a sender that died after submitting and
        tries again (a schedule's firing) cannot send it twice.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            if once is not None:
                if once in rec.submit_keys:
                    return []
                rec.submit_keys = [*rec.submit_keys[-(SUBMIT_KEYS_KEPT - 1):], once]
            tx = _Tx(rec)
            if rec.state is State.IDLE and self.store.inbox(sid):
                tx.inbox_pushes.append(prompt)
                self._after_idle(tx)
            elif rec.state is State.EXTRACTING:
                # Nobody waits for memory: the message runs now, the extraction goes on beside it.
                tx.inbox_pushes.append(prompt)
                self._leave_extracting(tx)
            elif rec.state is not State.IDLE:
                # Queued in the same commit as the revision it read: a step that ends the run meanwhile
                # is refused by the revision, reads the inbox again and starts this message.
                tx.inbox_pushes.append(prompt)
            else:
                self._check_room(rec, prompt)
                self._start_run(tx, prompt)
            self._commit(tx)
        return tx.dispatch

    @retry_on_conflict
    def compact(self, sid: str, instructions: str | None = None) -> list[StepRecord]:
        """Compact an idle session now (``/compact``), with optional instructions for the summary."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            tx = _Tx(rec)
            if rec.state is State.EXTRACTING:  # nobody waits for memory: the extraction goes on beside it
                self._fire(tx, "extracted")
            require_idle(rec, "compact")
            rec.run_started_at = time.time()
            rec.run_turns = rec.run_api_ms = 0
            rec.run_usage = Usage()
            rec.run_cost_usd = 0.0
            _reset_run_figures(rec)
            self._begin_compaction(tx, "manual", instructions)
            self._commit(tx)
        return tx.dispatch

    def context_size(self, rec: SessionRecord) -> int:
        """Tokens in the session's context: the last reported usage plus estimates since."""
        return rec.context_tokens + rec.context_added

    def _check_room(self, rec: SessionRecord, prompt: str) -> None:
        limits = thresholds(rec.sent_model(), self.settings.autocompact_pct_override)
        size = self.context_size(rec) + estimate_tokens(prompt)
        auto = self.settings.auto_compact and not rec.auto_compact_off
        if size >= limits.blocking and not auto:
            why = ("auto-compact is off for this session after repeated failures"
                   if rec.auto_compact_off else "auto-compact is disabled")
            raise ContextFull(
                f"Session {rec.id[:8]} is at {size:,} of {limits.window:,} tokens, past the blocking limit "
                f"({limits.blocking:,}), and {why}. Run /compact (or `mainsail compact {rec.id[:8]}`) "
                "before sending another prompt.")

    def cancel(self, sid: str, reason: str = "Cancelled by user", *, clear_queue: bool = False,
               dispatch: Callable[[list[StepRecord]], None] | None = None) -> bool:
        """Stop the running turn; the oldest queued message (if any) starts at once.

        Returns False when the session was already idle. ``dispatch`` receives the
        steps of the message that starts (without it they wait for the reaper's
        pickup timeout). See :meth:`stop` for the details.
        """
        outcome = self.stop(sid, reason, clear_queue=clear_queue)
        if dispatch is not None and outcome.steps:
            dispatch(outcome.steps)
        return outcome.cancelled

    @retry_on_conflict
    def stop(self, sid: str, reason: str = "Cancelled by user", *, clear_queue: bool = False) -> Stopped:
        """Cancel: bump the epoch, close dangling tool calls, return to idle; then run the queue. The
        session's background shells are stopped too (by the workers running them).

        The inbox is a queue that a cancel does not drop: the oldest message starts
        at once, the others stay behind it in the order sent. With ``clear_queue``
        they are all dropped first, so the session stays idle. An idle session with
        a queue nothing runs (left by an older version) starts its oldest message.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            tx = _Tx(rec)
            was = rec.state
            cleared = self.store.inbox(sid) if clear_queue else []
            tx.inbox_pops = len(cleared)
            if rec.state is State.EXTRACTING:  # the run already has its result; stop waiting for memory
                self._add(tx, SystemEntry(session_id=sid, subtype="memory", content=(
                    "Stopped waiting for the memory extraction; it goes on in the background.")))
                self._fire(tx, "cancel")
                self._after_idle(tx)
            elif rec.state is not State.IDLE:
                self._add(tx, SystemEntry(session_id=sid, subtype="interrupted", content=reason))
                self._abort_run(tx, "cancel", "cancelled", reason)
            else:
                self._after_idle(tx)
            queue = self._queued(tx)
            started = queue[len(cleared)] if tx.inbox_pops > len(cleared) else None
            if was is not State.IDLE or tx.inbox_pops:
                self._commit(tx)
            queued = len(queue) - tx.inbox_pops
        stop_shells(self.store, sid, "the session was cancelled")
        return Stopped(was=was, cancelled=was is not State.IDLE, cleared=cleared, started=started,
                       queued=queued, steps=tx.dispatch)

    @retry_on_conflict
    def clear_queue(self, sid: str) -> list[str]:
        """Drop the messages waiting in the session's inbox; returns them, oldest first."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            dropped = self.store.inbox(sid)
            if dropped:
                tx = _Tx(rec)
                tx.inbox_pops = len(dropped)
                self._commit(tx)
        return dropped

    @retry_on_conflict
    def set_model(self, sid: str, model: str) -> SessionRecord:
        """Switch the model for the session's next calls (usage and cost stay per model)."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            rec.model = model
            self._commit(_Tx(rec))
        return rec

    @retry_on_conflict
    def update_limits(self, sid: str, *, max_turns: int | None = None, max_budget_usd: float | None = None,
                      permission_mode: PermissionMode | str | None = None, rules: RuleSet | None = None,
                      approval_timeout_seconds: float | None = None, auto_memory: bool | None = None,
                      asks: str | None = None, tools: list[str] | None = ...,
                      additional_directories: list[str] | None = None,
                      fallback_model: str | None = None,
                      bypass_disabled_by: list[str] | None = None) -> SessionRecord:
        """Change a session's limits, mode, rules (added to its own), approval timeout, auto-memory, who
        answers its asks (``asks``, see :attr:`SessionRecord.asks`), the tools it offers (``tools``: a
        list, or None for all; left as is unless given), added directories (joining its own),
        fallback model, or sources disabling bypassPermissions (``bypass_disabled_by``, joining its own).

        Raises:
            BypassDisabled: ``permission_mode`` is bypassPermissions and it is disabled for the session.
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            if asks is not None:
                rec.asks = asks
            if tools is not ...:
                rec.tools = None if tools is None else list(tools)
            for path in additional_directories or ():
                if path not in rec.additional_directories:
                    rec.additional_directories.append(path)
            if fallback_model is not None:
                rec.fallback_model = fallback_model
            if auto_memory is False:  # turning it on later would need the project's index in the context
                rec.auto_memory = False
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
            self._commit(_Tx(rec))
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
        read = self.store.r.hgetall(keys.files_read(sid))  # files the fork may Edit without re-reading
        if read:
            p.hset(keys.files_read(rec.id), mapping=read)
        commands = self.store.r.hgetall(keys.commands(sid))  # its custom commands, until the CLI reads them again
        if commands:
            p.hset(keys.commands(rec.id), mapping=commands)
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
