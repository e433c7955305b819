"""Constants, small types and helpers shared by the engine's modules."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, NamedTuple

from statemachines import State
from workflows.commit.kinds import QUEUE_FOR_KIND  # noqa: F401  (the engine's name for the table's queues)
from workflows.exceptions import RequestClosed, RequestNotFound, SessionBusy
from workflows.model.pricing import add_cost
from workflows.models import PermissionRequest, RequestStatus, SessionRecord, StepRecord, Usage, new_id

if TYPE_CHECKING:
    from workflows.tools.base import ToolOutput

log = logging.getLogger(__name__)


INTERRUPTED = "[Request interrupted by user for tool use]"
#: The user message an interrupt adds when no tool call was open (a reply streaming, a step waiting to start).
INTERRUPTED_REPLY = "[Request interrupted by user]"

#: What Claude Code 2.1.332 answers for a call the user's interrupt closed: the rejection text, for a call that
#: had not started (waiting for its batch or for an approval) ...
REJECTED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
            "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
            "tell you how to proceed.")
#: ... and for a call that was running (its step dispatched), the same with Claude Code's correction.
STOPPED_WHILE_RUNNING = REJECTED + (
    " Correction to the text above: this call was stopped while running, not refused before it ran. It may have "
    "run in part or in full, and its changes may have been written. No permission prompt was involved. Work it "
    "started elsewhere (a remote command, a background process) may still be running, so check before starting "
    "the same work again. The instruction to stop and wait still stands.")
#: Such a result's ``tool_use_result`` (stream-json, the Claude Code transcript's ``toolUseResult``).
REJECTED_RESULT = "User rejected tool use"


def stopped_output(running: bool) -> ToolOutput:
    """The result of a call the user's interrupt (a cancel) closed: ``running`` when its step was dispatched
    (it may have run), else it never started. Other ends of a run (a failure, a hook's stop) close their calls
    with :data:`INTERRUPTED` instead."""
    from workflows.tools.base import ToolOutput  # (the tool belt: a client's commit of a prompt needs none of it)

    return ToolOutput(content=STOPPED_WHILE_RUNNING if running else REJECTED, is_error=True, result=REJECTED_RESULT,
                      display="interrupted" if running else "interrupted before it ran")


#: The tool result of a mutating call whose worker was lost mid-run (it is never run again blindly).
UNKNOWN_OUTCOME = (
    "The worker running this {tool} call stopped before it reported a result, so its outcome is "
    "unknown: it may have run partly, fully, or not at all. It was not run again automatically. "
    "Check its effects (for example with Read or a read-only command) before deciding to run it again."
)


BACKGROUND_LOST = (" It was to run in the background; if it started, its shell id was not recorded. A background "
                   "shell dies with the worker that runs it, and cancelling the session stops any that still run.")


def unknown_outcome(call) -> ToolOutput:
    """The result of a mutating call whose worker died mid-run: not run again; the model is told why."""
    from workflows.tools.base import ToolOutput

    text = UNKNOWN_OUTCOME.format(tool=call.name)
    if call.name == "Bash" and isinstance(call.input, dict) and call.input.get("run_in_background") is True:
        text += BACKGROUND_LOST
    return ToolOutput(content=text, is_error=True, display="outcome unknown (its worker was lost); not re-run")


def stop_shells(store, sid: str, why: str) -> None:
    """Ask the workers running the session's background shells to stop them (best effort: a Redis error is
    logged; a shell whose worker is gone is already lost)."""
    from workflows.store.resilience import RedisError

    try:
        asked = store.shells().request_kill_all(sid, why)
    except RedisError as exc:
        log.warning("could not ask to stop the background shells of session %s (%s)", sid[:8], exc)
        return
    if asked:
        log.info("asked to stop background shells %s of session %s: %s", ", ".join(asked), sid[:8], why)


def display_worker(name: str) -> str:
    """A registered worker's name as people know it (without the per-start suffix)."""
    return name.partition("#")[0]


class Claim(NamedTuple):
    step: StepRecord | None
    follow_ups: list[StepRecord]
    session: SessionRecord | None  # None: the session was removed


@dataclass
class Stopped:
    """What :meth:`Engine.stop` did.

    Attributes:
        was: the state the session was in.
        cancelled: a turn (or the wait for a memory extraction) was stopped.
        cleared: queued messages that were dropped (``clear_queue``), oldest first.
        started: the queued message that runs now, if one did.
        queued: messages still waiting behind it.
        steps: the started message's first steps, to dispatch.
    """

    was: State
    cancelled: bool
    cleared: list[str]
    started: str | None
    queued: int
    steps: list[StepRecord]


def _reset_run_figures(rec: SessionRecord) -> None:
    """A new run counts its own per-model and memory figures (``run_usage``/``run_cost_usd`` too)."""
    rec.run_usage_by_model = {}
    rec.run_cost_by_model = {}
    rec.run_memory_usage = Usage()
    rec.run_memory_cost_usd = 0.0


