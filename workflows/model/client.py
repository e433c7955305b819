"""The model call: the official anthropic SDK, streaming, with its own retries.

A model whose name a registered provider claims (workflows/model/providers.py;
the demo's ``scripted:NAME`` models, for instance) gets the client that provider
makes; every other model gets an SDK client for the Anthropic Messages API.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from workflows.exceptions import MissingCredentials
from workflows.model import request_json
from workflows.model.providers import is_local_model, provider_for
from workflows.model.stream import MessageAccumulator
from workflows.models import AssistantMessage, Usage
from workflows.settings import Settings

if TYPE_CHECKING:  # importing the SDK takes over a second: commands that make no call skip it
    import anthropic

_clients: dict[tuple, anthropic.Anthropic] = {}
_clients_lock = threading.Lock()


#: Threads that share one SDK client (and its HTTP connection pool). httpcore's pool scans all its
#: connections and waiting requests under one lock at every request and every release, so one pool
#: for hundreds of threads costs each call time proportional to the threads; small pools keep it flat.
THREADS_PER_CLIENT = 16
#: The Messages API's address when ANTHROPIC_BASE_URL is unset or empty (the SDK's own default).
DEFAULT_BASE_URL = "https://api.anthropic.com"
_threads = itertools.count()
_local = threading.local()


def _shard() -> int:
    """This thread's share of the clients: the n-th thread to make a call uses client n // 16."""
    shard = getattr(_local, "shard", None)
    if shard is None:
        shard = _local.shard = next(_threads) // THREADS_PER_CLIENT
    return shard


def client_for(model: str, settings: Settings) -> anthropic.Anthropic:
    """A cached SDK client for ``model``: one per configuration and group of ``THREADS_PER_CLIENT``
    threads of the process (a thread always gets the same one, so its connections are kept)."""
    provider = provider_for(model)
    key = (model if provider is not None else "", settings.anthropic_api_key, settings.anthropic_base_url,
           settings.anthropic_custom_headers, settings.api_max_retries, settings.api_timeout_seconds, _shard())
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = provider.make_client(model, settings) if provider is not None else _make(model, settings)
            _clients[key] = client
        return client


def for_session(settings: Settings, rec) -> Settings:
    """``settings`` with the session's own endpoint and headers (``rec.model_env``: the client's
    ANTHROPIC_BASE_URL and ANTHROPIC_CUSTOM_HEADERS, :mod:`workflows.sessions.client_env`); the key stays the
    worker's. ``settings`` itself when the session has none."""
    env = getattr(rec, "model_env", None)
    if not env:
        return settings
    update = {"anthropic_base_url": env.get("ANTHROPIC_BASE_URL") or settings.anthropic_base_url,
              "anthropic_custom_headers": env.get("ANTHROPIC_CUSTOM_HEADERS") or settings.anthropic_custom_headers}
    return settings.model_copy(update=update)


def custom_headers(text: str | None) -> dict[str, str]:
    """``ANTHROPIC_CUSTOM_HEADERS``: one ``Name: Value`` a line (a line without a colon is skipped)."""
    out = {}
    for line in (text or "").splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip():
            out[name.strip()] = value.strip()
    return out


def require_credentials(settings: Settings, model: str) -> None:
    """Raise :class:`MissingCredentials` when a real model cannot be reached with ``settings``."""
    if is_local_model(model):
        return
    if not settings.anthropic_api_key and not settings.anthropic_base_url:
        raise MissingCredentials(
            f"No API key for model {model!r}: set ANTHROPIC_API_KEY "
            "(or ANTHROPIC_BASE_URL for a compatible endpoint), "
            "or try `mainsail demo`, which needs no credentials."
        )


def _make(model: str, settings: Settings) -> anthropic.Anthropic:
    """An SDK client for the Anthropic Messages API (the default provider)."""
    try:
        require_credentials(settings, model)
    except MissingCredentials as exc:
        raise MissingCredentials(f"{exc} (on worker; set it in the worker's environment)") from None
    import anthropic

    return anthropic.Anthropic(
        # A compatible endpoint may need no key; the SDK needs some credential.
        api_key=settings.anthropic_api_key or "mainsail-no-key",
        # Always explicit: with None the SDK reads ANTHROPIC_BASE_URL itself, and takes an empty one as the URL.
        base_url=settings.anthropic_base_url or DEFAULT_BASE_URL,
        max_retries=settings.api_max_retries,
        timeout=settings.api_timeout_seconds,
        default_headers=custom_headers(settings.anthropic_custom_headers) or None,
        # The SDK's own default HTTP client, but with the process's one TLS context: building one loads
        # the CA bundle (~40 ms of CPU), and a worker makes a client per THREADS_PER_CLIENT threads.
        http_client=anthropic.DefaultHttpxClient(verify=_tls_context()),
    )


