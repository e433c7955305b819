"""One client protocol for the simple session verbs (submit, send, cancel, approve, deny, compact), with a local
and an HTTP implementation, instead of a remote copy of each command.

:func:`client_for` picks the implementation: :class:`cli.clients.http.HttpClient` when ``MAINSAIL_SERVER`` is
set (the team server's API), else :class:`cli.clients.local.LocalClient` (Redis, through the session
service). The protocol is :class:`cli.clients.protocol.SessionClient`.
"""

from __future__ import annotations

from cli.clients.http import HttpClient
from cli.clients.local import LocalClient
from cli.clients.protocol import SessionClient
from cli.remote import server_configured


def client_for() -> SessionClient:
    """The session client of this command: over the team server's API with ``MAINSAIL_SERVER``, else local."""
    return HttpClient() if server_configured() else LocalClient()


__all__ = ["HttpClient", "LocalClient", "SessionClient", "client_for"]
