"""One client protocol for the simple session verbs (submit, send, cancel, approve, deny, compact), with a local
and an HTTP implementation, instead of a remote copy of each command.

:func:`client_for` picks the implementation: :class:`cli.clients.http.HttpClient` when ``MAINSAIL_SERVER`` is
set (the team server's API), else :class:`cli.clients.local.LocalClient` (Redis, through the session
service). The protocol is :class:`cli.clients.protocol.SessionClient`.
"""

from __future__ import annotations

from cli.clients.protocol import SessionClient
from cli.remote import server_configured


def client_for() -> SessionClient:
    """The session client of this command: over the team server's API with ``MAINSAIL_SERVER``, else local
    (only the one picked is imported: the HTTP client's and the local one's dependencies are heavy)."""
    if server_configured():
        from cli.clients.http import HttpClient

        return HttpClient()
    from cli.clients.local import LocalClient

    return LocalClient()


def __getattr__(name: str):
    """``HttpClient`` and ``LocalClient``, imported when first asked for."""
    if name == "HttpClient":
        from cli.clients.http import HttpClient

        return HttpClient
    if name == "LocalClient":
        from cli.clients.local import LocalClient

        return LocalClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["HttpClient", "LocalClient", "SessionClient", "client_for"]
