"""The team server's asyncio reads of the transcript and live streams (the live follow).

Each watcher waits in an ``XREAD BLOCK`` without holding a thread, on an asyncio client made by
:func:`workflows.store.client.async_redis_client`; :class:`LiveStreams` names the few reads the
server's follow makes (``server/api/hub.py``, ``server/api/stream.py``). Writes go through the
synchronous :class:`workflows.store.redis_store.Store`.
"""

from __future__ import annotations

from workflows.store import keys
from workflows.store.streams import as_text


class LiveStreams:
    """Stream reads over the asyncio Redis client ``ar``."""

    def __init__(self, ar) -> None:
        self.ar = ar

    async def rows_after(self, key: str, after: str) -> list:
        """The rows of stream ``key`` after id ``after`` (exclusive), oldest first, as redis-py parses them."""
        return await self.ar.xrange(key, min=f"({after}", max="+")

    async def rows_at(self, key: str, row_id: str) -> list:
        """The row ``row_id`` of stream ``key`` (a list of one, or empty)."""
        return await self.ar.xrange(key, min=row_id, max=row_id)

    async def newest_id(self, key: str) -> str:
        """The id of stream ``key``'s newest row; ``0-0`` for an empty or missing stream."""
        newest = await self.ar.xrevrange(key, count=1)
        return as_text(newest[0][0]) if newest else "0-0"

    async def wait_for_rows(self, key: str, after: str, block_ms: int, count: int) -> list:
        """``XREAD BLOCK``: up to ``count`` rows of ``key`` after ``after``, waiting up to ``block_ms`` for one."""
        return await self.ar.xread({key: after}, block=block_ms, count=count)

    async def token_exists(self, digest: str) -> bool:
        """Whether the API token of ``digest`` is still there (not revoked)."""
        return bool(await self.ar.exists(keys.api_token(digest)))
