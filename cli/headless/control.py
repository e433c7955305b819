"""Claude Code's control protocol, as the Agent SDK speaks it over stream-json stdin and stdout.

Both sides send ``{"type": "control_request", "request_id": ..., "request": {"subtype": ...}}``
and answer with ``{"type": "control_response", "response": {"subtype": "success" | "error",
"request_id": ..., "response" | "error": ...}}``.

From the client, :class:`Control` answers ``initialize``, ``interrupt``, ``set_permission_mode``,
``set_model``, ``get_context_usage``, ``rewind_files``, and the MCP ones of cli/headless/sdk_mcp.py
(``mcp_status``, ``mcp_reconnect``; ``mcp_toggle`` and ``stop_task`` refused saying why); any other
subtype gets an error response naming it (a client never waits on silence). Towards the client,
:meth:`Control.ask` sends a request (such as ``can_use_tool``, or ``mcp_message`` to an SDK MCP server)
and calls back with the client's answer when it arrives.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any, Callable

from cli.output import CLAUDE_CODE_VERSION, StreamJson
from workflows.model.tokens import model_limits
from workflows.models import PermissionMode

Answer = Callable[[dict | Exception], None]


class ControlError(Exception):
    """A control request that cannot be done; its message goes back to the client, with ``code`` as
    the response's ``error_code`` when given (Claude Code's, e.g. ``bypass_disabled``)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class Control:
    """One stream-json connection's control requests, both ways.

    Args:
        out: where responses and requests are written.
        handlers: subtype -> function of the request's fields returning the response body.
    """

    def __init__(self, out: StreamJson, handlers: dict[str, Callable[[dict], dict]]) -> None:
        self.out = out
        self.handlers = handlers
        self._waiting: dict[str, Answer] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ from the client

    def on_request(self, msg: dict) -> None:
        """Answer one ``control_request`` from the client."""
        request_id = msg.get("request_id")
        request = msg.get("request") if isinstance(msg.get("request"), dict) else {}
        subtype = request.get("subtype")
        handler = self.handlers.get(subtype)
        if handler is None:
            known = ", ".join(sorted(self.handlers))
            self._error(request_id, f"Unsupported control request {subtype!r}: Mainsail answers {known}.")
            return
        try:
            body = handler(request)
        except ControlError as exc:
            self._error(request_id, str(exc), exc.code)
            return
        except Exception as exc:  # the client gets a reason; the connection goes on
            self._error(request_id, f"{subtype} failed: {type(exc).__name__}: {exc}")
            return
        self.out.emit({"type": "control_response",
                       "response": {"subtype": "success", "request_id": request_id, "response": body or {}}})

    def _error(self, request_id, text: str, code: str | None = None) -> None:
        response = {"subtype": "error", "request_id": request_id, "error": text}
        if code:
            response["error_code"] = code
        self.out.emit({"type": "control_response", "response": response})

    # ------------------------------------------------------------------ to the client

    def ask(self, request: dict, on_answer: Answer) -> str:
        """Send ``request`` to the client; ``on_answer`` gets its response body (or an Exception)."""
        request_id = str(uuid.uuid4())
        with self._lock:
            self._waiting[request_id] = on_answer
        self.out.emit({"type": "control_request", "request_id": request_id, "request": request})
        return request_id

    def cancel(self, request_id: str) -> None:
        """The question is settled elsewhere (e.g. ``mainsail approve``): tell the client to drop it."""
        with self._lock:
            if self._waiting.pop(request_id, None) is None:
                return
        self.out.emit({"type": "control_cancel_request", "request_id": request_id})

    def on_response(self, msg: dict) -> None:
        """A ``control_response`` from the client, to one of our requests."""
        response = msg.get("response") if isinstance(msg.get("response"), dict) else {}
        with self._lock:
            on_answer = self._waiting.pop(response.get("request_id"), None)
        if on_answer is None:
            return  # an answer to a request settled elsewhere meanwhile
        if response.get("subtype") == "error":
            on_answer(ControlError(str(response.get("error") or "the client answered with an error")))
        else:
            on_answer(response.get("response") if isinstance(response.get("response"), dict) else {})

    def pending(self) -> int:
        with self._lock:
            return len(self._waiting)


def initialize_response(mode: PermissionMode, api_key_source: str, agents: dict | None = None,
                        commands: list[dict] | None = None, styles: tuple[str, list[str]] | None = None
                        ) -> dict[str, Any]:
    """What Mainsail says about itself to ``initialize`` (the keys the Agent SDK reads); ``commands``: the custom
    slash commands (``name``, ``description``, ``argumentHint``); ``styles``: the session's output style and the
    names of those it could use."""
    style, available = styles or ("default", ["default"])
    return {
        "commands": list(commands or []),
        "agents": [{"name": a.name, "description": a.description, "model": a.model or "inherit"}
                   for a in (agents or {}).values()],
        "output_style": style,
        "available_output_styles": list(available),
        "models": [],
        "account": {"tokenSource": "none", "apiKeySource": api_key_source, "apiProvider": "firstParty"},
        "pid": os.getpid(),
        "claude_code_version": CLAUDE_CODE_VERSION,
        "current_permission_mode": mode.value,
        "hook_on_failure_supported": False,  # a failing callback is a non-blocking error, as Claude Code's default
        "session_state": "idle",
    }


def context_usage(model: str, used: int) -> dict[str, Any]:
    """``get_context_usage``: tokens in the session's context against its model's window."""
    window = model_limits(model)[0]
    return {
        "categories": [{"id": "messages", "name": "Messages", "tokens": used, "kind": "used"}],
        "totalTokens": used,
        "maxTokens": window,
        "rawMaxTokens": window,
        "percentage": round(100.0 * used / window, 1) if window else 0.0,
        "model": model,
    }


__all__ = ["Control", "ControlError", "context_usage", "initialize_response"]
