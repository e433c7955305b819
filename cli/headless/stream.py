"""``--input-format stream-json``: a conversation over stdin and stdout, as Claude Code holds it with
the Agent SDK.

stdin is read line by line as it arrives (a thread puts each line on a queue): each ``user`` line
is a turn of the same session (sent while a turn runs, it waits in the session's inbox and runs
next), each ``control_request`` is answered at once (cli/headless/control.py), even mid-turn. Every
turn starts with a ``system/init`` line and ends with its ``result`` line. At the end of stdin the
process ends once the turns it was given have their results.

With ``--permission-prompt-tool stdio``, a call that would ask becomes a ``can_use_tool`` request
to the client. The question itself is the session's durable permission request: the client's answer
settles it through the same engine call as ``mainsail approve``, and if the client goes away the
request still waits for an answer from any shell (``mainsail pending``).
"""

from __future__ import annotations

import queue
import sys
import threading
from typing import TextIO

import click

from cli.attach import _last_id
from cli.connect import Runtime
from cli.follow import follow
from cli.headless.control import Control, ControlError, context_usage, initialize_response
from cli.headless.hook_callbacks import HookCallbacks, callback_hooks
from cli.headless.partial import StreamEvents
from cli.headless.sdk_mcp import SdkServers, sdk_handlers
from cli.headless.updates import apply_updates
from cli.output import StreamJson
from cli.session_service import service
from cli.slash_commands import sdk_commands, unknown_command_note
from cli.stream_input import parse_input_line, user_text
from workflows.context.assemble import offered_tools
from workflows.exceptions import BypassDisabled, RequestClosed, RequestNotFound, ToolInputError
from workflows.hooks.prompt_entries import is_entry_of_prompt, starts_run
from workflows.models import (
    HookCallbackEntry,
    PermissionDecisionEntry,
    PermissionMode,
    PermissionRequestEntry,
    ResultEntry,
)
from workflows.permissions.bypass import effective_mode, switch_refusal
from workflows.permissions.updates import suggestions as permission_suggestions
from workflows.sessions.service import SessionService
from workflows.styles import session_styles

EOF = object()


class _ClientGone(Exception):
    """stdin ended while the client still had questions to answer: nobody here can answer them now."""




