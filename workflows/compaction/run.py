"""The compaction step: replace the conversation, for the model, by a summary.

First choice: the session's memory document, if it has one (no model call); the
messages it does not cover yet stay in the model's view verbatim.
Otherwise a summarisation call asks for Claude Code's sections, honouring the
user's ``/compact`` instructions. The call has no tools and is never itself
compacted. The transcript keeps everything; the engine records a
``compact_boundary`` and a ``summary`` entry.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Protocol

import anthropic

from workflows.context.assemble import api_messages, model_view
from workflows.memory.records import has_content
from workflows.model.client import client_for, describe_api_error, for_session, stream_reply
from workflows.model.tokens import estimate_tokens
from workflows.models import AssistantEntry, SessionRecord, StepRecord, Usage, UserEntry
from workflows.store.resilience import RedisError

if TYPE_CHECKING:
    from workflows.settings import Settings
    from workflows.store.redis_store import Store


class CompactionEngine(Protocol):
    """What the compaction step uses of the engine (:class:`workflows.engine.Engine`; a worker hands it the
    engine wrapped in :class:`workflows.store.resilience.ResilientEngine`)."""

    store: Store
    settings: Settings

    def record_compaction(self, sid: str, step_id: str, owner: str, summary: str, *, source: str,
                          usage: Usage | None = None, duration_ms: int = 0, keep: list[str] = (),
                          kept_tokens: int = 0) -> list[StepRecord]: ...

    def record_compaction_failure(self, sid: str, step_id: str, owner: str, error: str) -> list[StepRecord]: ...


SUMMARY_SYSTEM = "You are a helpful AI assistant tasked with summarizing conversations."

COMPACT_PROMPT = """Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.
This summary should be thorough in capturing technical details, code patterns, and architectural decisions that would be essential for continuing development work without losing context.

Before providing your final summary, wrap your analysis in <analysis> tags to organize your thoughts. Then write the summary in <summary> tags with these sections:

1. Primary Request and Intent: Capture all of the user's explicit requests and intents in detail
2. Key Technical Concepts: List all important technical concepts, technologies, and frameworks discussed.
3. Files and Code Sections: Enumerate specific files and code sections examined, modified, or created. Include full code snippets where applicable and a summary of why each file matters.
4. Errors and fixes: List all errors that you ran into, and how you fixed them. Pay special attention to specific user feedback.
5. Problem Solving: Document problems solved and any ongoing troubleshooting efforts.
6. All user messages: List ALL user messages that are not tool results. These are critical for understanding the users' feedback and changing intent.
7. Pending Tasks: Outline any pending tasks that you have explicitly been asked to work on.
8. Current Work: Describe in detail precisely what was being worked on immediately before this summary request, paying special attention to the most recent messages from both user and assistant.
9. Optional Next Step: List the next step that you will take that is related to the most recent work you were doing. Only name a step that is directly in line with the user's most recent explicit requests; quote the most recent conversation to show exactly where you left off.
"""

SUMMARY_MAX_TOKENS = 20_000


def compaction_request(rec: SessionRecord, entries: list, max_tokens: int) -> dict:
    """The summarisation call: the conversation as the model sees it, then the compaction prompt."""
    messages = api_messages(entries, rec.model_context())
    prompt = COMPACT_PROMPT
    if rec.compact_instructions:
        prompt += f"\nAdditional instructions from the user for this summary:\n{rec.compact_instructions}\n"
    if messages and messages[-1]["role"] == "user":
        messages[-1]["content"].append({"type": "text", "text": prompt})
    else:
        messages.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
    return {"model": rec.sent_model(), "max_tokens": min(max_tokens, SUMMARY_MAX_TOKENS),
            "system": [{"type": "text", "text": SUMMARY_SYSTEM}], "messages": messages}


def extract_summary(text: str) -> str:
    """The <summary> part of the reply (the analysis is dropped); the whole text if untagged."""
    m = re.search(r"<summary>(.*?)(?:</summary>|$)", text, re.S)
    return (m.group(1) if m else text).strip()


KEEP_MAX_TOKENS = 40_000  # past this, the notes are too far behind: a summary call instead


def kept_after_notes(entries: list, covers: str | None, max_tokens: int = KEEP_MAX_TOKENS) -> list | None:
    """The messages the session's notes do not cover yet, to keep verbatim after a compaction from them.

    None when the notes cannot stand in for the conversation: what they cover is not in the
    model's view any more (an earlier compaction), or too much happened since. The kept part
    never starts with a tool result whose call it would cut off.
    """
    if covers is None:  # notes not written by the fork (put there by hand): they stand for everything
        return []
    view = model_view(entries)
    at = next((i for i, e in enumerate(view) if e.uuid == covers), None)
    if at is None:
        return None
    start = at + 1
    first = next((e for e in view[start:] if isinstance(e, (UserEntry, AssistantEntry))), None)
    if isinstance(first, UserEntry) and first.origin == "tool_result":
        start = max(i for i in range(start) if isinstance(view[i], AssistantEntry))
    kept = [e for e in view[start:]
            if isinstance(e, AssistantEntry) or (isinstance(e, UserEntry) and e.origin != "synthetic")]
    if _tokens_of(kept) > max_tokens:
        return None
    return kept


def _tokens_of(entries: list) -> int:
    return sum(estimate_tokens(e.message.model_dump(mode="json")) for e in entries)


def run_compaction(engine: CompactionEngine, rec: SessionRecord, step: StepRecord, owner: str,
                   cancel: threading.Event) -> list[StepRecord]:
    store, settings = engine.store, engine.settings
    sid = step.session_id
    memory = store.session_memory(sid)
    entries = store.cached_entries(sid)
    if has_content(memory):
        kept = kept_after_notes(entries, rec.memory_covers)
        if kept is not None:
            return engine.record_compaction(sid, step.id, owner, memory, source="session_memory",
                                            keep=[e.uuid for e in kept], kept_tokens=_tokens_of(kept))
    request = compaction_request(rec, entries, settings.max_tokens)
    try:
        reply = stream_reply(client_for(rec.sent_model(), for_session(settings, rec)), request, lambda _text: None, cancel)
    except InterruptedError:
        return []
    except anthropic.APIError as exc:
        return engine.record_compaction_failure(sid, step.id, owner, describe_api_error(exc, settings.api_max_retries))
    except RedisError:
        raise
    except Exception as exc:
        return engine.record_compaction_failure(sid, step.id, owner, f"{type(exc).__name__}: {exc}")
    summary = extract_summary(reply.message.text())
    if not summary:
        return engine.record_compaction_failure(sid, step.id, owner, "the summary came back empty")
    return engine.record_compaction(sid, step.id, owner, summary, source="summary_call",
                                    usage=reply.message.usage, duration_ms=reply.duration_ms)
