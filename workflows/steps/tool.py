"""A tool call's run: the tool step (PreToolUse hooks, the permission re-check, the tool, PostToolUse
hooks, the commit of its result), and the quick calls a model step runs itself.

**Quick calls.** A reply whose every call is of a *quick* tool (read-only and bounded: Read), allowed
as it stands (no question, no hook on it), and whose session's tools queue this worker serves, has its
calls run by the model step, right after the reply, on this worker; the reply and their results are then
recorded by one commit (``Engine.record_model_reply(ran=...)``), the next model call claimed by it too.
That spares each such turn a commit, a claim and a hop: a third of a Read loop's work per step
(bench/step_overhead.py). What the commit records is what the tool step would have: the same
permission decision (``decide`` and :func:`~workflows.engine.tool_calls.runs_early`, asked again inside the
commit, with the record it writes; for a call they do not allow now the early result is dropped and
the call goes the usual way), the same tool context, the same entries, a tool step record (born done)
for each call. A worker that dies between the reply and the commit runs the model step again, as it
would have had it died during the commit itself: the window is the Reads longer.
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

from workflows.commit.support import unknown_outcome
from workflows.edits import checkpoints
from workflows.engine import Engine
from workflows.engine.tool_calls import runs_early
from workflows.exceptions import ToolInputError
from workflows.hooks.runner import hook_input
from workflows.hooks.client_hooks import client_callbacks
from workflows.hooks.tool_hooks import post_event, post_tool, post_tool_input, pre_tool_action, pre_tool_outcome
from workflows.mcp.calls import McpCaller
from workflows.mcp.catalog import find_tool
from workflows.mcp.client import is_client_server
from workflows.mcp.tools import is_mcp_name
from workflows.model.client import ModelReply
from workflows.models import SessionRecord, StepRecord, ToolCall
from workflows.models.hooks import CallbackHook, HookEvent
from workflows.permissions import Decision, decide, read_denied_for, sandbox
from workflows.permissions.rules.rules import EDIT_TOOLS
from workflows.shells import SessionShells
from workflows.steps.fence import CommandFence
from workflows.store.durable import NotDurable
from workflows.store.memory import ProjectMemory
from workflows.tools import get_tool, run_tool
from workflows.tools.base import NotQuick, ToolContext, ToolOutput
from workflows.tools.saved import SAVED_RESULT_CAP, save_large_result
from workflows.tools.web import WebAccess

#: Tools that call the model and the web from the worker (their ToolContext gets a WebAccess).
WEB_TOOLS = frozenset({"WebFetch", "WebSearch"})
#: A reply with more calls than this goes the usual way: its calls run in parallel, on tool steps.
QUICK_CALLS_MAX = 8
#: A quick call with more bytes than this to read goes to a tool step (Claude Code's Read refuses a whole
#: file past 256 KB): a paid reply waits for its commit while its quick calls run.
QUICK_BYTES = 256 * 1024
#: Quick results past this many characters in all go to tool steps (one commit each) instead.
QUICK_CHARS_MAX = 1_000_000


def project_memory(store, rec: SessionRecord) -> ProjectMemory | None:
    """The session's project memory, when auto-memory is on for it."""
    if rec.auto_memory and rec.project_id:
        return store.project_memory(rec.project_id, rec.project_root)
    return None


