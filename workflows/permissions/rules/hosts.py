"""The host a WebFetch input names: what a ``WebFetch(domain:HOST)`` rule matches, and what the
"don't ask again" answer for a fetch names."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["host_of"]


def host_of(url: str) -> str:
    """The lowercased host a WebFetch input names ("" when it names none): what ``domain:`` rules match."""
    try:
        return (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""