class StreamServer:
    """Serves one session over stream-json until stdin ends (see the module docstring).

    Args:
        rt: the connection.
        sid: the session.
        out: the stream-json writer (stdout).
        prompt_tool: ``--permission-prompt-tool stdio``: asks go to the client as ``can_use_tool``.
        api_key_source: what ``system/init`` and ``initialize`` say about the API key.
        stdin: where the client writes.
    """

    def __init__(self, rt: Runtime, sid: str, out: StreamJson, *, prompt_tool: bool, api_key_source: str,
                 stdin: TextIO | None = None, allow_bypass: bool = False) -> None:
        self.rt = rt
        self.allow_bypass = allow_bypass  # launched allowing bypassPermissions (set_permission_mode may switch to it)
        self.sid = sid
        self.out = out
        self.prompt_tool = prompt_tool
        self.api_key_source = api_key_source
        self.stdin = stdin or sys.stdin
        self.lines: queue.Queue = queue.Queue()
        self.control = Control(out, {
            "initialize": self._initialize,
            "interrupt": self._interrupt,
            "set_permission_mode": self._set_mode,
            "set_model": self._set_model,
            "get_context_usage": self._context_usage,
            "rewind_files": self._rewind_files,  # (cli/rewind.py)
        })
        self.sdk = SdkServers(rt, sid, self.control, lambda held: [self._submit(p) for p in held])
        self.control.handlers.update(sdk_handlers(self.sdk))
        self.submitted = 0
        self.results = 0
        self.eof = False
        self.after: str | None = None
        self.live_after: str | None = None  # the live stream's last id when the turn followed was submitted
        self.notified = 0  # the session's background-agent notifications when serving began
        self.last: ResultEntry | None = None
        self.asked: dict[str, str] = {}  # permission request id -> our can_use_tool request id
        self.asker: dict[str, str] = {}  # a sub-agent's permission request id -> its session id
        self.callbacks = HookCallbacks(rt, self.control, lambda request: self.asker.get(request, self.sid))
        self.abandoned = False  # stdin ended with a question to the client open: the turn did not finish
        self.events = StreamEvents()  # --include-partial-messages: the replies' raw events
        self.waiting: list[tuple[str, str | None]] = []  # (prompt, its line's uuid) sent while a turn ran, oldest first
        self._line = 0

    # ------------------------------------------------------------------ the loop

    def serve(self) -> ResultEntry | None:
        """Run turns until stdin ends and every turn it started has its result; the last result."""
        threading.Thread(target=self._read, name="mainsail-stdin", daemon=True).start()
        self.notified = self.rt.store.get_session(self.sid).notifications
        while True:
            if self._done():
                if self.eof:
                    return self.last
                self._handle(self.lines.get())
                continue
            try:
                follow(self.rt.store, self.sid, on_entry=self._on_entry,
                       on_delta=(self._on_delta if self.out.partial_messages else None), after=self.after,
                       live_after=self.live_after, poll=self._poll,
                       stop=lambda e: isinstance(e, ResultEntry) and self._done(),
                       on_child=self._on_child, on_link=self.out.link_child,
                       on_event=(self._on_event if self.out.partial_messages else None))
            except _ClientGone:
                click.echo(f"mainsail: the client closed its input while session {self.sid[:8]} waited for its "
                           f"answer; the request stays open: answer it with `mainsail pending` and `mainsail "
                           f"approve {self.sid[:8]}` (or deny), and follow the session with `mainsail watch "
                           f"{self.sid[:8]}`.", err=True)
                self.abandoned = True
                return self.last

    def _done(self) -> bool:
        """Every turn has its result: those stdin gave, and those background agents' notifications started;
        and no background agent still runs (it owes one), as Claude Code waits for them before it ends."""
        if self.results < self.submitted:
            return False
        rec = self.rt.store.get_session(self.sid)
        return not rec.background_tasks and self.results >= self.submitted + rec.notifications - self.notified

    def _read(self) -> None:
        for raw in self.stdin:
            self.lines.put(raw)
        self.lines.put(EOF)

    def _poll(self) -> None:
        while True:
            try:
                item = self.lines.get_nowait()
            except queue.Empty:
                break
            self._handle(item)
        if self.eof and self.control.pending():
            self.callbacks.client_gone()  # (an event's callbacks count as failed: the session goes on)
            if self.control.pending():
                raise _ClientGone()

    def _handle(self, item) -> None:
        if item is EOF:
            self.eof = True
            self.sdk.client_gone()
            return
        self._line += 1
        try:
            msg = parse_input_line(item, self._line)
            if msg is None:
                return
            kind = msg.get("type")
            if kind == "control_request":
                self.control.on_request(msg)
            elif kind == "control_response":
                self.control.on_response(msg)
            elif kind == "user" and self.sdk.busy:  # the first prompt offers the SDK servers' tools
                self.sdk.hold(user_text(msg, self._line))
            elif kind == "user":
                self._submit(user_text(msg, self._line), msg.get("uuid") if isinstance(msg.get("uuid"), str) else None)
            elif kind not in ("control_cancel_request", "keep_alive"):
                raise ValueError(f"Invalid stream-json input on line {self._line}: expected a user message or a "
                                 f"control request, got type {kind!r}")
        except ValueError as exc:  # one bad line is reported; the conversation goes on
            click.echo(f"mainsail: {exc}", err=True)

    def _submit(self, prompt: str, uuid: str | None = None) -> None:
        """Send ``prompt`` (``uuid``: its input line's): it runs now, or waits in the session's inbox."""
        note = unknown_command_note(prompt, self.rt.store.commands(self.sid))
        if note:
            click.echo(f"mainsail: {note}", err=True)
        busy = self.results < self.submitted
        if not busy:  # idle: follow from here (the reply's live events too: a worker may stream its
            self.after = _last_id(self.rt, self.sid)  # message_start before the follower starts)
            self.live_after = self.rt.store.last_live_id(self.sid)
        service(self.rt).submit(self.sid, prompt)
        if busy:
            self.waiting.append((prompt, uuid))
        self.submitted += 1

    # ------------------------------------------------------------------ what the session records

    def _on_entry(self, e) -> None:
        if self.waiting and is_entry_of_prompt(e, self.waiting[0][0]):
            self.waiting.pop(0)  # (its run began)
        if starts_run(e):  # a prompt, or a custom command's start (its prompt comes after its ! lines)
            rec = self.rt.store.get_session(self.sid)
            self.out.init(rec, offered_tools(rec), api_key_source=self.api_key_source,
                          commands=self.rt.store.commands(self.sid))
        self.out.entry(e)
        if isinstance(e, ResultEntry):
            self.results += 1
            self.last = e
        elif isinstance(e, HookCallbackEntry) or isinstance(e, PermissionRequestEntry) and e.kind == "hook":
            self.callbacks.run(e)  # the client's hook callbacks (cli/headless/hook_callbacks.py)
        elif isinstance(e, PermissionRequestEntry) and e.kind == "mcp":
            self.sdk.call(self.sid, e)  # a call of the client's SDK MCP server (cli/headless/sdk_mcp.py)
        elif isinstance(e, PermissionRequestEntry) and self.prompt_tool:
            self._ask(e)
        elif isinstance(e, PermissionDecisionEntry) and e.request_id:
            self.callbacks.settled(e.request_id)
            self.sdk.settled(e.request_id)
            if e.request_id in self.asked:
                self.control.cancel(self.asked.pop(e.request_id))  # settled elsewhere (or by the answer itself)

    def _on_child(self, child: str, e) -> None:
        """A sub-agent's entry: its messages with their Task call's id (``parent_tool_use_id``), as Claude
        Code streams them; its questions asked of this client like the session's own."""
        self.out.child_entry(child, e)
        if isinstance(e, (PermissionRequestEntry, HookCallbackEntry)):
            self.asker[e.request_id] = child
            if isinstance(e, HookCallbackEntry) or e.kind == "hook":
                self.callbacks.run(e)
            elif e.kind == "mcp":
                self.sdk.call(child, e)
            elif self.prompt_tool:
                self._ask(e)
        elif isinstance(e, PermissionDecisionEntry) and e.request_id:
            self.callbacks.settled(e.request_id)
            self.sdk.settled(e.request_id)
            if e.request_id in self.asked:
                self.control.cancel(self.asked.pop(e.request_id))

    def _on_delta(self, step: str, attempt: int, text: str) -> None:
        self.out.delta(self.sid, text)

    def _on_event(self, fields: dict) -> None:
        self.out.emit(self.events.line(self.sid, fields))

    # ------------------------------------------------------------------ can_use_tool

    def _ask(self, e: PermissionRequestEntry) -> None:
        request = {"subtype": "can_use_tool", "tool_name": e.tool, "display_name": e.tool, "input": e.input,
                   "tool_use_id": e.tool_use_id, "description": e.summary, "decision_reason": e.reason,
                   "permission_suggestions": permission_suggestions(e.always)}
        self.asked[e.request_id] = self.control.ask(request, lambda answer: self._answered(e, answer))

    def _answered(self, e: PermissionRequestEntry, answer) -> None:
        self.asked.pop(e.request_id, None)
        decider = SessionService(self.rt.engine)  # its steps are dispatched below, after an interrupt
        sid = self.asker.get(e.request_id, self.sid)  # the session that asks: this one or a sub-agent
        try:
            if isinstance(answer, Exception):  # the client's callback failed: deny, saying why
                steps = decider.decide(sid, e.request_id, False, by="user",
                                       message=f"The permission callback failed: {answer}")
            elif answer.get("behavior") == "allow":
                apply_updates(service(self.rt), sid, answer.get("updatedPermissions"))
                try:
                    steps = decider.decide(sid, e.request_id, True, by="user", updated_input=answer.get("updatedInput"))
                except ToolInputError as exc:
                    steps = decider.decide(sid, e.request_id, False, by="user",
                                           message=f"The approver changed the input to one that is not "
                                                   f"valid: {exc}")
            else:
                steps = decider.decide(sid, e.request_id, False, by="user",
                                       message=answer.get("message") or None)
                if answer.get("interrupt"):
                    service(self.rt).stop(self.sid, "Interrupted by the permission callback")
        except (RequestClosed, RequestNotFound):
            return  # answered from another shell meanwhile
        service(self.rt).dispatch(steps)

    # ------------------------------------------------------------------ control requests

    def _initialize(self, request: dict) -> dict:
        if request.get("hooks"):
            service(self.rt).add_hooks(self.sid, callback_hooks(request["hooks"]))
        if request.get("agents"):  # the SDK's ``agents`` option (ClaudeAgentOptions.agents)
            from workflows.agents import AgentFileError, agents_from_json

            try:
                service(self.rt).add_agents(self.sid, agents_from_json(request["agents"]))
            except AgentFileError as exc:
                raise ControlError(str(exc).replace("--agents", "agents")) from None
        self.sdk.discover()  # (the answer goes first; prompts wait for the servers' tools)
        rec = self.rt.store.get_session(self.sid)
        return initialize_response(effective_mode(rec), self.api_key_source, rec.agents,
                                   sdk_commands(self.rt.store.commands(self.sid)), session_styles(rec))

    def _interrupt(self, request: dict) -> dict:
        """Stop the running turn. The answer lists the uuids of this client's messages that wait in the inbox
        (they survive the interrupt: the oldest runs next), as Claude Code's ``still_queued``."""
        service(self.rt).stop(self.sid, "Interrupted by the client")
        return {"still_queued": [uuid for _, uuid in self.waiting if uuid]}

    def _set_mode(self, request: dict) -> dict:
        try:
            mode = PermissionMode(request.get("mode"))
        except ValueError:
            modes = ", ".join(m.value for m in PermissionMode)
            raise ControlError(f"Unknown permission mode {request.get('mode')!r}; use one of {modes}.") from None
        refused = switch_refusal(mode, self.rt.store.get_session(self.sid), self.allow_bypass)
        if refused is not None:  # Claude Code's answer: disabled by settings, or not launched allowing bypass
            raise ControlError(*refused)
        try:
            service(self.rt).update_limits(self.sid, permission_mode=mode)
        except BypassDisabled as exc:  # Claude Code's answer, with what disabled the mode
            raise ControlError(str(exc), "bypass_disabled") from None
        return {"mode": mode.value}

    def _set_model(self, request: dict) -> dict:
        model = request.get("model") or self.rt.engine.settings.model
        service(self.rt).set_model(self.sid, model)
        return {"model": model}

    def _context_usage(self, request: dict) -> dict:
        rec = self.rt.store.get_session(self.sid)
        return context_usage(rec.model, service(self.rt).context_size(rec))

    def _rewind_files(self, request: dict) -> dict:
        """The SDK's ``rewind_files``: the files back to before that user message (the code only, as Claude Code)."""
        from cli.rewind import rewind_files

        return rewind_files(service(self.rt), self.sid, request.get("user_message_id"))


__all__ = ["StreamServer", "callback_hooks", "permission_suggestions"]