_TLS = None


def _tls_context():
    """The TLS context every SDK client of this process shares (made as the SDK's HTTP library makes its
    default one: the CA bundle, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured). Called under ``_clients_lock``."""
    global _TLS
    if _TLS is None:
        import httpx2  # the anthropic SDK's HTTP library

        _TLS = httpx2.create_ssl_context()
    return _TLS


@dataclass
class ModelReply:
    message: AssistantMessage
    duration_ms: int
    model: str | None = None  # the model id the request named (its usage is priced as that model)
    fallback_from: str | None = None  # the model that was overloaded, when this reply is the fallback's
    fallback_error: str | None = None  # what that model answered


def overloaded(exc: Exception) -> bool:
    """Whether ``exc`` is the API saying the model is overloaded (529), after the SDK's own retries."""
    return getattr(exc, "status_code", None) == 529


def stream_reply(
    client: anthropic.Anthropic,
    request: dict,
    on_text: Callable[[str], None],
    cancel: threading.Event | None = None,
    on_event: Callable[[dict], None] | None = None,
) -> ModelReply:
    """Stream one model call, reporting text deltas (or, given ``on_event``, every raw event instead: the
    text deltas among them); return the final message and its usage.

    Raises:
        anthropic.APIError: after the SDK's own retries (429, 5xx, 529, connection errors).
        InterruptedError: ``cancel`` was set while streaming.
    """
    start = time.monotonic()
    acc = MessageAccumulator()
    with _stream(client, request) as stream:
        for event in stream:
            if cancel is not None and cancel.is_set():
                raise InterruptedError("model call cancelled")
            text = acc.apply(event)
            if on_event is not None:
                on_event(event)
            elif text:
                on_text(text)
    data = acc.message()
    usage = data.get("usage") or {}
    message = AssistantMessage(
        id=data.get("id"),
        model=data.get("model"),
        stop_reason=data.get("stop_reason"),
        content=[b for b in data.get("content", []) if b.get("type") in ("text", "tool_use", "thinking")],
        usage=Usage(**{k: (usage.get(k) or 0) for k in Usage.model_fields}),
    )
    return ModelReply(message=message, duration_ms=int((time.monotonic() - start) * 1000), model=request.get("model"))


#: The headers ``client.messages.stream`` adds to its request (the SDK's helper-method telemetry).
STREAM_HEADERS = {"Content-Type": "application/json", "X-Stainless-Helper-Method": "stream",
                  "X-Stainless-Stream-Helper": "messages"}


def _stream(client: anthropic.Anthropic, request: dict):
    """The streaming call ``client.messages.stream(**request)`` makes, as the SDK's ``Stream`` of raw
    event dicts (``cast_to=object``: no pydantic event per delta; workflows/model/stream.py puts the
    message together). The body is encoded by :func:`workflows.model.request_json.body` (each shared block's
    JSON kept from the previous call) and handed to the SDK as raw content: the SDK's transport,
    retries, status errors and SSE decoding as ever, without its deep copy and JSON of the whole
    request, which grew with the conversation."""
    from anthropic import Stream

    return client.post("/v1/messages", content=request_json.body(request), cast_to=object, stream=True,
                       stream_cls=Stream[object], options={"headers": STREAM_HEADERS})


def describe_api_error(exc: Exception, attempts: int) -> str:
    """A one-paragraph explanation of a failed model call for the transcript and the user."""
    import anthropic

    if isinstance(exc, anthropic.AuthenticationError):
        return "The model API refused the credentials (401). Check ANTHROPIC_API_KEY on the workers."
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        err = body.get("error", {}) if isinstance(body.get("error"), dict) else {}
        kind = err.get("type", "error")
        msg = err.get("message") or str(exc)
        return f"Model call failed: {exc.status_code} {kind}: {msg} (after {attempts} retries)."
    if isinstance(exc, anthropic.APIConnectionError):
        return f"Could not reach the model API: {exc} (after {attempts} retries). Check ANTHROPIC_BASE_URL and the network."
    return f"Model call failed: {type(exc).__name__}: {exc}"
