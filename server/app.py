"""The ASGI app of ``mainsail serve``: FastAPI, so the API's schema (``/api/openapi.json``, with a
token) comes from the same pydantic models the engine uses, and request bodies are checked by them
before any route runs.

Routes are plain (``def``) functions run in FastAPI's thread pool, because the engine and store are
synchronous redis-py code shared with the CLI and workers; only the live streams are ``async``
(each waits in an ``XREAD BLOCK`` on an asyncio client without holding a thread).

Errors: a domain error becomes a JSON ``{"detail": message}`` with the status that fits it (the same
message the CLI prints); an unexpected one is logged with its traceback on the server and answered
with a 500 that names no internals. A client never sees a traceback.
"""

from __future__ import annotations

import logging

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from server.auth import Caller, require_reader
from statemachines import InvalidTransition
from workflows.engine import Engine
from workflows.exceptions import (
    AlwaysNotOffered,
    AmbiguousSession,
    BudgetExceeded,
    BypassDisabled,
    ConfigurationError,
    ContextFull,
    LockTimeout,
    MainsailError,
    NotifyError,
    RequestClosed,
    RequestNotFound,
    RewindRefused,
    ScopeMissing,
    SessionBusy,
    SessionNotFound,
    StoreUnavailable,
    TokenError,
)

log = logging.getLogger("mainsail.server")

#: HTTP status per domain error (the first match in order wins; anything else of ours is a 400).
STATUS = [
    ((SessionNotFound, RequestNotFound), 404),
    ((BypassDisabled, ScopeMissing), 403),
    ((BudgetExceeded,), 402),
    ((AlwaysNotOffered, AmbiguousSession, SessionBusy, RequestClosed, ContextFull, InvalidTransition,
      RewindRefused), 409),
    ((StoreUnavailable, LockTimeout), 503),
    ((TokenError, ConfigurationError, NotifyError), 400),
]


#: The largest request body (a prompt of about 250k words): more is refused with a 413 before it is
#: read, so a client cannot make the server buffer without bound.
MAX_BODY_BYTES = 1 << 20


def status_for(exc: BaseException) -> int:
    for kinds, code in STATUS:
        if isinstance(exc, kinds):
            return code
    return 400


def create_app(engine: Engine, aredis, *, title: str = "Mainsail", max_body: int = MAX_BODY_BYTES) -> FastAPI:
    """The app: ``/api`` (the HTTP API and live streams), ``/`` (the console), ``/metrics``.

    ``engine``: the engine and store the routes use; ``aredis``: an asyncio Redis client on the same
    server (:func:`workflows.store.client.async_redis_client`) for the live streams; ``max_body``: the largest
    request body accepted, in bytes.
    """
    from server.api import router as api

    # No unauthenticated route: the schema is served behind a token below; no Swagger page (it loads its
    # scripts from a CDN, which a server without internet, and the console's CSP, would not allow).
    app = FastAPI(title=title, summary="Durable coding-agent sessions: the team server's API.",
                  openapi_url=None, docs_url=None, redoc_url=None)
    app.state.engine = engine

    @app.get("/api/openapi.json", include_in_schema=False)
    def openapi(caller: Caller = Depends(require_reader)) -> JSONResponse:  # noqa: B008
        return JSONResponse(app.openapi())

    app.state.aredis = aredis
    app.include_router(api)
    from server import console, metrics

    app.include_router(metrics.router)
    app.include_router(console.router)
    app.add_middleware(Guard, max_body=max_body)

    @app.exception_handler(MainsailError)
    @app.exception_handler(InvalidTransition)
    async def domain_error(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status_for(exc))

    @app.exception_handler(RequestValidationError)
    async def bad_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{k: e[k] for k in ("loc", "msg", "type") if k in e} for e in exc.errors()]  # not the input
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
        return JSONResponse({"detail": f"Invalid request: {problems}", "errors": jsonable_encoder(errors)},
                            status_code=422)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        from workflows.store.resilience import RedisConnectionError, RedisTimeoutError

        if isinstance(exc, (RedisConnectionError, RedisTimeoutError, OSError)):
            return JSONResponse({"detail": "The server cannot reach its Redis right now; try again shortly."},
                                status_code=503)
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "Internal error; the server's log has the details."}, status_code=500)

    return app


class _TooLarge(HTTPException):
    """A body over the limit, found while it is read: an ``HTTPException``, so that FastAPI's body
    reading passes it on as it is (any other error there becomes its 400 "error parsing the body")."""

    def __init__(self, max_body: int) -> None:
        super().__init__(413, _too_large_detail(max_body), headers={"Connection": "close"})


def _too_large_detail(max_body: int) -> str:
    return (f"The request body is over the server's limit of {max_body} bytes (or its Content-Length is not "
            "a number).")


class Guard:
    """ASGI middleware around every route: refuses bodies over ``max_body`` (413: by their
    ``Content-Length``, or while a chunked body is read) and marks the API's answers
    ``Cache-Control: no-store`` (they carry transcripts and session facts: no proxy or browser cache
    may keep them). A plain ASGI class, not Starlette's ``BaseHTTPMiddleware``, so live streams pass
    through unbuffered."""

    def __init__(self, app, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.max_body:
            return await self._too_large(scope, send)
        api = scope["path"].startswith("/api/")
        started = False
        received = 0

        async def counted_receive():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body:
                raise _TooLarge(self.max_body)
            return message

        async def marked_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if api and not any(k.lower() == b"cache-control" for k, _ in message.get("headers", [])):
                    message = {**message, "headers": [*message.get("headers", []), (b"cache-control", b"no-store")]}
            await send(message)

        try:
            await self.app(scope, counted_receive, marked_send)
        except _TooLarge:
            if not started:
                await self._too_large(scope, send)

    async def _too_large(self, scope, send) -> None:
        response = JSONResponse({"detail": _too_large_detail(self.max_body)}, status_code=413,
                                headers={"Cache-Control": "no-store", "Connection": "close"})
        await response(scope, None, send)


__all__ = ["MAX_BODY_BYTES", "Guard", "create_app", "status_for"]
