"""Memory forks: small agent loops with tight tool permissions, one step each.

Two kinds run on the ``memory`` queue:

* the **session-memory update** (:class:`SessionMemoryFork`): the session's recent
  messages, its previous notes and the template; its only permitted tool is Edit
  on the session's notes document, which lives in Redis;
* the **memory extraction** (:class:`ExtractionFork`): the turn's new messages and
  the project's MEMORY.md; it may read freely (Read, Glob, Grep, read-only Bash)
  and write only memory records.

A fork's writes are staged in its state, never applied as it goes. After every
model turn the state (messages, staged writes, usage) is saved as a checkpoint,
fenced by the step's owner, so a worker that dies mid-fork costs at most the turn
in flight: the step's next attempt, on any worker, resumes from the checkpoint.
The staged writes land in the same MULTI/EXEC that marks the step done, so they
are written exactly once.
"""

from __future__ import annotations

import threading

import anthropic
from pydantic import ValidationError

from workflows.context.assemble import _blocks
from workflows.exceptions import MissingCredentials
from workflows.forks.extraction import ExtractionFork
from workflows.forks.session_memory import SessionMemoryFork
from workflows.forks.state import FORK_MAX_TOKENS, ForkState
from workflows.forks.verbs import ForkEngine
from workflows.model.client import client_for, describe_api_error, for_session, stream_reply
from workflows.models import SessionRecord, StepKind, StepRecord
from workflows.store.resilience import RedisError

# =========================================================================== the loop


def run_memory_fork(engine: ForkEngine, rec: SessionRecord, step: StepRecord, owner: str,
                    cancel: threading.Event) -> list[StepRecord]:
    """Run (or resume) one memory fork to its end and commit what it staged.

    An extraction first takes its project's extraction lock; while another session's
    extraction holds it, the step is given back to run a moment later (no worker waits).
    """
    lock = None
    if step.kind is StepKind.EXTRACT and rec.project_id:
        lock = engine.extraction_lock(rec, step)
        if not lock.acquire():  # another session of the project is extracting: wait, without a worker
            holder = lock.holder() or "another session"
            return engine.defer_step(step.session_id, step.id, owner, engine.settings.extract_wait_seconds,
                                     f"waiting for the project's running extraction ({holder})")
    try:
        return _run_fork(engine, rec, step, owner, cancel)
    finally:
        if lock is not None:
            lock.release()


def _run_fork(engine: ForkEngine, rec: SessionRecord, step: StepRecord, owner: str,
              cancel: threading.Event) -> list[StepRecord]:
    store, settings = engine.store, engine.settings
    sid = step.session_id
    fork = SessionMemoryFork(engine, rec) if step.kind is StepKind.MEMORY else ExtractionFork(engine, rec)
    saved = store.fork_checkpoint(sid, step.id)
    try:
        state = ForkState.model_validate_json(saved) if saved else fork.start()
    except ValidationError:
        state = fork.start()  # a checkpoint from another version: start over
    try:
        client = client_for(rec.sent_model(), for_session(settings, rec))
        while not state.finished and state.turns < settings.memory_fork_max_turns:
            request = {"model": rec.sent_model(), "max_tokens": min(settings.max_tokens, FORK_MAX_TOKENS),
                       "system": fork.system(), "tools": fork.tools(), "messages": state.messages}
            reply = stream_reply(client, request, lambda _text: None, cancel)
            msg = reply.message
            state.turns += 1
            state.usage = state.usage + msg.usage
            state.api_ms += reply.duration_ms
            state.messages.append({"role": "assistant", "content": _blocks(msg.content)})
            uses = msg.tool_uses()
            if uses:
                results = []
                for tu in uses:
                    out = fork.handle(tu.name, tu.input, state, cancel)
                    block = {"type": "tool_result", "tool_use_id": tu.id, "content": out.blocks or out.content}
                    if out.is_error:
                        block["is_error"] = True
                    results.append(block)
                state.messages.append({"role": "user", "content": results})
            else:
                state.finished = True
            if not engine.save_fork_checkpoint(sid, step.id, owner, state.model_dump_json()):
                return []  # no longer ours (lease lost): the step's owner now carries on
    except InterruptedError:
        return []
    except MissingCredentials as exc:
        return engine.record_fork_failure(sid, step.id, owner, str(exc))
    except anthropic.APIError as exc:
        return engine.record_fork_failure(sid, step.id, owner, describe_api_error(exc, settings.api_max_retries))
    except RedisError:
        raise  # transient: the lease expires and the reaper runs the step again, from the checkpoint
    except Exception as exc:  # a bug must not wedge the session in `extracting`
        return engine.record_fork_failure(sid, step.id, owner, f"{type(exc).__name__}: {exc}")
    return fork.commit(step, owner, state)
