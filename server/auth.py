"""Who is asking: every request carries an API token (``Authorization: Bearer mst_...``, or the
console's cookie), found by its SHA-256 in Redis (:mod:`workflows.store.api_tokens`).

- No token, or an unknown or revoked one: 401.
- A read-only token asking to change something (send, cancel, approve...): 403.
- A token restricted to workspaces asking about a session elsewhere: 404, as if the session did not
  exist (it learns nothing about other teams' sessions).
- A token made without ``--allow-bypass`` asking to start, send to or schedule a session that would run
  in bypassPermissions: 403 (:mod:`workflows.permissions.bypass`).
- A token made without ``--admin`` approving a call that may write ``.claude/``, ``.mcp.json``,
  ``.mainsail/``, ``.git/`` or a settings file, or answering "always" with a rule that would allow such
  writes: 403 (:mod:`workflows.permissions.protected_writes`).
- A token restricted to workspaces approving a call that may reach outside them: 403
  (:mod:`workflows.permissions.token_reach`).

The console's cookie is ``HttpOnly`` and ``SameSite=Strict``; a change made with it must also carry
the ``X-Mainsail-Console`` header, which a page of another origin cannot add without a CORS
preflight (and CORS is off), so a cross-site form cannot act with a signed-in browser's cookie.
Tokens never appear in URLs, so they are never in access logs.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Depends, HTTPException, Request

from workflows.exceptions import SessionNotFound
from workflows.models import PermissionRequest, SessionRecord, TokenRecord
from workflows.permissions import bypass
from workflows.permissions.protected_writes import PROTECTED_NAMES, always_problem, protected_write
from workflows.permissions.token_reach import reach_problem

COOKIE = "mainsail_token"
CONSOLE_HEADER = "X-Mainsail-Console"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Caller:
    """The token a request came with."""

    token: TokenRecord
    by_cookie: bool = False

    @property
    def name(self) -> str:
        return self.token.name

    @property
    def decided_by(self) -> str:
        """What an approval records as its decider."""
        return f"token:{self.token.name}"

    def sees(self, rec: SessionRecord) -> bool:
        return self.token.allows_workspace(rec.workspace)

    def check_session(self, rec: SessionRecord) -> SessionRecord:
        """``rec`` if this token may see it; otherwise a 404 naming only the id asked for."""
        if not self.sees(rec):
            raise SessionNotFound(f"No session {rec.id[:8]!r}. List the sessions this token may see with "
                                  "GET /api/sessions.")
        return rec

    def check_bypass(self, rec: SessionRecord) -> None:
        """A 403 unless this token may drive ``rec``: one that runs in bypassPermissions needs a token
        made with ``--allow-bypass``."""
        bypass.require_token_for(rec, self.token, f"send to session {rec.id[:8]} (it runs in bypassPermissions mode)",
                                 "start a session in another mode")

    def check_approval(self, rec: SessionRecord, req: PermissionRequest, always: bool, others) -> None:
        """A 403 unless this token may approve ``req`` of session ``rec`` (``always``: with its rules).

        A token without the admin scope may not approve a call that may write a protected path, nor
        add "always" rules that would allow one; a token restricted to workspaces may not approve a
        call that may reach outside them (``others``: every token's record, whose workspaces its
        sessions may not read). A denial never needs a scope: this is asked of approvals only."""
        where = f"request {req.id} of session {rec.id[:8]} ({req.tool}: {req.summary[:80]})"
        if not self.token.admin:
            why = protected_write(req.tool, req.input, rec)
            if why is None and always:
                why = always_problem(list(req.always), rec)
            if why is not None:
                raise HTTPException(403, f"Token {self.name!r} may not approve {where}: {why}, and approving a "
                                         f"write to {PROTECTED_NAMES} needs the admin scope, which the token "
                                         f"lacks. Deny it, approve it at the server (`mainsail approve "
                                         f"{rec.id[:8]} {req.id}`), or have the server's admin give the token "
                                         f"the scope: `mainsail token update {self.name} --admin`.")
        why = reach_problem(req.tool, req.input, rec, self.token, others)
        if why is not None:
            allowed = ", ".join(self.token.workspaces)
            raise HTTPException(403, f"Token {self.name!r} may only use {allowed}, and may not approve {where}: "
                                     f"{why}. Deny it, or approve it at the server (`mainsail approve "
                                     f"{rec.id[:8]} {req.id}`).")

    def check_workspace(self, workspace: str) -> None:
        if not self.token.allows_workspace(workspace):
            allowed = ", ".join(self.token.workspaces)
            raise HTTPException(403, f"Token {self.name!r} may only use sessions under {allowed}; "
                                     f"{workspace} is outside them.")


def _bearer(request: Request) -> tuple[str | None, bool]:
    header = request.headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise HTTPException(401, "The Authorization header must be 'Bearer <token>'.",
                                headers={"WWW-Authenticate": "Bearer"})
        return value.strip(), False
    cookie = request.cookies.get(COOKIE)
    return (cookie, True) if cookie else (None, False)


def require_reader(request: Request) -> Caller:
    """Any valid token (a FastAPI dependency)."""
    token, by_cookie = _bearer(request)
    if not token:
        raise HTTPException(401, "No API token: send 'Authorization: Bearer <token>' (create one on the server "
                                 "with `mainsail token create --name NAME`).", headers={"WWW-Authenticate": "Bearer"})
    tokens = request.app.state.engine.store.tokens()
    rec = tokens.find(token)
    if rec is None:
        raise HTTPException(401, "The API token is unknown or revoked. Ask the server's admin for a new one "
                                 "(`mainsail token create`).", headers={"WWW-Authenticate": "Bearer"})
    if by_cookie and request.method not in SAFE_METHODS and request.headers.get(CONSOLE_HEADER) != "1":
        raise HTTPException(403, f"A change made with the console's cookie must carry the {CONSOLE_HEADER} header.")
    tokens.touch(rec)
    return Caller(rec, by_cookie)


def require_writer(caller: Caller = Depends(require_reader)) -> Caller:  # noqa: B008 - FastAPI's idiom
    """A token that may change things: not read-only."""
    if caller.token.read_only:
        raise HTTPException(403, f"Token {caller.name!r} is read-only: it may list and watch sessions, not "
                                 "send, cancel, approve, deny or change schedules. Use a token made without "
                                 "--read-only.")
    return caller


__all__ = ["CONSOLE_HEADER", "COOKIE", "Caller", "require_reader", "require_writer"]
