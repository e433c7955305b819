"""A streamed Messages API reply put together from its events, as plain dicts.

The SDK still makes the call (``client.post(..., stream=True)``: its transport, headers, retries,
status errors, the SSE decoder and its mid-stream ``error`` event), but with ``cast_to=object`` it
yields each event's JSON as it came instead of building a pydantic event, a snapshot and a copy of
that snapshot per delta. That construction was the largest part of a model step after the network
(bench/README.md: about a quarter of an in-process agent step), and it grows with every delta.

:class:`MessageAccumulator` applies the events as the SDK's own ``accumulate_event``
(anthropic/lib/streaming/_messages.py) does: the message from ``message_start``; blocks appended by
``content_block_start``; text, thinking, signature and citations deltas; a tool input's JSON
fragments joined and parsed once, when its block stops (the SDK re-parses the growing prefix at every
fragment); ``message_delta``'s stop reason and usage, whose counts are cumulative totals (they
overwrite, and an absent one leaves the ``message_start`` figure).
"""

from __future__ import annotations

import json
from typing import Any

#: Blocks whose ``input`` arrives as ``input_json_delta`` fragments (the SDK's ``TRACKS_TOOL_INPUT``).
TOOL_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use"})
#: Usage counts a ``message_delta`` may carry; each replaces the earlier figure when present.
DELTA_USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use",
               "output_tokens_details")


class StreamProtocolError(ValueError):
    """The event stream broke the Messages API's order or sent a tool input that is not JSON."""


class MessageAccumulator:
    """The message so far. :meth:`apply` each event dict in order (it returns the text an event added,
    for live output); :meth:`message` is the finished message, ``None`` values dropped from it, its
    usage and its blocks (as ``model_dump(exclude_none=True)`` of the SDK's message would)."""

    def __init__(self) -> None:
        self._message: dict[str, Any] | None = None
        self._json: dict[int, list[str]] = {}

    def apply(self, event: dict) -> str | None:
        """Apply one event; the text it adds to a text block, if any."""
        kind = event.get("type")
        if self._message is None:
            if kind != "message_start":
                raise StreamProtocolError(f'Unexpected event order, got {kind} before "message_start"')
            message = dict(event["message"])
            message["content"] = list(message.get("content") or [])
            message["usage"] = dict(message.get("usage") or {})
            self._message = message
            return None
        content = self._message["content"]
        if kind == "content_block_start":
            content.append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            return self._delta(content[event["index"]], event["index"], event["delta"])
        elif kind == "content_block_stop":
            self._finish_input(content[event["index"]], event["index"])
        elif kind == "message_delta":
            delta, usage = event.get("delta") or {}, event.get("usage") or {}
            for key in ("stop_reason", "stop_sequence", "stop_details"):
                self._message[key] = delta.get(key)
            if delta.get("container") is not None:
                self._message["container"] = delta["container"]
            totals = self._message["usage"]
            totals["output_tokens"] = usage.get("output_tokens", totals.get("output_tokens", 0))
            for key in DELTA_USAGE:
                if usage.get(key) is not None:
                    totals[key] = usage[key]
        return None

    def _delta(self, block: dict, index: int, delta: dict) -> str | None:
        kind, block_type = delta.get("type"), block.get("type")
        if kind == "text_delta" and block_type == "text":
            block["text"] = block.get("text", "") + delta["text"]
            return delta["text"]
        if kind == "input_json_delta" and block_type in TOOL_INPUT_BLOCKS:
            self._json.setdefault(index, []).append(delta.get("partial_json") or "")
        elif kind == "citations_delta" and block_type == "text":
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]
        elif kind == "thinking_delta" and block_type == "thinking":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta" and block_type == "thinking":
            block["signature"] = delta["signature"]
        return None

    def _finish_input(self, block: dict, index: int) -> None:
        raw = "".join(self._json.pop(index, ()))
        if not raw:  # no fragments: the input given at the block's start stands (``{}``)
            return
        try:
            block["input"] = json.loads(raw)
        except ValueError as exc:
            raise StreamProtocolError(
                f"Unable to parse tool parameter JSON from model. Please retry your request or adjust your "
                f"prompt. Error: {exc}. JSON: {raw}") from None

    def message(self) -> dict[str, Any]:
        """The finished message (tool inputs of blocks never stopped are parsed now)."""
        if self._message is None:
            raise StreamProtocolError('The stream ended before "message_start"')
        for index in list(self._json):
            self._finish_input(self._message["content"][index], index)
        return _without_none(self._message)


def _without_none(message: dict) -> dict:
    """``None`` fields dropped at every depth, as ``model_dump(exclude_none=True)`` drops them from the
    SDK's models, except inside a tool's ``input`` (a ``null`` there is the model's)."""
    out = _drop_none({k: v for k, v in message.items() if k != "content"})
    out["content"] = [{k: (v if k == "input" and block.get("type") in TOOL_INPUT_BLOCKS else _drop_none(v))
                       for k, v in block.items() if v is not None} for block in message.get("content") or []]
    return out


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


__all__ = ["MessageAccumulator", "StreamProtocolError"]
