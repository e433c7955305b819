"""Session-level hooks in a ``hook`` step: SessionStart, UserPromptSubmit, Stop and PreCompact; and, in a
background ``hook`` step that nothing waits for, Notification and SessionEnd.

The engine holds what the hooks guard (the prompt in ``SessionRecord.held_prompt``; the end of the run
while the session stays ``querying``) and dispatches a ``hook`` step to the session's tools queue (the
hooks need the workspace). The step runs the event's hooks here, then
:meth:`~workflows.hooks.commits.HookCommits.settle_session_hook` commits the verdict (a ``hook`` entry)
and its effect in one fenced transaction: a worker that dies before it leaves the step to be run again,
hooks and all; after it, the step is done and a redelivery runs nothing.
"""

from __future__ import annotations

import threading

from workflows.hooks.client_hooks import answered_runs, client_callbacks
from workflows.hooks.runner import hook_input, run_event
from workflows.models import AssistantEntry, SessionRecord, StepRecord
from workflows.models.hooks import HookEvent

__all__ = ["END_REASONS", "NOTIFICATION_TYPE", "STOP_BLOCK_LIMIT", "context_text", "permission_message", "prompt_event", "run_hook_step"]

#: Stop blocks in one run before Mainsail ends it anyway (beside the run's max turns): a Stop hook that
#: ignores ``stop_hook_active`` must not keep the model answering forever.
STOP_BLOCK_LIMIT = 8

#: The only Notification Mainsail sends: a session started waiting for a person's permission.
NOTIFICATION_TYPE = "permission_prompt"

#: SessionEnd reasons (Claude Code's).
END_REASONS = ("clear", "logout", "prompt_input_exit", "other")


def permission_message(tools: list[str]) -> str:
    """Claude Code's Notification text for a permission prompt (hooks match on it, so it is kept as is)."""
    return f"Claude needs your permission to use {', '.join(dict.fromkeys(tools))}"


def prompt_event(rec: SessionRecord) -> HookEvent | None:
    """The next event whose hooks run before the held prompt reaches the model; None: send it."""
    if not rec.session_started and rec.hooks.for_event(HookEvent.SESSION_START, rec.start_source):
        return HookEvent.SESSION_START
    if not rec.prompt_checked and rec.hooks.for_event(HookEvent.USER_PROMPT_SUBMIT):
        return HookEvent.USER_PROMPT_SUBMIT
    return None


def context_text(event: HookEvent, text: str) -> str:
    """How a hook's additional context reaches the model: a reminder in the user's turn."""
    return f"<system-reminder>\n{event.value} hook additional context: {text}\n</system-reminder>"


def run_hook_step(engine, rec: SessionRecord, step: StepRecord, owner: str,
                  cancel: threading.Event) -> list[StepRecord]:
    """Run the step's event's hooks and commit the verdict with its effect; the steps that follow."""
    event = HookEvent(step.event)
    answer = ""
    subject = None
    if event is HookEvent.USER_PROMPT_SUBMIT:
        payload = hook_input(event, rec, prompt=rec.held_prompt or "")
    elif event is HookEvent.SESSION_START:
        subject = rec.start_source
        payload = hook_input(event, rec, source=subject)
    elif event in (HookEvent.STOP, HookEvent.SUBAGENT_STOP):
        answer = _last_answer(engine, rec.id)
        payload = hook_input(event, rec, stop_hook_active=rec.stop_hook_active, last_assistant_message=answer)
    elif event is HookEvent.PRE_COMPACT:
        subject = rec.compact_trigger or "auto"
        payload = hook_input(event, rec, trigger=subject, custom_instructions=rec.compact_instructions or "")
    elif step.background:
        return _run_background(engine, rec, step, owner, cancel)
    else:
        return engine.fail_step(rec.id, step.id, owner, f"Hook step {step.id[:8]}: {event.value} is not run here.")
    if (asked := _ask_client(engine, rec, step, owner, event, payload, subject)) is not None:
        return asked
    outcome = run_event(event, rec, payload, subject=subject, cancel=cancel, answered=answered_runs(rec, step))
    return engine.settle_session_hook(rec.id, step.id, owner, outcome, answer=answer)


def _ask_client(engine, rec: SessionRecord, step: StepRecord, owner: str, event: HookEvent, payload: dict,
                subject: str | None) -> list[StepRecord] | None:
    """The event has SDK client callbacks not answered yet: ask for them durably (the steps that follow);
    None: go on here (workflows/hooks/client_hooks.py)."""
    callbacks = client_callbacks(rec, event, subject)
    if not callbacks or step.hook_request is not None:
        return None
    return engine.ask_client_event(rec.id, step.id, owner, event, callbacks, payload)


def _run_background(engine, rec: SessionRecord, step: StepRecord, owner: str,
                    cancel: threading.Event) -> list[StepRecord]:
    """Notification or SessionEnd: run the hooks; their outcome is only a transcript entry."""
    event = HookEvent(step.event)
    if event is HookEvent.NOTIFICATION:
        subject = NOTIFICATION_TYPE
        payload = hook_input(event, rec, message=step.detail or "", notification_type=subject)
    else:
        subject = step.detail or "other"
        payload = hook_input(event, rec, reason=subject)
    if (asked := _ask_client(engine, rec, step, owner, event, payload, subject)) is not None:
        return asked
    outcome = run_event(event, rec, payload, subject=subject, cancel=cancel, answered=answered_runs(rec, step))
    return engine.settle_background_hook(rec.id, step.id, owner, outcome)


def _last_answer(engine, sid: str) -> str:
    entries = engine.read(lambda: engine.store.cached_entries(sid), what=f"transcript of session {sid[:8]}")
    return next((e.message.text() for e in reversed(entries) if isinstance(e, AssistantEntry)), "")