def tool_step(engine: Engine, rec: SessionRecord, step: StepRecord, owner: str,
              cancel: threading.Event, worker: str | None = None) -> list[StepRecord]:
    """Run one tool call's step and commit its result."""
    store = engine.store
    sid = step.session_id
    call = next((c for c in rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
    if call is None:
        return engine.fail_step(sid, step.id, owner, f"Tool step {step.id} has no tool call in the session.")
    try:
        tool = find_tool(store, rec, call.name)
    except ToolInputError as exc:  # (its MCP tool list was lost: the fan-out found it)
        return engine.record_tool_output(sid, step.id, owner, ToolOutput(content=str(exc), is_error=True,
                                                                         display=str(exc)[:120]))
    post, writes = None, None
    if step.attempt > 1 and not tool.idempotent and not client_tool(rec, tool):
        output = unknown_outcome(call)
    elif (pre := pre_tool(engine, rec, step, owner, call, tool, cancel)).call is None:
        return pre.follow_ups
    elif not pre.decided and (refused := recheck(tool, call, rec)) is not None:
        output = refused
    elif client_server_call(rec, pre.call, tool):  # its server is the SDK client's: ask it, durably
        return engine.ask_client_mcp(sid, step.id, owner, pre.call, tool.definition)
    elif (refused := made_durable(engine, tool)) is not None:
        output = refused
    else:
        fence = None if tool.idempotent else CommandFence(engine, sid, step.id, owner, worker)
        done = execute_call(engine, rec, pre.call, tool, cancel, worker, fence=fence)
        output, post, writes = done.output, done.post, done.writes
        callbacks = client_callbacks(rec, post_event(output), call.name)
        if callbacks and not (post and post.stop):  # the SDK client's callbacks: ask it (unless the run ends)
            payload = post_tool_input(rec, call, pre.call.input, output)
            return engine.hold_tool_output(sid, step.id, owner, output, post, callbacks, payload, writes)
    return engine.record_tool_output(sid, step.id, owner, output, hook=post, writes=writes)


def made_durable(engine: Engine, tool) -> ToolOutput | None:
    """Before a mutating call's effect: wait until its claim is on Redis's disk (workflows/store/durable.py), so
    a host crash cannot lose it and run the call a second time. An error result (the call not run) when Redis
    did not confirm it in time; None to go on."""
    if tool.idempotent:
        return None
    try:
        engine.store.durability.wait()
    except NotDurable as exc:
        return ToolOutput(content=str(exc), is_error=True, display="not run: its claim was not on disk in time")
    return None


def client_tool(rec: SessionRecord, tool) -> bool:
    """A tool of an SDK client's server: a worker that died with its step ran nothing of it (the client runs
    it, once, when asked; workflows.mcp.client), so the step runs again."""
    definition = getattr(tool, "definition", None)
    return definition is not None and is_client_server(rec, definition.server)


def client_server_call(rec: SessionRecord, call: ToolCall, tool) -> bool:
    """A call of an SDK client server's tool that its client has not answered yet."""
    return call.client_result is None and client_tool(rec, tool)


class Executed(NamedTuple):
    output: ToolOutput
    post: object  # the PostToolUse hooks' HookOutcome, or None
    files: object  # the files it read (a deferred tracker: its writes go with the result's commit)

    @property
    def writes(self):
        """The writes of the files it read, for the commit of its result (a callable on its recorder), or None."""
        return self.files.write if self.files.pending else None


def execute_call(engine: Engine, rec: SessionRecord, call: ToolCall, tool, cancel: threading.Event,
                 worker: str | None, *, quick: bool = False, fence=None) -> Executed | None:
    """Run ``call`` with ``tool`` in the session's workspace, then its PostToolUse hooks.

    ``quick``: a quick run (see the module's docstring): the tool reads at most ``QUICK_BYTES``, and
    None is returned for a call that is not quick after all (more to read, or a result past the
    tool's limit, which a tool step saves in the workspace): it leaves nothing behind.
    """
    store, settings, sid = engine.store, engine.settings, rec.id
    mcp = is_mcp_name(call.name)
    # (a custom command's line is cut by the tool itself: its output goes into a prompt, not into a file)
    limit = None if call.prelude else (settings.tool_result_limits.get(call.name)
                                       or (settings.mcp_max_output_chars if mcp else None))
    files = store.files_tracker(sid, deferred=True)  # written by the result's commit
    ctx = ToolContext(
        workspace=rec.workspace,
        session_id=sid,
        home=rec.home,
        files_read=files,
        cancel=cancel,
        bash_default_timeout_ms=settings.bash_default_timeout_ms,
        bash_max_timeout_ms=settings.bash_max_timeout_ms,
        # A tool with a result limit keeps (nearly) everything: the full result is saved below.
        max_output_chars=SAVED_RESULT_CAP if limit else settings.bash_max_output_chars,
        memory=project_memory(store, rec),
        read_denied=read_denied_for(rec),
        sandbox=rec.sandbox,
        additional_dirs=tuple(rec.additional_directories),
        env=dict(rec.env),
        web=WebAccess(store, settings, rec) if call.name in WEB_TOOLS else None,
        shells=SessionShells(store.shells(), sid, worker, output_chars=settings.bash_background_output_chars,
                             ttl=settings.shell_ttl_seconds, renew_every=settings.worker_heartbeat_seconds),
        tool_use_id=call.tool_use_id,
        mcp=McpCaller(rec, settings, client_result=call.client_result) if mcp else None,
        quick_bytes=QUICK_BYTES if quick else None,
        fence=fence,
        git_writes=git_writes(call, rec, tool),
        checkpoints=(checkpoints.for_call(store, rec, settings.checkpoint_max_bytes)
                     if call.name in EDIT_TOOLS else None),  # for /rewind
    )
    try:
        output = run_tool(call.name, call.input, ctx, tool=tool)
    except NotQuick:
        return None
    if limit and len(output.content) > limit:
        if quick:
            return None
        output = save_large_result(rec.workspace, call.tool_use_id, call.name, output, limit, ctx.max_output_chars)
    output, post = post_tool(rec, call, call.input, output, cancel)
    return Executed(output, post, files)


# ----------------------------------------------------------------------------- quick calls


class Ran(NamedTuple):
    """A quick call's result, for the commit of the reply that asked for it."""

    output: ToolOutput
    writes: object  # the files it read, written by that commit (a callable on its recorder), or None
    started: float  # when it started (time.time()): its tool step's creation time, for its duration


def quick_calls(engine: Engine, rec: SessionRecord, reply: ModelReply,
                serves_tools: bool) -> list[tuple[ToolCall, object]]:
    """The calls of ``reply`` (a model step's) this model step runs itself (see the module's docstring),
    with their tools; empty when any of its calls is not quick: then they all go the usual way.

    ``serves_tools``: this worker serves the session's tools queue (and runs what follows its step).
    """
    uses = reply.message.tool_uses()
    if not serves_tools or not uses or len(uses) > QUICK_CALLS_MAX or not engine.settings.quick_tools:
        return []
    out = []
    for tu in uses:
        try:
            tool = None if is_mcp_name(tu.name) else get_tool(tu.name)
            if tool is None or not runs_early(rec, tu.name, tool):
                return []
            tool.validate(tu.input)
        except ToolInputError:
            return []  # (the commit's fan-out tells the model)
        if decide(tool, tu.input, rec).decision is not Decision.ALLOW:
            return []
        out.append((ToolCall(tool_use_id=tu.id, name=tu.name, input=tu.input), tool))
    return out


def run_quick(engine: Engine, rec: SessionRecord, calls: list[tuple[ToolCall, object]], cancel: threading.Event,
              worker: str | None) -> dict[str, Ran]:
    """Run ``calls`` (from :func:`quick_calls`) here, one after another: tool_use id -> what it gave.

    Empty when one of them is not quick after all (more to read than ``QUICK_BYTES``, a result past
    its tool's limit), when the results pass ``QUICK_CHARS_MAX`` in all, or once ``cancel`` is set:
    they then all run on tool steps (which save a large result).
    """
    ran: dict[str, Ran] = {}
    chars = 0
    for call, tool in calls:
        if cancel.is_set():
            return {}
        started = time.time()
        done = execute_call(engine, rec, call, tool, cancel, worker, quick=True)
        if done is None or (chars := chars + len(done.output.content)) > QUICK_CHARS_MAX:
            return {}
        ran[call.tool_use_id] = Ran(done.output, done.writes, started)
    return ran


class _Pre(NamedTuple):
    call: ToolCall | None  # what runs; None: the step ended here
    follow_ups: list[StepRecord]
    decided: bool  # the permission was decided with the hooks' verdict (no re-check needed)


def pre_tool(engine: Engine, rec: SessionRecord, step: StepRecord, owner: str, call: ToolCall, tool,
             cancel: threading.Event) -> _Pre:
    """PreToolUse: run the hooks (or read their recorded verdict), commit the verdict, then act on it.

    The call to run carries the hook's updatedInput. The step ends here when the call was refused or
    turned into a question (committed with the verdict), or is no longer ours.
    """
    hooks = rec.hooks.for_event(HookEvent.PRE_TOOL_USE, call.name)
    fresh = call.pre_hook is None and bool(hooks)
    callbacks = [h.callback_id for h in hooks if isinstance(h, CallbackHook)]
    if fresh and callbacks and call.client_hook_runs is None:  # the SDK client runs those: ask it, durably
        payload = hook_input(HookEvent.PRE_TOOL_USE, rec, tool_name=call.name, tool_input=call.input,
                             tool_use_id=call.tool_use_id)
        return _Pre(None, engine.ask_client_hooks(rec.id, step.id, owner, call, callbacks, payload), True)
    outcome = pre_tool_outcome(rec, call, cancel) if fresh else call.pre_hook
    if outcome is None and not call.hooks_pending:
        return _Pre(call, [], False)  # no hooks: the ordinary re-check decides
    action = pre_tool_action(tool, call, outcome, rec)
    go_on, follow_ups = engine.settle_pre_tool(rec.id, step.id, owner, call.tool_use_id,
                                               outcome if fresh else None, action)
    if not go_on:
        return _Pre(None, follow_ups, True)
    return _Pre(call.model_copy(update={"input": action.input, "pre_hook": outcome}), [], True)


def git_writes(call: ToolCall, rec: SessionRecord, tool) -> bool:
    """Whether a Bash call may write ``.git`` in its sandbox: a git-only line (:func:`sandbox.git_only`)
    that a person approved or an allow rule allows. A mode (acceptEdits, bypass) never does: git's
    own files name programs git runs, so only a git command someone chose may change them."""
    command = call.input.get("command") if call.name == "Bash" else None
    if not isinstance(command, str) or not sandbox.git_only(command):
        return False
    if call.approved_by:
        return True
    perm = decide(tool, call.input, rec)
    return perm.decision is Decision.ALLOW and perm.rule is not None


def recheck(tool, call: ToolCall, rec: SessionRecord) -> ToolOutput | None:
    """The permission check again, here, where the call runs and its paths are real (the first check ran
    where the model call committed, which may not see the workspace, and files change in between).

    A call a rule or the mode allowed must still be allowed; a call a person approved must still not be
    denied. Otherwise the call is not run and the model is told why.
    """
    perm = decide(tool, call.input, rec, approved=bool(call.approved_by))
    if perm.decision is Decision.ALLOW or (call.approved_by and perm.decision is Decision.ASK):
        return None
    why = perm.reason if perm.decision is Decision.DENY else (
        f"when it was about to run, it needed approval ({perm.reason}), though it did not when it was checked "
        "before (the files it names changed in between). It was not run; call it again to be asked")
    return ToolOutput(content=why, is_error=True, display=f"not run: {perm.display or 'permission changed'}")
