"""What hooks' exit codes and JSON output mean, per event (Claude Code's rules).

- exit 0: success. Its stdout is context for the model after UserPromptSubmit and SessionStart;
  JSON on stdout is read (``continue``, ``stopReason``, ``suppressOutput``, ``systemMessage``,
  ``decision``/``reason``, ``hookSpecificOutput``).
- exit 2: blocking. PreToolUse: the call is refused and stderr is its result; PostToolUse and
  Stop: stderr goes to the model; UserPromptSubmit: the prompt is blocked (stderr to the user);
  PreCompact: the compaction is blocked (stderr to the user); other events: stderr is shown to the user.
- any other code, a timeout, a command that cannot start: a non-blocking error, shown to the user.

Pure functions of :class:`HookRun` values: no I/O.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from workflows.models.hooks import HookEvent

__all__ = ["ClientHookRequest", "HookOutcome", "HookRun", "interpret"]

SHOWN_CHARS = 10_000  # of a hook's stdout and stderr kept in the transcript

Decision = Literal["allow", "deny", "ask", "block"]
_RANK = {None: 0, "allow": 1, "ask": 2, "block": 3, "deny": 3}  # deny > ask > allow, as Claude Code


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HookRun(_Model):
    """One command hook's run: what it printed and how it ended."""

    command: str
    exit_code: int | None = None  # None: it did not finish (timeout, cancel, could not start)
    stdout: str = ""
    stderr: str = ""
    error: str | None = None  # why it did not finish
    duration_ms: int = 0


class ClientHookRequest(_Model):
    """An event's hooks that only the Agent SDK client can run (its callbacks), asked durably.

    Kept in the session record (``SessionRecord.client_hooks``) while the session waits, with no step
    running, for the client's ``hook_callback`` answers (cli/headless/hook_callbacks.py). Once answered
    (``runs``), the event's hook step runs again and joins them to the command hooks'
    (:mod:`workflows.hooks.client_hooks`); PostToolUse's answer settles the held tool result at once.
    """

    id: str
    event: HookEvent
    callbacks: list[str] = Field(default_factory=list)
    hook_input: dict[str, Any] = Field(default_factory=dict)
    epoch: int = 0
    tool_use_id: str | None = None  # PostToolUse: its call
    detail: str | None = None  # a background hook step's subject (StepRecord.detail)
    runs: list[HookRun] | None = None  # the client's answers, once given


class HookOutcome(_Model):
    """What one event's hooks decided together. Committed as a transcript entry before it is acted on."""

    event: HookEvent
    runs: list[HookRun] = Field(default_factory=list)
    decision: Decision | None = None
    reason: str = ""  # for the model (PreToolUse deny, PostToolUse/Stop block) or the user (prompt block)
    updated_input: dict[str, Any] | None = None  # PreToolUse's hookSpecificOutput.updatedInput
    context: list[str] = Field(default_factory=list)  # additionalContext (and UserPromptSubmit/SessionStart stdout)
    messages: list[str] = Field(default_factory=list)  # for the user: systemMessage, non-blocking errors
    stop: bool = False  # "continue": false
    stop_reason: str = ""

    @property
    def blocked(self) -> bool:
        return self.decision in ("block", "deny")


def interpret(event: HookEvent, runs: list[HookRun]) -> HookOutcome:
    """Combine ``runs`` of ``event``'s hooks into one :class:`HookOutcome`."""
    out = HookOutcome(event=event, runs=[_trimmed(r) for r in runs])
    reasons: list[str] = []
    for run in runs:
        name = _short(run.command)
        if run.exit_code is None:
            out.messages.append(f"{event.value} hook {name} failed: {run.error or 'it did not finish'}")
        elif run.exit_code == 2:
            _blocking(out, event, name, run.stderr.strip(), reasons)
        elif run.exit_code != 0:
            detail = run.stderr.strip() or run.stdout.strip() or "no output"
            out.messages.append(f"{event.value} hook {name} failed with exit code {run.exit_code}: {detail}")
        else:
            _success(out, event, name, run.stdout, reasons)
    out.reason = "\n".join(r for r in reasons if r)
    return out


def _blocking(out: HookOutcome, event: HookEvent, name: str, stderr: str, reasons: list[str]) -> None:
    if event is HookEvent.PRE_TOOL_USE:
        _decide(out, "deny")
    elif event in (HookEvent.POST_TOOL_USE, HookEvent.POST_TOOL_USE_FAILURE, HookEvent.USER_PROMPT_SUBMIT, HookEvent.STOP, HookEvent.SUBAGENT_STOP,
                   HookEvent.PRE_COMPACT):
        _decide(out, "block")
    else:  # nothing to block: the user sees stderr
        out.messages.append(f"{event.value} hook {name} exited 2: {stderr or 'no output'}")
        return
    reasons.append(stderr or f"blocked by the {event.value} hook {name}")


def _success(out: HookOutcome, event: HookEvent, name: str, stdout: str, reasons: list[str]) -> None:
    data = _json_object(stdout)
    if data is None:
        if event in (HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START) and stdout.strip():
            out.context.append(stdout.strip())
        return
    if data.get("continue") is False:
        out.stop = True
        out.stop_reason = out.stop_reason or str(data.get("stopReason") or "")
    if isinstance(data.get("systemMessage"), str) and data["systemMessage"]:
        out.messages.append(data["systemMessage"])
    specific = data.get("hookSpecificOutput") if isinstance(data.get("hookSpecificOutput"), dict) else {}
    decision, reason = data.get("decision"), data.get("reason")
    if event is HookEvent.PRE_TOOL_USE:
        wanted = specific.get("permissionDecision")
        if wanted in ("allow", "deny", "ask"):
            reason = specific.get("permissionDecisionReason", reason)
        else:  # the older form: "decision": "approve" | "block"
            wanted = {"approve": "allow", "block": "deny"}.get(decision)
        if wanted:
            _decide(out, wanted)
            if wanted != "allow":  # an allow's reason is not for the model
                reasons.append(str(reason or "") or f"{wanted} by the PreToolUse hook {name}")
        if isinstance(specific.get("updatedInput"), dict):
            out.updated_input = specific["updatedInput"]
    elif decision == "block":
        _decide(out, "block")
        reasons.append(str(reason or "") or f"blocked by the {event.value} hook {name}")
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        out.context.append(context.strip())


def _decide(out: HookOutcome, decision: Decision) -> None:
    if _RANK[decision] > _RANK[out.decision] or (decision == "deny" and out.decision == "block"):
        out.decision = decision


def _json_object(text: str) -> dict | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _short(command: str) -> str:
    line = " ".join(command.split())
    return repr(line if len(line) <= 60 else line[:57] + "...")


def _trimmed(run: HookRun) -> HookRun:
    return run.model_copy(update={"stdout": run.stdout[:SHOWN_CHARS], "stderr": run.stderr[:SHOWN_CHARS]})
