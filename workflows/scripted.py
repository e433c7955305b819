"""A scripted model that speaks the Anthropic Messages API.

One :class:`ScriptedMessagesAPI` holds the logic; two front ends carry it:

* in-process, through the real ``anthropic`` SDK, via :func:`transport`
  (an ``httpx2.MockTransport``) or :func:`make_client` — used by
  ``mainsail demo`` (model ``"scripted:demo"``) and by benchmarks;
* over real HTTP on 127.0.0.1, by ``tests/fakeapi.py`` — used by tests whose
  worker subprocesses point ``ANTHROPIC_BASE_URL`` at it.

The choice of turn is stateless: turn ``i`` answers a request whose
``messages`` hold ``i`` assistant messages. A retried request therefore gets
the same turn again (idempotent), and several sessions may share one API.
The only state is the request log and, per turn index, how many of that turn's
scripted ``errors`` have been served.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx2
from pydantic import BaseModel, ConfigDict, Field

from workflows.side_calls import fork_kind

__all__ = [
    "DEMO_FILES",
    "DEMO_PROMPT",
    "SCRIPTS",
    "Reply",
    "Script",
    "ScriptError",
    "ScriptUsage",
    "ScriptedMessagesAPI",
    "ToolUse",
    "Turn",
    "async_transport",
    "demo_turn",
    "get_api",
    "make_client",
    "read_loop",
    "transport",
]

SCRIPTED_BASE_URL = "http://scripted.invalid"
FINISHED_TEXT = "(script finished)"
MAX_RECORDED_REQUESTS = 1000

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


# --------------------------------------------------------------------------- models


class ToolUse(BaseModel):
    """One ``tool_use`` block of a scripted turn."""

    model_config = ConfigDict(extra="forbid")

    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class ScriptError(BaseModel):
    """An error response served before the turn succeeds."""

    model_config = ConfigDict(extra="forbid")

    status: int
    retry_after: float | None = None
    type: str | None = None  # default from status: 529 overloaded_error, 429 rate_limit_error, ...
    message: str | None = None

    @property
    def error_type(self) -> str:
        if self.type:
            return self.type
        return _ERROR_TYPES.get(self.status, "api_error" if self.status >= 500 else "invalid_request_error")


class Turn(BaseModel):
    """One scripted assistant message."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_uses: list[ToolUse] = Field(default_factory=list)
    # Content blocks sent as they are, before the text: the server tools' blocks (``server_tool_use``,
    # ``web_search_tool_result``) of a reply to a request with the web search tool.
    server_blocks: list[dict] = Field(default_factory=list)
    stop_reason: str | None = None  # default: "tool_use" if tool_uses else "end_turn"
    usage: ScriptUsage | None = None  # default: estimated from the request's size
    delay_seconds: float = Field(default=0.0, ge=0)  # before the response headers
    stream_delay_seconds: float = Field(default=0.0, ge=0)  # between SSE events
    errors: list[ScriptError] = Field(default_factory=list)

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_uses else "end_turn"


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turns: list[Turn] = Field(default_factory=list)
    # The memory forks' turns (chosen the same way, by their own assistant messages).
    # None: the default fork behaviour (:func:`default_fork_turn`).
    session_memory: list[Turn] | None = None
    extract: list[Turn] | None = None
    # The session title's answer (workflows/titles.py); None: the first prompt, as the title it replaces.
    title: list[Turn] | None = None

    @classmethod
    def from_file(cls, path: str | Path) -> Script:
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))


TurnFunction = Callable[[dict], Turn]


# --------------------------------------------------------------------------- the API


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


def _estimate_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, default=str)) // 4)


def error_body(error_type: str, message: str) -> dict:
    return {"type": "error", "error": {"type": error_type, "message": message}}