def _add_to(usages: dict[str, Usage], costs: dict[str, float | None], key: str, usage: Usage,
            cost: float | None) -> None:
    usages[key] = usages.get(key, Usage()) + usage
    costs[key] = add_cost(costs.get(key, 0.0), cost)


#: Tools whose success means the main agent saved memory itself (the turn's extraction is skipped).
MEMORY_WRITERS = frozenset({"MemoryWrite", "MemoryDelete"})


KEEP_REQUESTS = 50  # decided requests kept in the record, so a late approve gets a clear answer


DENIED_BY_USER = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected "
    "(eg. if it was a file edit, the new_string was NOT written to the file). Permission to use {tool} "
    "was denied."
)


def _denial(tool: str, tool_use_id: str, tool_input: dict) -> dict:
    return {"tool_name": tool, "tool_use_id": tool_use_id, "tool_input": tool_input}


def _request_id(rec: SessionRecord) -> str:
    taken = {r.id for r in rec.permission_requests}
    while True:
        rid = new_id().replace("-", "")[:8]
        if rid not in taken:
            return rid


def context_size(rec: SessionRecord) -> int:
    """Tokens in the session's context: the last reported usage plus estimates since."""
    return rec.context_tokens + rec.context_added


def find_request(rec: SessionRecord, request: str | None) -> PermissionRequest:
    """The request named by id or unique prefix; with None, the only pending one."""
    sid = rec.id[:8]
    if not request:
        pending = rec.pending_requests()
        if len(pending) == 1:
            return pending[0]
        if not pending:
            raise RequestNotFound(f"Session {sid} has no pending permission request (it is {rec.state.value}).")
        listing = ", ".join(f"{r.id} ({r.tool}: {r.summary})" for r in pending)
        raise RequestNotFound(f"Session {sid} has {len(pending)} pending requests; name one: {listing}")
    matches = [r for r in rec.permission_requests if r.id.startswith(request)]
    if not matches:
        raise RequestNotFound(f"Session {sid} has no permission request {request!r}. "
                              f"See `mainsail pending`.")
    if len(matches) > 1:
        raise RequestNotFound(f"Request prefix {request!r} matches {len(matches)} requests of session {sid}: "
                              + ", ".join(r.id for r in matches))
    req = matches[0]
    if req.status is RequestStatus.SUPERSEDED:
        raise RequestClosed(f"Request {req.id} of session {sid} ({req.tool}: {req.summary}) was superseded "
                            "by a cancel; there is nothing to decide.")
    if req.status is not RequestStatus.PENDING:
        when = datetime.fromtimestamp(req.decided_at or 0, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        raise RequestClosed(f"Request {req.id} of session {sid} ({req.tool}: {req.summary}) was already "
                            f"{req.status.value} by {req.decided_by} at {when}.")
    return req


def require_idle(rec: SessionRecord, action: str) -> None:
    if rec.state is not State.IDLE:
        raise SessionBusy(f"Cannot {action} session {rec.id[:8]}: it is {rec.state.value}. "
                          f"Wait for it, or `mainsail cancel {rec.id[:8]}`.")


def _title(prompt: str) -> str:
    if prompt.startswith("<bash-input>") and prompt.endswith("</bash-input>"):  # bash mode: as it was typed
        prompt = "!" + prompt[len("<bash-input>"):-len("</bash-input>")]
    line = " ".join(prompt.split())
    return line if len(line) <= 60 else line[:57] + "..."


def _git_branch(path: str) -> str | None:
    """The workspace's branch, read through libgit2 (no program of the repository runs)."""
    from workflows.git.locate import may_hold_repository

    if not may_hold_repository(path):
        return None  # (libgit2 costs ~30 ms to load: only where there is a repository to read)
    from workflows.git import state as git_state

    return git_state.current_branch(path)


def _count_messages(n: int) -> str:
    return f"{n} message{'s' if n != 1 else ''}"


def _shorten(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def cancel_message(sid: str, stopped) -> str:
    """What a cancel did, in one line (also used by ``mainsail rm --force``)."""
    short = sid[:8]
    if stopped.cancelled:
        head = f"Cancelled session {short} (it was {stopped.was.value})"
    elif stopped.started is not None:
        head = f"Session {short} was idle with {_count_messages(stopped.queued + 1)} queued that nothing ran"
    else:
        head = f"Session {short} is idle; there is nothing to cancel"
    if stopped.cleared:
        head += f"; dropped {_count_messages(len(stopped.cleared))} queued"
    if stopped.started is None:
        return head + ("; it is idle now." if stopped.cancelled else ".")
    more = f" ({stopped.queued} more queued)" if stopped.queued else ""
    return (f"{head}. Its next queued message runs now: {_shorten(stopped.started, 50)!r}{more}. "
            f"To stop it and drop the queue: mainsail cancel --clear {short}")
