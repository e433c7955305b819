"""Claude Code-compatible output for scripts: ``--output-format json|stream-json``
and ``--input-format stream-json``.

Pure formatting, no Click: the ``run -p`` command wires these in.

* :func:`result_json`: the one object ``claude -p --output-format json`` prints;
* :class:`StreamJson`: the NDJSON lines of ``--output-format stream-json`` (an
  ``init`` line, then one line per assistant message and user message, then the
  result line);
* :func:`read_stream_json_input`: the user texts of ``--input-format stream-json``.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Iterable, Iterator

from workflows.models import (
    AssistantEntry,
    ResultEntry,
    SessionRecord,
    UserEntry,
    new_id,
)
from workflows.tokens import model_limits
from workflows.transcript_io import assistant_api_message as api_message

#: Mainsail's result subtypes as Claude Code names them (it has no "cancelled").
RESULT_SUBTYPES = {
    "success": "success",
    "error_max_turns": "error_max_turns",
    "error_during_execution": "error_during_execution",
    "error_max_budget_usd": "error_max_budget_usd",
    "cancelled": "error_during_execution",
}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _usage(u) -> dict:
    return {
        "input_tokens": int(u.input_tokens),
        "output_tokens": int(u.output_tokens),
        "cache_creation_input_tokens": int(u.cache_creation_input_tokens),
        "cache_read_input_tokens": int(u.cache_read_input_tokens),
    }


def usd(cost: float | None) -> float | None:
    """A cost for JSON: None (``null``) when it is unknown (a model without a price); the key stays."""
    return None if cost is None else float(cost)


def model_usage(result: ResultEntry) -> dict:
    """Claude Code's ``modelUsage``: the run's main loop per model; the ``costUSD`` add up to ``total_cost_usd``."""
    out = {}
    for model, u in result.usage_by_model.items():
        out[model] = {
            "inputTokens": int(u.input_tokens),
            "outputTokens": int(u.output_tokens),
            "cacheReadInputTokens": int(u.cache_read_input_tokens),
            "cacheCreationInputTokens": int(u.cache_creation_input_tokens),
            "webSearchRequests": 0,
            "costUSD": usd(result.cost_by_model.get(model, 0.0)),
            "contextWindow": model_limits(model)[0],
        }
    return out


def cost_breakdown(result: ResultEntry) -> dict:
    """Mainsail's own key: the run's figures split into its main loop and its memory forks.

    ``main`` is what ``total_cost_usd`` and ``usage`` report; ``memory`` the memory forks that
    finished while the run went on (``saving``: one still ran when it ended; what it costs
    goes to the session); ``session`` the session's totals at the end of the run, forks included.
    """
    out = {
        "main": {"cost_usd": usd(result.total_cost_usd), "usage": _usage(result.usage)},
        "memory": {"cost_usd": usd(result.memory_cost_usd), "usage": _usage(result.memory_usage),
                   "saving": bool(result.memory_saving)},
    }
    if result.session_usage is not None:
        out["session"] = {"cost_usd": usd(result.session_cost_usd), "usage": _usage(result.session_usage)}
    return out


def result_json(result: ResultEntry) -> dict:
    """The object Claude Code prints with ``--output-format json`` (and last in stream-json).

    Claude Code's keys mean what they mean there: ``usage`` is the run's main loop (its
    model turns, here with its compactions) and ``total_cost_usd`` what those calls cost.
    Memory forks are not inside them (a run's answer never waits for its memory, so they
    could only ever be partly inside); ``cost_breakdown`` names them, and ``modelUsage``
    splits ``total_cost_usd`` per model.
    """
    subtype = RESULT_SUBTYPES.get(result.subtype, "error_during_execution")
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": bool(result.is_error or subtype != "success"),
        "duration_ms": int(result.duration_ms),
        "duration_api_ms": int(result.duration_api_ms),
        "num_turns": int(result.num_turns),
        "result": result.result,
        "session_id": result.session_id,
        "total_cost_usd": usd(result.total_cost_usd),
        "usage": _usage(result.usage),
        "modelUsage": model_usage(result),
        "cost_breakdown": cost_breakdown(result),
        "permission_denials": [dict(d) for d in result.permission_denials],
        "uuid": result.uuid,
    }


def content_blocks(content) -> list[dict]:
    """Message content as a list of API blocks (a plain string becomes one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b.model_dump(mode="json", exclude_none=True) for b in content]


