"""``GET /api/status``: what the server says about itself to a token, for ``mainsail doctor`` through
``MAINSAIL_SERVER``: its version, the token (name and scopes), its Redis (version, persistence), its
live workers (queues, and whether each can call the model: never a key) and the queues none serves.

Like every route, it needs a token (any valid one: a read-only token may ask); without one the server
answers 401, which tells a client the server is there and its token is the problem.
"""

from __future__ import annotations

from importlib import metadata

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from server.api.common import engine
from server.auth import Caller, require_reader
from tasks.routes import QUEUES

router = APIRouter(tags=["status"])


class TokenView(BaseModel):
    """The calling token's name and scopes (never the token itself)."""

    name: str
    read_only: bool
    admin: bool
    allow_bypass: bool
    trust_project: bool
    workspaces: list[str] = Field(description="The directories it is limited to; empty: every workspace.")


class RedisView(BaseModel):
    ok: bool
    version: str | None = Field(default=None, description="The server's Redis version, when INFO may be run.")
    aof: bool | None = Field(default=None, description="Whether AOF persistence is on (None: cannot tell).")
    detail: str = ""


class WorkerView(BaseModel):
    name: str
    queues: list[str]
    api_key: bool | None = Field(description="Whether the worker holds an API key (None: too old to say).")
    base_url: bool = Field(description="Whether it has an ANTHROPIC_BASE_URL.")


class ServerStatus(BaseModel):
    version: str
    token: TokenView
    redis: RedisView
    workers: list[WorkerView]
    unserved_queues: list[str] = Field(description="Standard queues no live worker serves: their steps wait.")
    server_api_key: bool = Field(description="Whether the server process itself holds an API key or base URL "
                                             "(its in-process worker's, when it runs one).")


def version() -> str:
    """This installation's version of Mainsail."""
    try:
        return metadata.version("mainsail")
    except metadata.PackageNotFoundError:
        return "unknown"


@router.get("/status", response_model=ServerStatus)
def status(request: Request, caller: Caller = Depends(require_reader)):  # noqa: B008
    """The server's version, this token's scopes, its Redis and its live workers."""
    eng = engine(request)
    t = caller.token
    workers = [WorkerView(name=name, queues=[q for q in info.get("queues", "").split(",") if q],
                          api_key={"yes": True, "no": False}.get(info.get("api_key", "")),
                          base_url=bool(info.get("base_url")))
               for name, info in sorted(eng.store.workers.live().items())]
    served = {q for w in workers for q in w.queues}
    return ServerStatus(
        version=version(),
        token=TokenView(name=t.name, read_only=t.read_only, admin=t.admin, allow_bypass=t.allow_bypass,
                        trust_project=t.trust_project, workspaces=list(t.workspaces)),
        redis=_redis(eng.store), workers=workers, unserved_queues=[q for q in QUEUES if q not in served],
        server_api_key=bool(eng.settings.anthropic_api_key or eng.settings.anthropic_base_url))


def _redis(store) -> RedisView:
    from workflows.store.resilience import ResponseError

    try:
        server = store.server_info("server")
        persistence = store.server_info("persistence")
    except ResponseError as exc:  # INFO refused (an ACL): it answers, the rest is unknown
        return RedisView(ok=True, detail=f"INFO refused: {exc}")
    return RedisView(ok=True, version=str(server.get("redis_version")),
                     aof=str(persistence.get("aof_enabled")) == "1")


__all__ = ["ServerStatus", "router", "version"]
