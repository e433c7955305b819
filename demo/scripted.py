"""A scripted model that speaks the Anthropic Messages API (the scripts: demo/script.py, demo/scripts.py).

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
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import httpx2

from demo.script import FINISHED_TEXT, Script, ScriptError, ScriptUsage, ToolUse, Turn, TurnFunction, turn_index
from demo.scripts import (
    DEMO_FILES,
    DEMO_PROMPT,
    SCRIPTS,
    default_fork_turn,
    demo_turn,
    last_tool_result,
    read_loop,
)
from demo.wire import Reply, error_body, estimate_tokens, sse_chunks
from workflows.model.side_calls import fork_kind

__all__ = [
    "DEMO_FILES",
    "DEMO_PROMPT",
    "FINISHED_TEXT",
    "SCRIPTS",
    "Reply",
    "Script",
    "ScriptError",
    "ScriptUsage",
    "ScriptedMessagesAPI",
    "ToolUse",
    "Turn",
    "TurnFunction",
    "async_transport",
    "default_fork_turn",
    "demo_turn",
    "get_api",
    "last_tool_result",
    "make_client",
    "read_loop",
    "transport",
]

SCRIPTED_BASE_URL = "http://scripted.invalid"
MAX_RECORDED_REQUESTS = 1000


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

    turn_index = staticmethod(turn_index)

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
                sse_chunks(message),
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
        return {"input_tokens": estimate_tokens({k: body.get(k) for k in ("system", "messages", "tools")})}

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
                output_tokens=estimate_tokens(content),
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