class StreamJson:
    """Writes ``--output-format stream-json`` lines: one compact JSON object per line, flushed.

    ``write`` receives whole lines (with their newline). ``flush`` is called after
    each; by default the flush of the object ``write`` is bound to (e.g.
    ``sys.stdout.write`` -> ``sys.stdout.flush``), if any.
    """

    def __init__(self, write: Callable[[str], None] | None = None,
                 flush: Callable[[], None] | None = None) -> None:
        if write is None:
            write = sys.stdout.write
        self._write = write
        self._flush = flush or getattr(getattr(write, "__self__", None), "flush", None)

    def emit(self, obj: dict) -> None:
        self._write(_dumps(obj) + "\n")
        if self._flush is not None:
            self._flush()

    def init(self, rec: SessionRecord, tools: list[str]) -> dict:
        """The first line: ``{"type": "system", "subtype": "init", ...}``."""
        obj = {
            "type": "system",
            "subtype": "init",
            "cwd": rec.workspace,
            "session_id": rec.id,
            "tools": list(tools),
            "mcp_servers": [],
            "model": rec.model,
            "permissionMode": rec.permission_mode.value,
            "slash_commands": [],
            "apiKeySource": "none",
            "output_style": "default",
            "uuid": new_id(),
        }
        self.emit(obj)
        return obj

    def entry(self, e) -> dict | None:
        """The line for a transcript entry (assistant, user, result); None (nothing written) for others."""
        obj = stream_json_line(e)
        if obj is not None:
            self.emit(obj)
        return obj


def stream_json_line(e) -> dict | None:
    """The stream-json object for one transcript entry, or None when stream-json has none."""
    if isinstance(e, AssistantEntry):
        return {
            "type": "assistant",
            "message": api_message(e.message),
            "parent_tool_use_id": None,
            "session_id": e.session_id,
            "uuid": e.uuid,
        }
    if isinstance(e, UserEntry):
        return {
            "type": "user",
            "message": {"role": "user", "content": content_blocks(e.message.content)},
            "parent_tool_use_id": None,
            "session_id": e.session_id,
            "uuid": e.uuid,
        }
    if isinstance(e, ResultEntry):
        return result_json(e)
    return None


def read_stream_json_input(lines: Iterable[str]) -> Iterator[str]:
    """The user texts of ``--input-format stream-json`` input, one per NDJSON line.

    Each line: ``{"type": "user", "message": {"role": "user", "content": "text" |
    [{"type": "text", "text": "..."}, ...]}}``. Blank lines are skipped; several
    text blocks are joined with newlines.

    Raises:
        ValueError: ``Invalid stream-json input on line N: why``.
    """
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue

        def bad(why: str) -> ValueError:
            return ValueError(f"Invalid stream-json input on line {n}: {why}")

        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise bad(f"not JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise bad(f"expected a JSON object, got {type(obj).__name__}")
        if obj.get("type") != "user":
            raise bad(f'expected "type": "user", got {obj.get("type")!r}')
        message = obj.get("message")
        if not isinstance(message, dict):
            raise bad('"message" must be an object like {"role": "user", "content": "..."}')
        if message.get("role", "user") != "user":
            raise bad(f'"message.role" must be "user", got {message.get("role")!r}')
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            parts = []
            for i, block in enumerate(content):
                if not isinstance(block, dict) or block.get("type") != "text":
                    kind = block.get("type") if isinstance(block, dict) else type(block).__name__
                    raise bad(f"content block {i} is {kind!r}; only text blocks are supported")
                if not isinstance(block.get("text"), str):
                    raise bad(f'content block {i} has no "text" string')
                parts.append(block["text"])
            text = "\n".join(parts)
        else:
            raise bad('"message.content" must be a string or a list of text blocks')
        if not text.strip():
            raise bad("the message has no text")
        yield text


__all__ = ["RESULT_SUBTYPES", "StreamJson", "api_message", "content_blocks", "cost_breakdown", "model_usage",
           "read_stream_json_input", "result_json", "stream_json_line"]
