"""The record of one API token of the team server: its name and scopes (:class:`TokenRecord`).

The tokens themselves (made, found, revoked in Redis) and what each scope means are
:mod:`workflows.store.api_tokens`; the record is here so the permission checks that read a token's scopes
(:mod:`workflows.permissions.bypass`, :mod:`workflows.permissions.token_reach`) need no store.
"""

from __future__ import annotations

import os
import time

from pydantic import BaseModel, Field, PrivateAttr

__all__ = ["TokenRecord"]


class TokenRecord(BaseModel):
    """What a token may do. ``workspaces``: the directories whose sessions it may see and start
    (each with everything under it); empty means every workspace."""

    name: str
    read_only: bool = False
    workspaces: list[str] = Field(default_factory=list)
    # May it run sessions in bypassPermissions? Only when made (or updated) with --allow-bypass; a record
    # written before this key existed is read as False (see workflows.store.api_tokens).
    allow_bypass: bool = False
    # May it approve protected writes (workflows.permissions.protected_writes)? Only when made (or updated)
    # with --admin; a record written before this key existed is read as False (see workflows.store.api_tokens).
    admin: bool = False
    # Does it vouch for its workspaces' own settings (hooks, sandbox, MCP servers...: workflows.trust)? Only when
    # made with --trust-project, which needs --workspace; a record without the key is read as False.
    trust_project: bool = False
    created_at: float = Field(default_factory=time.time)
    last_used_at: float | None = None
    digest: str = ""
    #: The stored JSON this record was read from (``TokenStore.find`` in workflows.store.api_tokens), for
    #: ``TokenStore.touch``.
    _read: str | None = PrivateAttr(default=None)

    def allows_workspace(self, workspace: str) -> bool:
        """Whether this token may see or start sessions in ``workspace`` (a resolved path)."""
        if not self.workspaces:
            return True
        path = os.path.realpath(workspace)
        return any(path == ws or path.startswith(ws.rstrip("/") + "/") for ws in self.workspaces)
