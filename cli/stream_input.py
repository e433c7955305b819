"""``--input-format stream-json``: the user messages a Claude Code client writes on stdin, one NDJSON line
each, read as prompts (``mainsail run``/``-p``; the SDK's live stream: cli/headless/stream.py). What goes out
is :mod:`cli.output`."""

from __future__ import annotations

import json
from typing import Iterable, Iterator


def read_stream_json_input(lines: Iterable[str]) -> Iterator[str]:
    """The user texts of ``--input-format stream-json`` input, one per NDJSON line.

    Each line: ``{"type": "user", "message": {"role": "user", "content": "text" |
    [{"type": "text", "text": "..."}, ...]}}``. Blank lines are skipped; several
    text blocks are joined with newlines.

    Raises:
        ValueError: ``Invalid stream-json input on line N: why``.
    """
    for n, raw in enumerate(lines, 1):
        obj = parse_input_line(raw, n)
        if obj is None:
            continue
        if obj.get("type") != "user":
            raise ValueError(f'Invalid stream-json input on line {n}: expected "type": "user", got {obj.get("type")!r}')
        yield user_text(obj, n)


def parse_input_line(raw: str, n: int) -> dict | None:
    """One line of stream-json input as an object (None for a blank line).

    Raises:
        ValueError: not JSON, or not an object.
    """
    line = raw.strip()
    if not line:
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"Invalid stream-json input on line {n}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"Invalid stream-json input on line {n}: expected a JSON object, got {type(obj).__name__}")
    return obj


def user_text(obj: dict, n: int) -> str:
    """The text of a ``{"type": "user", ...}`` input line.

    Raises:
        ValueError: the message is malformed, holds a block other than text, or no text.
    """

    def bad(why: str) -> ValueError:
        return ValueError(f"Invalid stream-json input on line {n}: {why}")

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
    return text


__all__ = ["parse_input_line", "read_stream_json_input", "user_text"]