class ScriptedMessagesAPI:
    """The scripted Messages API. Thread-safe; stateless choice of turn."""

    def __init__(self, script: Script | TurnFunction | dict | None = None) -> None:
        self._lock = threading.Lock()
        # Bounded: a long-running worker serving demo sessions must not grow without end.
        self._requests: collections.deque[dict] = collections.deque(maxlen=MAX_RECORDED_REQUESTS)
        self._error_counts: dict[tuple[str, int], int] = {}
        self._ids = itertools.count(1)
        self._script: Script | TurnFunction = Script()
        self.set_script(script if script is not None else Script())

    # -- state ------------------------------------------------------------------

    @property
    def script(self) -> Script | TurnFunction:
        return self._script

    def set_script(self, script: Script | TurnFunction | dict) -> None:
        """Replace the script; error counters restart (turn indexes mean new turns)."""
        if isinstance(script, dict):
            script = Script.model_validate(script)
        if not isinstance(script, Script) and not callable(script):
            raise TypeError(f"not a Script or a callable: {script!r}")
        with self._lock:
            self._script = script
            self._error_counts.clear()

    def reset(self) -> None:
        """Forget every request and every served error."""
        with self._lock:
            self._requests.clear()
            self._error_counts.clear()

    def keep_requests(self, n: int) -> None:
        """Keep only the last ``n`` request bodies (a benchmark's API, whose kept bodies would otherwise be
        garbage its collector walks, on the cores the measured process runs on)."""
        with self._lock:
            self._requests = collections.deque(self._requests, maxlen=n)

    @property
    def all_requests(self) -> list[dict]:
        """Every JSON body received so far (a snapshot copy), in order, retries included."""
        with self._lock:
            return list(self._requests)

    @property
    def requests(self) -> list[dict]:
        """The sessions' own requests: :attr:`all_requests` without the memory forks'."""
        return [b for b in self.all_requests if fork_kind(b) is None]

    def fork_requests(self, kind: str) -> list[dict]:
        """The requests of one kind of memory fork: ``"session_memory"`` or ``"extract"``."""
        return [b for b in self.all_requests if fork_kind(b) == kind]

    def attempts(self, turn: int) -> int:
        """How many requests asked for ``turn`` so far."""
        return sum(1 for body in self.requests if self.turn_index(body) == turn)

    # -- the choice of turn -----------------------------------------------------

    @staticmethod
    def turn_index(body: dict) -> int:
        return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant")

    def turn_for(self, body: dict) -> Turn:
        index = self.turn_index(body)
        script = self._script
        kind = fork_kind(body)
        if kind is not None:  # a memory fork: its own turns, so the main script's turns are not consumed
            turns = getattr(script, kind, None)  # a list of turns, or (on a turn function) a function
            if turns is None:
                return default_fork_turn(kind, body, index)
            if callable(turns):
                turn = turns(body)
            else:
                turn = turns[index] if index < len(turns) else Turn(text="Done.", stop_reason="end_turn")
            return Turn.model_validate(turn) if isinstance(turn, dict) else turn
        if isinstance(script, Script):
            if index < len(script.turns):
                return script.turns[index]
            return Turn(text=FINISHED_TEXT, stop_reason="end_turn")
        turn = script(body)
        if isinstance(turn, dict):
            turn = Turn.model_validate(turn)
        return turn

    # -- responses --------------------------------------------------------------

    def prepare(self, body: dict) -> Reply:
        """Record ``body`` and build the reply (without sleeping)."""
        with self._lock:
            self._requests.append(body)
            request_no = next(self._ids)
        index = self.turn_index(body)
        try:
            turn = self.turn_for(body)
        except Exception as exc:  # a broken script is a 500, visible to the client
            return self._error_reply(500, "api_error", f"scripted turn {index} failed: {exc!r}", None, request_no)

        if turn.errors:
            key = (fork_kind(body) or "main", index)
            with self._lock:
                served = self._error_counts.get(key, 0)
                if served < len(turn.errors):
                    self._error_counts[key] = served + 1
                    err = turn.errors[served]
                else:
                    err = None
            if err is not None:
                message = err.message or f"scripted {err.error_type} ({err.status}) for turn {index}"
                return self._error_reply(err.status, err.error_type, message, err.retry_after, request_no)

        message = self._message(body, turn, index, request_no)
        headers = {"request-id": f"req_scripted_{request_no}"}
        if body.get("stream"):
            headers["content-type"] = "text/event-stream; charset=utf-8"
            headers["cache-control"] = "no-cache"
            return Reply(
                200,
                headers,
                self._sse_chunks(message),
                head_delay=turn.delay_seconds,
                chunk_delay=turn.stream_delay_seconds,
            )
        headers["content-type"] = "application/json"
        return Reply(200, headers, [json.dumps(message).encode()], head_delay=turn.delay_seconds)

    def respond(self, body: dict) -> tuple[int, dict[str, str], Iterator[bytes]]:
        """Record ``body``, sleep the turn's ``delay_seconds``, and return
        ``(status, headers, chunks)``; the chunks iterator sleeps
        ``stream_delay_seconds`` between SSE events."""
        reply = self.prepare(body)
        if reply.head_delay:
            time.sleep(reply.head_delay)
        return reply.status, reply.headers, reply.iter_chunks()

    def count_tokens(self, body: dict) -> dict:
        return {"input_tokens": _estimate_tokens({k: body.get(k) for k in ("system", "messages", "tools")})}

    @staticmethod
    def _error_reply(status: int, error_type: str, message: str, retry_after: float | None, request_no: int) -> Reply:
        headers = {"content-type": "application/json", "request-id": f"req_scripted_{request_no}"}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
        return Reply(status, headers, [json.dumps(error_body(error_type, message)).encode()])

    def _message(self, body: dict, turn: Turn, index: int, request_no: int) -> dict:
        content: list[dict] = [dict(b) for b in turn.server_blocks]
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for i, tu in enumerate(turn.tool_uses):
            content.append(
                {"type": "tool_use", "id": tu.id or f"toolu_{index:02d}_{i}", "name": tu.name, "input": tu.input}
            )
        if turn.usage is not None:
            usage = turn.usage.model_dump()
        else:
            usage = ScriptUsage(
                input_tokens=self.count_tokens(body)["input_tokens"],
                output_tokens=_estimate_tokens(content),
            ).model_dump()
        return {
            "id": f"msg_scripted_{index:02d}_{request_no}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "scripted",
            "content": content,
            "stop_reason": turn.effective_stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    @staticmethod
    def _sse_chunks(message: dict) -> list[bytes]:
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

    # -- routing (shared by the in-process transport and the HTTP server) --------

    def handle(self, method: str, path: str, raw_body: bytes) -> Reply:
        """Route one HTTP request: ``POST /v1/messages`` and ``/v1/messages/count_tokens``."""
        path = path.split("?", 1)[0].rstrip("/")
        try:
            body = json.loads(raw_body or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            return self._error_reply(400, "invalid_request_error", f"invalid JSON body: {exc}", None, 0)
        if method == "POST" and path.endswith("/v1/messages"):
            return self.prepare(body)
        if method == "POST" and path.endswith("/v1/messages/count_tokens"):
            return Reply(200, {"content-type": "application/json"}, [json.dumps(self.count_tokens(body)).encode()])
        return self._error_reply(404, "not_found_error", f"{method} {path} is not scripted", None, 0)


# --------------------------------------------------------------------------- in-process transport


class _ReplyStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A response body that honours ``stream_delay_seconds`` in sync and async clients."""

    def __init__(self, reply: Reply) -> None:
        self._reply = reply

    def __iter__(self) -> Iterator[bytes]:
        yield from self._reply.iter_chunks()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._reply.aiter_chunks():
            yield chunk


def transport(api: ScriptedMessagesAPI) -> httpx2.MockTransport:
    """An ``httpx2.MockTransport`` serving ``api`` in-process (sync clients; blocks on delays)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        reply = api.handle(request.method, request.url.path, request.content)
        if reply.head_delay:
            time.sleep(reply.head_delay)
        return httpx2.Response(reply.status, headers=reply.headers, stream=_ReplyStream(reply))

    return httpx2.MockTransport(handler)


def async_transport(api: ScriptedMessagesAPI) -> httpx2.MockTransport:
    """Like :func:`transport`, for ``httpx2.AsyncClient`` (delays use ``asyncio.sleep``)."""

    async def handler(request: httpx2.Request) -> httpx2.Response:
        reply = api.handle(request.method, request.url.path, request.content)
        if reply.head_delay:
            await asyncio.sleep(reply.head_delay)
        return httpx2.Response(reply.status, headers=reply.headers, stream=_ReplyStream(reply))

    return httpx2.MockTransport(handler)


def make_client(api: ScriptedMessagesAPI | str, **kw: Any) -> anthropic.Anthropic:
    """A real ``anthropic.Anthropic`` client talking to ``api`` in-process.

    ``api`` may be a registry name (see :func:`get_api`). Keyword arguments
    (``max_retries``, ``timeout``, ...) go to the client.
    """
    if isinstance(api, str):
        api = get_api(api)
    kw.setdefault("api_key", "scripted")
    kw.setdefault("base_url", SCRIPTED_BASE_URL)
    kw.setdefault("http_client", httpx2.Client(transport=transport(api)))
    return anthropic.Anthropic(**kw)


# --------------------------------------------------------------------------- the demo

DEMO_PROMPT = "Fix the bug in calc.py and run it."

DEMO_FILES: dict[str, str] = {
    "calc.py": (
        "def add(a, b):\n"
        "    return a - b\n"
        "\n"
        "\n"
        'if __name__ == "__main__":\n'
        '    print("2 + 3 =", add(2, 3))\n'
    ),
}


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_block_text(b.get("text", b.get("content", ""))) for b in content if isinstance(b, dict))
    return ""


def last_tool_result(body: dict) -> tuple[str, bool]:
    """The text and ``is_error`` flag of the last ``tool_result`` in the request."""
    for message in reversed(body.get("messages") or []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return _block_text(block.get("content", "")), bool(block.get("is_error"))
    return "", False


def demo_turn(body: dict) -> Turn:
    """The ``mainsail demo`` model: read calc.py, fix add(), run it, summarise."""
    index = ScriptedMessagesAPI.turn_index(body)
    if index == 0:
        return Turn(
            text="I'll look at calc.py first.",
            tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})],
        )
    if index == 1:
        return Turn(
            text="`add()` subtracts instead of adding: it returns `a - b`. I'll change it to `a + b`.",
            tool_uses=[
                ToolUse(
                    name="Edit",
                    input={"file_path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
                )
            ],
        )
    if index == 2:
        return Turn(
            text="Now let me run it to check.",
            tool_uses=[ToolUse(name="Bash", input={"command": "python3 calc.py", "description": "Run the calculator"})],
        )
    if index == 3:
        output, _ = last_tool_result(body)
        output = output.strip()
        if "2 + 3 = 5" in output:
            result = "it now prints `2 + 3 = 5`."
        else:
            result = f"but running it printed:\n\n{output or '(no output)'}"
        return Turn(text=f"Fixed the bug in calc.py: `add()` used `-` instead of `+`; {result}")
    return Turn(text=FINISHED_TEXT, stop_reason="end_turn")


_NOTES_PATH = re.compile(r'file_path "([^"]+)"')
_FIRST_PROMPT = re.compile(r"^User: (.+)$", re.M)
_TITLE_PROMPT = re.compile(r"<conversation>\nUser: (.*?)\n\nAssistant: ", re.S)


def default_fork_turn(kind: str, body: dict, index: int) -> Turn:
    """What the scripted model does as a memory fork when its script says nothing.

    The session-memory fork writes the first prompt it sees into "Current State",
    then stops; the extraction saves nothing. Both are one or two turns.
    """
    if kind == "title":  # the title a session has before it: its first prompt on one line
        asked = _TITLE_PROMPT.search(_block_text((body.get("messages") or [{}])[0].get("content")))
        line = " ".join(asked.group(1).split()) if asked else ""
        return Turn(text=line if len(line) <= 60 else line[:57] + "...", stop_reason="end_turn")
    if kind == "session_memory" and index == 0:
        messages = body.get("messages") or [{}]
        prompt = _block_text(messages[0].get("content"))
        path = _NOTES_PATH.search(prompt)
        asked = _FIRST_PROMPT.search(prompt)
        if path and asked:
            line = "_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._"
            return Turn(tool_uses=[ToolUse(name="Edit", input={
                "file_path": path.group(1), "old_string": line,
                "new_string": f"{line}\nWorking on: {asked.group(1).strip()[:200]}"})])
    return Turn(text="Nothing to save." if kind == "extract" else "Notes updated.", stop_reason="end_turn")


# --------------------------------------------------------------------------- benchmarks


def read_loop(n: int, file_path: str = "bench.txt") -> Script:
    """``n`` turns that each Read ``file_path``, then an end_turn. No delays."""
    turns = [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": file_path})]) for _ in range(n)]
    turns.append(Turn(text=f"Read {file_path} {n} times.", stop_reason="end_turn"))
    return Script(turns=turns)


# --------------------------------------------------------------------------- named scripts

#: name -> factory(*string args) -> Script | turn function. ``"read_loop:5"`` calls
#: ``SCRIPTS["read_loop"]("5")``.
SCRIPTS: dict[str, Callable[..., Script | TurnFunction]] = {
    "demo": lambda: demo_turn,
    "read_loop": lambda n="1", file_path="bench.txt": read_loop(int(n), file_path),
}

_apis: dict[str, ScriptedMessagesAPI] = {}
_apis_lock = threading.Lock()


def get_api(name: str) -> ScriptedMessagesAPI:
    """The (cached, per name) API for a script name.

    Accepts ``"demo"``, ``"read_loop:5"``, ``"read_loop:5:other.txt"``, the same
    with a ``"scripted:"`` prefix (a session's model name), and
    ``"file:/path/script.json"`` (not cached: the file is read each time).

    Raises:
        KeyError: no such script.
    """
    if name.startswith("scripted:"):
        name = name[len("scripted:") :]
    if name.startswith("file:"):
        return ScriptedMessagesAPI(Script.from_file(name[len("file:") :]))
    with _apis_lock:
        api = _apis.get(name)
        if api is None:
            key, *args = name.split(":")
            if key not in SCRIPTS:
                raise KeyError(f"no scripted model {name!r}; known: {', '.join(sorted(SCRIPTS))}")
            api = _apis[name] = ScriptedMessagesAPI(SCRIPTS[key](*args))
        return api

