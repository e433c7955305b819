"""Showing a Redis URL without its password (standard library only: a reading command shows it too)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["mask_url"]


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (``redis://alice:***@host:6379/0``)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<an invalid URL>"
    if password is not None:
        userinfo, _, host = parts.netloc.rpartition("@")
        parts = parts._replace(netloc=f"{userinfo.partition(':')[0]}:***@{host}")
    query = [(k, "***" if "password" in k.lower() else v) for k, v in parse_qsl(parts.query)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="*/")))
