"""Session titles: after a session's first turn the small, fast model names it, as Claude Code does.

Until then (and for good when the call fails) a session's title is its first prompt, cut to one line
(``workflows.commit.support._title``). The end of the first run asks for a ``title`` step
(``workflows.engine.titles``): a background step on the ``model`` queue, claimed, leased and reaped
like any other, so a title is asked once and recorded once even when a worker dies. Its one
Messages API call goes to the session's ``haiku`` alias (a session on a local model: that model);
its cost is the session's, under the ``title`` kind. The request's system prompt starts with
:data:`TITLE_MARK`, by which the demo's scripted model and the tests' fake API tell it from a session's
own turns (``workflows.model.side_calls.fork_kind``).
"""

from __future__ import annotations

import logging
import threading

from workflows.model.providers import is_local_model
from workflows.model.side_calls import TITLE_MARK
from workflows.models import AssistantEntry, SessionRecord, StepRecord, UserEntry

log = logging.getLogger(__name__)

SYSTEM = (TITLE_MARK + " Summarize the conversation below in a short title (3 to 7 words, under 50 "
          "characters) that says what the user is working on: the main task, and the key file or thing it is about. "
          "Answer with the title only: no quotes, no punctuation at the end, no preamble.")
#: The most of the prompt and of the answer the request shows (the title needs the gist, not all of it).
SHOWN_CHARS = 2000
#: A title longer than this (a model that did not follow the instructions) is cut.
MAX_TITLE = 80
MAX_TOKENS = 64


def small_model(rec: SessionRecord) -> str:
    """The model a session's side calls use: its ``haiku`` alias (a session on a local model: that model)."""
    own = rec.sent_model()
    return own if is_local_model(own) else rec.sent_model("haiku")


def first_exchange(entries) -> tuple[str, str]:
    """The first prompt of a transcript and the model's last text before the next prompt (its answer)."""
    prompt = answer = ""
    for e in entries:
        if isinstance(e, UserEntry) and e.origin in ("prompt", "inbox"):
            if prompt:
                break
            prompt = e.message.text()
        elif prompt and isinstance(e, AssistantEntry) and e.message.text().strip():
            answer = e.message.text()
    return prompt, answer


def title_request(model: str, prompt: str, answer: str) -> dict:
    """The Messages API request that asks for the title of a session that began with ``prompt``/``answer``."""
    text = f"<conversation>\nUser: {prompt[:SHOWN_CHARS]}\n\nAssistant: {answer[:SHOWN_CHARS]}\n</conversation>"
    return {"model": model, "max_tokens": MAX_TOKENS, "system": SYSTEM,
            "messages": [{"role": "user", "content": text}]}


def clean_title(text: str) -> str | None:
    """The title in a model's answer (its first non-empty line, unquoted, one line); None when it gave none."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(line.split()).strip("\"'`*#_ ")
    if line.lower().startswith("title:"):
        line = line[len("title:"):]
    line = line.strip("\"'`*#_ ").rstrip(".").strip("\"'`*_ ")
    if not line:
        return None
    return line if len(line) <= MAX_TITLE else line[:MAX_TITLE - 3] + "..."


def run_title_step(engine, rec: SessionRecord, step: StepRecord, owner: str,
                   cancel: threading.Event) -> list[StepRecord]:
    """Ask the small model for the session's title and commit it; any failure keeps the prompt's title."""
    import anthropic  # here, not at import: a worker starts sooner (the SDK is large)

    from workflows.exceptions import MissingCredentials
    from workflows.model.client import client_for, describe_api_error, for_session, stream_reply

    sid, settings = step.session_id, for_session(engine.settings, rec)
    prompt, answer = first_exchange(engine.store.entries(sid))
    if not prompt:
        return engine.record_title(sid, step.id, owner, None, error="the session has no prompt to name it by")
    model = small_model(rec)
    try:
        reply = stream_reply(client_for(model, settings), title_request(model, prompt, answer), lambda _t: None, cancel)
    except InterruptedError:
        return []
    except MissingCredentials as exc:
        return engine.record_title(sid, step.id, owner, None, error=str(exc))
    except anthropic.APIError as exc:
        return engine.record_title(sid, step.id, owner, None, error=describe_api_error(exc, settings.api_max_retries))
    except Exception as exc:  # noqa: BLE001 - a title is never worth more than a log line
        log.exception("title step %s of session %s failed", step.id[:8], sid[:8])
        return engine.record_title(sid, step.id, owner, None, error=f"{type(exc).__name__}: {exc}")
    title = clean_title(reply.message.text())
    return engine.record_title(sid, step.id, owner, title, usage=reply.message.usage, duration_ms=reply.duration_ms,
                               model=model, error=None if title else "the model gave no title")


__all__ = ["MAX_TITLE", "SYSTEM", "clean_title", "first_exchange", "run_title_step", "small_model",
           "title_request"]
