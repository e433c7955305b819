"""PreToolUse and PostToolUse on the tools worker, as part of the tool step.

The order for one call (Claude Code's): its PreToolUse hooks run first; their verdict and the
permission decision together say run, refuse or ask (:func:`pre_tool_action`); the verdict is
committed (a ``hook`` entry, and ``ToolCall.pre_hook``) through the engine's fenced commit before
anything is acted on. A refusal or a question is committed in that same transaction, so there is
nothing left to lose; a "run" leaves the step running and the tool runs next. A step that is run
again after its worker died reads the recorded verdict instead of running the hooks again (and a
non-idempotent tool is still reported as of unknown outcome, never re-run).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from workflows.exceptions import ToolInputError
from workflows.hooks.runner import hook_input, run_event
from workflows.models import SessionRecord, ToolCall
from workflows.models.hook_outcome import HookOutcome
from workflows.models.hooks import HookEvent
from workflows.permissions import Decision, decide
from workflows.tools.base import ToolOutput

__all__ = ["PreToolAction", "post_event", "post_tool", "post_tool_input", "pre_tool_action", "pre_tool_outcome", "tool_response",
           "with_post_notes"]

PRE, POST = HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE


@dataclass
class PreToolAction:
    """What to do with a call once its PreToolUse hooks have spoken."""

    kind: Literal["run", "refuse", "ask"]
    input: dict[str, Any] = field(default_factory=dict)  # what runs (the hook's updatedInput, if any)
    reason: str = ""  # refuse: the tool result for the model; ask: the line shown to the person
    stop: str | None = None  # the hook said "continue": false: the run ends after this call (stopReason)


def pre_tool_outcome(rec: SessionRecord, call: ToolCall, cancel: threading.Event) -> HookOutcome | None:
    """Run the call's PreToolUse command hooks here, joined with what the SDK client's callbacks answered
    (``call.client_hook_runs``); None when there is nothing."""
    payload = hook_input(PRE, rec, tool_name=call.name, tool_input=call.input, tool_use_id=call.tool_use_id)
    return run_event(PRE, rec, payload, subject=call.name, cancel=cancel, answered=call.client_hook_runs)


def pre_tool_action(tool, call: ToolCall, outcome: HookOutcome | None, rec: SessionRecord) -> PreToolAction:
    """The hook's verdict and the one permission decision (:func:`~workflows.permissions.decide`) together.

    A hook's deny refuses; its ``updatedInput`` is validated like model input and then decided on
    like any call; its allow skips a question the mode or the checker would ask, never a deny
    (rule, mode, plan) and never an ask rule; its ask turns the call into a durable question.
    """
    stop = (outcome.stop_reason or "a PreToolUse hook stopped the run") if outcome and outcome.stop else None
    if stop is not None:  # "continue": false comes before any decision: nothing more runs
        return PreToolAction("refuse", call.input, f"Not run: a PreToolUse hook stopped the run ({stop}).", stop)
    if outcome is not None and outcome.blocked:
        return PreToolAction("refuse", call.input, f"PreToolUse:{call.name} hook denied this call: "
                             f"{outcome.reason or 'no reason given'}", stop)
    tool_input = call.input
    if outcome is not None and outcome.updated_input is not None:
        tool_input = outcome.updated_input
        try:
            tool.validate(tool_input)
        except ToolInputError as exc:
            return PreToolAction("refuse", call.input, f"The PreToolUse hook's updatedInput for {call.name} is not "
                                 f"valid input, so the call was not run: {exc}", stop)
    perm = decide(tool, tool_input, rec)
    hook = outcome.decision if outcome else None
    run = PreToolAction("run", tool_input, stop=stop)
    if hook == "allow" and perm.hook_may_allow:  # the mode or the checker asks (an ask rule still asks),
        return run  # even where nobody can be asked (print mode)
    if perm.decision is Decision.DENY:
        return PreToolAction("refuse", tool_input, perm.reason, stop)
    if call.approved_by:
        return run
    if perm.decision is Decision.ALLOW:
        return PreToolAction("ask", tool_input, outcome.reason or "a PreToolUse hook asks") if hook == "ask" else run
    if call.hooks_pending or hook == "ask":
        reason = outcome.reason if hook == "ask" and outcome.reason else perm.reason or perm.source
        return PreToolAction("ask", tool_input, reason)
    return PreToolAction("refuse", tool_input, (
        f"when it was about to run, it needed approval ({perm.reason}), though it did not when it was checked "
        "before (the files it names changed in between). It was not run; call it again to be asked"))


def tool_response(name: str, tool_input: dict, output: ToolOutput) -> dict[str, Any]:
    """The ``tool_response`` a PostToolUse hook gets: the result text, with Claude Code's main keys where known."""
    out: dict[str, Any] = {"content": output.content, "is_error": output.is_error}
    if name == "Bash":
        out.update(stdout=output.content, stderr="", interrupted=False)
    elif "file_path" in tool_input or "notebook_path" in tool_input:
        out.update(filePath=tool_input.get("file_path", tool_input.get("notebook_path")), success=not output.is_error)
    return out


def post_event(output: ToolOutput) -> HookEvent:
    """PostToolUse, or PostToolUseFailure when the tool's result is an error (Claude Code fires one of them)."""
    return HookEvent.POST_TOOL_USE_FAILURE if output.is_error else POST


def post_tool_input(rec: SessionRecord, call: ToolCall, tool_input: dict, output: ToolOutput) -> dict[str, Any]:
    """Claude Code's input for the hooks after ``call``, run with ``tool_input``, which gave ``output``."""
    if output.is_error:
        return hook_input(HookEvent.POST_TOOL_USE_FAILURE, rec, tool_name=call.name, tool_input=tool_input,
                          tool_use_id=call.tool_use_id, error=output.content, is_interrupt=False)
    return hook_input(POST, rec, tool_name=call.name, tool_input=tool_input,
                      tool_response=tool_response(call.name, tool_input, output), tool_use_id=call.tool_use_id)


def post_tool(rec: SessionRecord, call: ToolCall, tool_input: dict, output: ToolOutput,
              cancel: threading.Event) -> tuple[ToolOutput, HookOutcome | None]:
    """Run the call's PostToolUse (or PostToolUseFailure) command hooks; what they say for the model joins its
    tool result. (The SDK client's callbacks are asked after, by the tool step: workflows/hooks/client_hooks.py.)"""
    event = post_event(output)
    if not rec.hooks.for_event(event, call.name):
        return output, None  # (before the payload: it copies the whole result)
    outcome = run_event(event, rec, post_tool_input(rec, call, tool_input, output), subject=call.name, cancel=cancel)
    return with_post_notes(call.name, output, outcome), outcome


def with_post_notes(name: str, output: ToolOutput, outcome: HookOutcome | None) -> ToolOutput:
    """``output`` with what the hooks after it said for the model (a block's reason, additional context)."""
    if outcome is None:
        return output
    notes = []
    event = outcome.event.value
    if outcome.decision == "block":
        notes.append(f"{event}:{name} hook feedback:\n{outcome.reason}")
    notes += [f"{event}:{name} hook additional context: {c}" for c in outcome.context]
    if not notes:
        return output
    blocks = [*output.blocks, *({"type": "text", "text": n} for n in notes)] if output.blocks else None
    return output.model_copy(update={"content": "\n\n".join([output.content, *notes]), "blocks": blocks})
