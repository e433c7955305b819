"""What the web tools need from the session, handed to them in the :class:`ToolContext` (``ctx.web``).

The tools stay free of the engine: :class:`WebAccess` gives them a small model call (the session's
credentials, its ``haiku`` alias resolved as the session resolves it), the Messages API's
server-side web search, and a cache in Redis shared by every worker (15 minutes, as Claude Code's).
Each call's usage comes back with its result, so the session is charged for it like any call.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from workflows.models import Usage

#: How long a fetched page is kept (Claude Code: a self-cleaning 15-minute cache).
CACHE_SECONDS = 15 * 60
#: The Messages API's server-side web search tool (passed through by WebSearch).
WEB_SEARCH_TOOL = "web_search_20250305"


@dataclass
class ModelAnswer:
    text: str
    usage: Usage
    model: str
    duration_ms: int = 0
    blocks: list[dict[str, Any]] = field(default_factory=list)  # the reply's content, as dicts


class WebAccess:
    """The session's model and cache, for WebFetch and WebSearch on a tools worker."""

    def __init__(self, store, settings, rec) -> None:
        self.store = store
        self.settings = settings
        self.rec = rec

    # ------------------------------------------------------------------ the cache

    def cache_name(self, url: str) -> str:
        return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def cached(self, url: str) -> dict | None:
        raw = self.store.web_page(self.cache_name(url))
        return json.loads(raw) if raw else None

    def remember(self, url: str, page: dict) -> None:
        self.store.keep_web_page(self.cache_name(url), json.dumps(page), CACHE_SECONDS)

    # ------------------------------------------------------------------ model calls

    def ask_small_model(self, prompt: str, max_tokens: int = 4096) -> ModelAnswer:
        """One call of the session's small, fast model (its ``haiku`` alias) with ``prompt``."""
        model = self.rec.sent_model("haiku")
        return self._create(model=model, max_tokens=max_tokens, messages=[{"role": "user", "content": prompt}])

    def web_search(self, query: str, allowed: list[str] | None, blocked: list[str] | None) -> ModelAnswer:
        """A call of the session's model with only the server-side web search tool, on ``query``."""
        tool: dict[str, Any] = {"type": WEB_SEARCH_TOOL, "name": "web_search", "max_uses": 8}
        if allowed:
            tool["allowed_domains"] = allowed
        if blocked:
            tool["blocked_domains"] = blocked
        return self._create(model=self.rec.sent_model(), max_tokens=4096, tools=[tool],
                            system="You are an assistant for performing a web search tool use",
                            messages=[{"role": "user", "content": f"Perform a web search for the query: {query}"}])

    def _create(self, **request) -> ModelAnswer:
        from workflows.model.client import client_for, for_session

        client = client_for(request["model"], for_session(self.settings, self.rec))
        t0 = time.monotonic()
        message = client.messages.create(**request)
        u = message.usage
        usage = Usage(input_tokens=u.input_tokens or 0, output_tokens=u.output_tokens or 0,
                      cache_creation_input_tokens=getattr(u, "cache_creation_input_tokens", 0) or 0,
                      cache_read_input_tokens=getattr(u, "cache_read_input_tokens", 0) or 0)
        blocks = [b.model_dump() for b in message.content]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        return ModelAnswer(text=text, usage=usage, model=message.model or request["model"],
                           duration_ms=int((time.monotonic() - t0) * 1000), blocks=blocks)


__all__ = ["CACHE_SECONDS", "WEB_SEARCH_TOOL", "ModelAnswer", "WebAccess"]
