"""The model step's runner: one model call of a session, streamed, and the commit of its reply.

A reply whose calls are all quick (Reads) has them run here and recorded with it (workflows/steps/tool.py);
the text streams to watchers as it arrives (:class:`LiveDeltas`), or every event of the reply when the session
asks for them (``SessionRecord.stream_events``: Claude Code's ``--include-partial-messages``).
"""

from __future__ import annotations

import json
import logging
import time

from workflows.context.assemble import build_request
from workflows.exceptions import MissingCredentials
from workflows.mcp.catalog import tool_schemas as mcp_schemas
from workflows.model.client import ModelReply, client_for, describe_api_error, for_session, overloaded, stream_reply
from workflows.model.lifecycle import lifecycle_note, retired
from workflows.models import SessionRecord, StepRecord
from workflows.steps.step_run import StepRun
from workflows.steps.tool import quick_calls, run_quick
from workflows.store.resilience import RedisError

log = logging.getLogger(__name__)


def model_step(run: StepRun) -> list[StepRecord]:
    """One model call and the commit of its reply (with the results of its quick calls: workflows/steps/tool.py)."""
    import anthropic  # here, not at import: a worker starts a second sooner (the SDK is large)

    engine, rec, step, owner, cancel, worker = run.engine, run.rec, run.step, run.owner, run.cancel, run.worker

    store, settings = engine.store, engine.settings
    sid = step.session_id
    request = engine.read(lambda: build_request(rec, store.cached_entries(sid, rec.revision), settings.max_tokens,
                                                mcp_schemas(store, rec)),
                          what=f"transcript of session {sid[:8]}")
    live = LiveDeltas(store, step, events=rec.stream_events)

    try:
        reply = _call_with_fallback(rec, request, settings, live, cancel)
    except InterruptedError:
        return []  # cancelled: the epoch moved on; nothing to record
    except MissingCredentials as exc:
        return engine.fail_step(sid, step.id, owner, str(exc))
    except anthropic.APIError as exc:
        why = describe_api_error(exc, settings.api_max_retries)
        if retired(request["model"]):  # the likely reason, which the API's own message may not give
            why += " " + lifecycle_note(request["model"])
        return engine.fail_step(sid, step.id, owner, why)
    except RedisError:
        raise  # not from the deltas (they never raise): let the lease and the reaper handle it
    except Exception as exc:  # a bug or a bad model name: end the run with the reason, never hang
        return engine.fail_step(sid, step.id, owner, f"Model step failed: {type(exc).__name__}: {exc}")
    ran = {}
    try:
        if calls := quick_calls(engine, rec, reply, run.serves_tools):
            ran = run_quick(engine, rec, calls, cancel, worker)
    except Exception:  # (a bug: the reply is paid for, so it is recorded; its calls go to tool steps, which report it)
        log.exception("quick calls of step %s (session %s) failed; they go to tool steps", step.id[:8], sid[:8])
    return engine.record_model_reply(sid, step.id, owner, reply, ran=ran)


def _call_with_fallback(rec: SessionRecord, request: dict, settings, live: LiveDeltas, cancel) -> ModelReply:
    """The model call; when the model is still overloaded (529) after the SDK's retries and the session
    has a fallback model, the call is made once more with it, as Claude Code's ``--fallback-model`` does.

    Raises:
        anthropic.APIError: the call failed (the fallback's error, when it was tried).
    """
    import anthropic

    on_event = live.event if live.events else None
    settings = for_session(settings, rec)
    try:
        return stream_reply(client_for(request["model"], settings), request, live.publish, cancel, on_event)
    except anthropic.APIStatusError as exc:
        fallback = rec.sent_model(rec.fallback_model) if rec.fallback_model else None
        if not overloaded(exc) or not fallback or fallback == request["model"]:
            raise
        first = describe_api_error(exc, settings.api_max_retries)
    log.warning("model %s overloaded for session %s; retrying once with fallback %s", request["model"],
                rec.id[:8], fallback)
    reply = stream_reply(client_for(fallback, settings), {**request, "model": fallback}, live.publish, cancel, on_event)
    reply.fallback_from, reply.fallback_error = request["model"], first
    return reply


class LiveDeltas:
    """Publishes a model call's text deltas for watchers; a delta Redis refuses is dropped, never fatal.

    Deltas are a courtesy (the reply is recorded whole when the call ends), so a Redis outage in the
    middle of a call must not abort it: the call goes on, watchers miss some text, and it is logged once.

    With ``events`` (the session's ``stream_events``), :meth:`event` publishes every raw event of the reply
    instead, as its JSON in an ``event`` field: a text delta's entry stays a ``text`` entry (with its
    ``text``), so watchers that show text read it as ever; the others are ``event`` entries, and
    ``message_start``'s carries ``ttft_ms`` (the time to it since the call began), as Claude Code reports it.
    """

    #: A long call refreshes the stream's expiry this often (its first delta sets it).
    EXPIRE_EVERY = 60.0

    def __init__(self, store, step: StepRecord, *, events: bool = False) -> None:
        self.store = store
        self.step = step
        self.events = events
        self.dropped = 0
        self._expire_at = 0.0
        self._started = time.monotonic()

    def publish(self, text: str) -> None:
        step = self.step
        self._send({"type": "text", "step": step.id, "attempt": step.attempt, "text": text})

    def event(self, event: dict) -> None:
        """One raw event of the reply (only with ``events``)."""
        step, kind = self.step, event.get("type")
        fields = {"type": "event", "step": step.id, "attempt": step.attempt, "event": json.dumps(event)}
        if kind == "content_block_delta" and (event.get("delta") or {}).get("type") == "text_delta":
            fields.update(type="text", text=event["delta"].get("text", ""))
        elif kind == "message_start":
            fields["ttft_ms"] = int((time.monotonic() - self._started) * 1000)
        self._send(fields)

    def _send(self, fields: dict) -> None:
        step = self.step
        now = time.monotonic()
        expire = now >= self._expire_at
        try:
            self.store.publish(step.session_id, fields, expire=expire)
            if expire:
                self._expire_at = now + self.EXPIRE_EVERY
        except RedisError as exc:
            self.dropped += 1
            if self.dropped == 1:
                log.warning("dropping live text of step %s: Redis refused it (%s); the reply is still recorded "
                            "whole", step.id[:8], f"{type(exc).__name__}: {exc}".splitlines()[0][:200])


__all__ = ["LiveDeltas", "model_step"]
