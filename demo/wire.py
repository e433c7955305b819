"""The Messages API's wire format, as the scripted model sends it: replies, SSE events, error bodies."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """A response before it is sent: the front end sleeps ``head_delay`` before the
    headers and ``chunk_delay`` between chunks (so an async front end can use
    ``asyncio.sleep``)."""

    status: int
    headers: dict[str, str]
    chunks: list[bytes] = field(default_factory=list)
    head_delay: float = 0.0
    chunk_delay: float = 0.0

    def iter_chunks(self) -> Iterator[bytes]:
        for i, chunk in enumerate(self.chunks):
            if i and self.chunk_delay:
                time.sleep(self.chunk_delay)
            yield chunk

    async def aiter_chunks(self) -> AsyncIterator[bytes]:
        for i, chunk in enumerate(self.chunks):
            if i and self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            yield chunk


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _split(s: str, pieces: int) -> list[str]:
    if len(s) <= 1 or pieces <= 1:
        return [s]
    size = -(-len(s) // pieces)
    return [s[i : i + size] for i in range(0, len(s), size)]


def _text_pieces(text: str) -> list[str]:
    """Word-ish deltas, as the real API streams them."""
    out: list[str] = []
    for word in text.split(" "):
        out.append(word if not out else " " + word)
    return [p for p in out if p] or [text]


def estimate_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, default=str)) // 4)


def error_body(error_type: str, message: str) -> dict:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def sse_chunks(message: dict) -> list[bytes]:
    """The SSE events of a streamed ``message``, as the API streams them (text in word-ish deltas, a tool's
    input JSON in three pieces)."""
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, stop_sequence=None, usage=dict(usage, output_tokens=1))
    chunks = [_sse("message_start", {"type": "message_start", "message": start}), _sse("ping", {"type": "ping"})]
    for idx, block in enumerate(message["content"]):
        if block["type"] == "text":
            chunks.append(
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}},
                )
            )
            for piece in _text_pieces(block["text"]):
                chunks.append(
                    _sse(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": piece}},
                    )
                )
        elif block["type"] != "tool_use":  # a server tool's block: whole, in its start event
            chunks.append(
                _sse("content_block_start", {"type": "content_block_start", "index": idx, "content_block": block})
            )
        else:
            start_block = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            chunks.append(
                _sse("content_block_start", {"type": "content_block_start", "index": idx, "content_block": start_block})
            )
            for piece in _split(json.dumps(block["input"]), 3):
                chunks.append(
                    _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": idx,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
                )
        chunks.append(_sse("content_block_stop", {"type": "content_block_stop", "index": idx}))
    chunks.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    chunks.append(_sse("message_stop", {"type": "message_stop"}))
    return chunks


__all__ = ["Reply", "error_body", "estimate_tokens", "sse_chunks"]
