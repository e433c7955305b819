"""API tokens of the team server: who may do what through ``mainsail serve``.

A token is a random secret shown once, when it is created (``mainsail token create --name alice``).
Redis keeps only its SHA-256: ``api-token:{sha256}`` names the token, and ``api-tokens`` holds each
name's record (read-only or not, the workspaces it may see, when it was created and last used).
Revoking deletes both, so the next request with it is refused at once, on every server process.

Bypass scope: a token may start (or send to) sessions in ``bypassPermissions`` mode only if it was
made with ``--allow-bypass`` (or given it later with ``mainsail token update NAME --allow-bypass``). New
tokens are made without it: bypass is refused unless asked for. Records written before the scope
existed have no ``allow_bypass`` key and are read as without it (fail closed: the record cannot say
its token was meant to bypass every check); the 403 names the fix, ``mainsail token update NAME
--allow-bypass``, which keeps the secret.

Admin scope: approving a call that may write a protected path (``.claude/``, ``.mcp.json``,
``.mainsail/``, ``.git/``, a settings file), or an "always" answer whose rule would allow such writes,
needs a token made with ``--admin`` (or given it later with ``mainsail token update NAME --admin``):
those writes change what every later session may do (the sandbox, hooks, MCP servers, permissions),
so a person deciding for one workspace may not make them. Records written before the scope existed
have no ``admin`` key and are read as without it (fail closed, as ``allow_bypass``); see
:mod:`workflows.permissions.protected_writes`.

Trust scope: a token made with ``--trust-project`` (and ``--workspace``) vouches for its workspaces'
own settings, as ``--trust-project`` does at a terminal (:mod:`workflows.trust`); without it, a
session the token starts applies them only if the server's user trusted that workspace.

A token's record (its name and scopes) is :class:`workflows.models.api_tokens.TokenRecord`.

A plain SHA-256 is enough for a 256-bit random secret (no dictionary to guess from, unlike a
password); it lets a request be checked with one GET.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time

from workflows.exceptions import TokenError
from workflows.models.api_tokens import TokenRecord
from workflows.store import keys

#: Every token starts with this, so a leaked one is recognisable (secret scanners, logs).
TOKEN_PREFIX = "mst_"
_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}\Z")


#: Replace a token's record only if it is still there with the same digest (KEYS[1]: the hash;
#: ARGV: name, digest, new JSON). Returns 1 when written, 0 when revoked or replaced meanwhile.
_REPLACE = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
if cjson.decode(raw)['digest'] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""

#: Replace a token's record only if it is still exactly the JSON the caller read (KEYS[1]: the hash;
#: ARGV: name, the JSON read, new JSON): a use noted while an admin changed the record
#: (``token update``) must not write back what the admin took away. Returns 1 when written.
_TOUCH = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise TokenError(f"Invalid token name {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-', "
                         "starting with a letter or digit.")
    return name


class TokenStore:
    """Creates, finds, lists and revokes tokens in Redis (``r``: a redis-py client)."""

    def __init__(self, r) -> None:
        self.r = r

    def create(self, name: str, *, read_only: bool = False, workspaces: list[str] | None = None,
               allow_bypass: bool = False, admin: bool = False,
               trust_project: bool = False) -> tuple[str, TokenRecord]:
        """A new token named ``name``: the secret (shown once) and its record. ``allow_bypass``: it may run
        sessions in bypassPermissions mode (off unless asked for); ``admin``: it may approve protected
        writes (off unless asked for). ``trust_project``: its sessions trust their workspace's own settings
        (:mod:`workflows.trust`); only for a token limited to named workspaces.

        Raises:
            TokenError: the name is invalid or taken, a workspace is not an existing directory, or
                ``trust_project`` without workspaces.
        """
        check_name(name)
        if trust_project and not workspaces:
            raise TokenError(f"Token {name!r}: --trust-project trusts the settings of the token's workspaces, so it "
                             "needs --workspace DIR (one for each folder it may trust); a token for every "
                             "workspace cannot trust them all.")
        dirs = []
        for ws in workspaces or []:
            path = os.path.realpath(os.path.expanduser(ws))
            if not os.path.isdir(path) or path == "/":
                raise TokenError(f"Workspace {ws!r} of token {name!r} is not an existing directory (or is /). "
                                 "Name the directory whose sessions the token may see.")
            dirs.append(path)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        rec = TokenRecord(name=name, read_only=read_only, workspaces=dirs, digest=digest(token),
                          allow_bypass=allow_bypass, admin=admin, trust_project=trust_project)
        if not self.r.hsetnx(keys.api_tokens(), name, rec.model_dump_json()):
            raise TokenError(f"A token named {name!r} exists already. Revoke it first "
                             f"(mainsail token revoke {name}) or choose another name.")
        self.r.set(keys.api_token(rec.digest), name)
        return token, rec

    def find(self, token: str) -> TokenRecord | None:
        """The record of ``token``, or None when it is unknown or revoked."""
        if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        d = digest(token)
        name = self.r.get(keys.api_token(d))
        if name is None:
            return None
        raw = self.r.hget(keys.api_tokens(), name)
        if raw is None:
            return None
        rec = TokenRecord.model_validate_json(raw)
        if not secrets.compare_digest(rec.digest, d):
            return None
        rec._read = raw.decode() if isinstance(raw, bytes) else raw
        return rec

    def touch(self, rec: TokenRecord, now: float | None = None) -> None:
        """Note that ``rec`` was used (at most once a minute per token: a request costs no write).

        The write happens only if the stored record is still the one :meth:`find` read (else, for a
        record made otherwise, still this token's: same digest), in one script: a request that raced
        a revoke must not bring the revoked record back, nor overwrite a new token made since under
        the same name, nor undo a ``token update --no-bypass`` made since it was read.
        """
        now = now or time.time()
        if rec.last_used_at and now - rec.last_used_at < 60:
            return
        rec.last_used_at = now
        if rec._read is not None:
            self.r.eval(_TOUCH, 1, keys.api_tokens(), rec.name, rec._read, rec.model_dump_json())
        else:
            self.r.eval(_REPLACE, 1, keys.api_tokens(), rec.name, rec.digest, rec.model_dump_json())

    def records(self) -> list[TokenRecord]:
        rows = self.r.hgetall(keys.api_tokens())
        return sorted((TokenRecord.model_validate_json(v) for v in rows.values()), key=lambda t: t.created_at)

    def set_bypass(self, name: str, allowed: bool) -> TokenRecord:
        """Give token ``name`` the bypass scope, or take it away (see :meth:`update`)."""
        return self.update(name, allow_bypass=allowed)

    def update(self, name: str, *, allow_bypass: bool | None = None, admin: bool | None = None) -> TokenRecord:
        """Give token ``name`` the bypass or admin scope, or take it away (None: unchanged); its secret
        stays the same.

        Written in one script, only if the record is still this token's: a token revoked (or made again)
        meanwhile is not brought back.

        Raises:
            TokenError: no token has that name (or it was revoked meanwhile).
        """
        rec = self._record(name)
        if allow_bypass is not None:
            rec.allow_bypass = allow_bypass
        if admin is not None:
            rec.admin = admin
        if not self.r.eval(_REPLACE, 1, keys.api_tokens(), rec.name, rec.digest, rec.model_dump_json()):
            raise TokenError(f"Token {name!r} was revoked or made again meanwhile. See `mainsail token list`.")
        return rec

    def named(self, name: str) -> TokenRecord | None:
        """The record of the token called ``name``, or None (never made, or revoked)."""
        raw = self.r.hget(keys.api_tokens(), name)
        return None if raw is None else TokenRecord.model_validate_json(raw)

    def _record(self, name: str) -> TokenRecord:
        rec = self.named(name)
        if rec is None:
            known = ", ".join(t.name for t in self.records()) or "none"
            raise TokenError(f"No token named {name!r} (tokens: {known}). See `mainsail token list`.")
        return rec

    def revoke(self, name: str) -> TokenRecord:
        """Revoke the token ``name``: refused from the next request on.

        Raises:
            TokenError: no token has that name.
        """
        rec = self._record(name)
        p = self.r.pipeline()
        p.delete(keys.api_token(rec.digest))
        p.hdel(keys.api_tokens(), name)
        p.execute()
        return rec


def describe(rec: TokenRecord) -> dict:
    """A token's record as shown to people (never the digest)."""
    return {"name": rec.name, "read_only": rec.read_only, "workspaces": rec.workspaces,
            "allow_bypass": rec.allow_bypass, "admin": rec.admin, "trust_project": rec.trust_project,
            "created_at": rec.created_at, "last_used_at": rec.last_used_at}


__all__ = ["TOKEN_PREFIX", "TokenStore", "describe", "digest"]
