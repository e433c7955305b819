"""Background shells in Redis: what any worker needs to follow, read and stop a shell another runs.

Per shell (keys under its session, built by :mod:`workflows.store.keys`):

- ``shell`` hash: command, description, status (running, completed, killed, lost), exit code,
  ``host`` (the process running it) and ``worker`` (its name, for people), ``kill`` (a request to
  stop it, with the reason), ``chars`` (output so far, in characters) and BashOutput's cursor
  (``read_id``, ``read_pos``);
- ``shell_output`` stream: the output, one entry a chunk: ``k`` (``o`` stdout, ``e`` stderr),
  ``d`` (the text), ``at`` (characters before it) and ``n`` (its length). The host keeps the
  latest chunks within a cap and deletes older ones; ``at`` tells a reader what it missed.

Per host process, ``shell_host``: the set of shells it runs, which expires unless the host renews
it. A shell still ``running`` whose host set lost it is **lost**: the process that ran it died
(its guard stops the command), and every reader says so, with the output stored until then.

Each change is one Lua script that checks what it depends on first (a shell whose session was
removed is never written again; a lost shell stays lost), as the step ledger does.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

import redis

from workflows.store import keys

Status = str  # running | completed | killed | lost
FINAL = ("completed", "killed", "lost")

#: Every script that looks at a shell first finds it lost if it is running but its host set (which
#: expires unless the host renews it) no longer holds it. KEYS[1]: shell, KEYS[2]: host set.
#: ARGV[1]: member, ARGV[2]: now.
_STATUS = """
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'running' and redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then
  redis.call('HSET', KEYS[1], 'status', 'lost', 'ended', ARGV[2])
  status = 'lost'
end
"""

_LOST = _STATUS + "return status\n"

#: BashOutput: the output since the last read (and how much was dropped in between), moving the cursor.
#: KEYS[3]: output stream. ARGV[3]: the tool call reading ("" for none): the same call reading again (its
#: worker died before its result was recorded) reads from where it started, not after what it consumed.
_READ = _STATUS + """
if not status then return false end
local pos, cursor
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'read_call') == ARGV[3] then
  pos = tonumber(redis.call('HGET', KEYS[1], 'read_from_pos') or '0')
  cursor = redis.call('HGET', KEYS[1], 'read_from_id') or '0-0'
else
  pos = tonumber(redis.call('HGET', KEYS[1], 'read_pos') or '0')
  cursor = redis.call('HGET', KEYS[1], 'read_id') or '0-0'
  redis.call('HSET', KEYS[1], 'read_call', ARGV[3], 'read_from_pos', pos, 'read_from_id', cursor)
end
local ms, seq = string.match(cursor, '^(%d+)-(%d+)$')
local entries = redis.call('XRANGE', KEYS[3], ms .. '-' .. (tonumber(seq) + 1), '+')
local function field(entry, name)
  local f = entry[2]
  for i = 1, #f, 2 do if f[i] == name then return f[i + 1] end end
end
local dropped
if #entries > 0 then
  local first, last = entries[1], entries[#entries]
  dropped = math.max(0, tonumber(field(first, 'at')) - pos)
  pos = tonumber(field(last, 'at')) + tonumber(field(last, 'n'))
  redis.call('HSET', KEYS[1], 'read_id', last[1])
else
  local chars = tonumber(redis.call('HGET', KEYS[1], 'chars') or '0')
  dropped = math.max(0, chars - pos)
  pos = math.max(pos, chars)
end
redis.call('HSET', KEYS[1], 'read_pos', pos)
return {status, tostring(dropped), entries, redis.call('HGETALL', KEYS[1])}
"""

#: Ask the host to stop a running shell (the first request is kept). ARGV[3]: the reason, ARGV[4]: the
#: tool call asking ("" for none).
_KILL = _STATUS + """
if status == 'running' then
  if redis.call('HSETNX', KEYS[1], 'kill', ARGV[3]) == 1 then
    redis.call('HSET', KEYS[1], 'kill_call', ARGV[4])
  end
  return 'requested'
end
return status
"""

#: The host stores output it read. KEYS: shell, output. ARGV: n, then kind/text/at/len per chunk, the
#: output's end, then the ids of old chunks to delete (past the cap). False: the shell was removed.
_APPEND = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local n = tonumber(ARGV[1])
local ids = {}
for i = 0, n - 1 do
  local b = 2 + i * 4
  ids[#ids + 1] = redis.call('XADD', KEYS[2], '*', 'k', ARGV[b], 'd', ARGV[b + 1], 'at', ARGV[b + 2],
                             'n', ARGV[b + 3])
end
redis.call('HSET', KEYS[1], 'chars', ARGV[2 + n * 4])
for i = 3 + n * 4, #ARGV do redis.call('XDEL', KEYS[2], ARGV[i]) end
return ids
"""

#: The host saw the command end. KEYS: shell, host set. ARGV: member, status, exit code, now.
#: A kill request turns "completed" into "killed"; a shell already lost stays lost.
_FINISH = """
redis.call('SREM', KEYS[2], ARGV[1])
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return false end
redis.call('HSET', KEYS[1], 'exit_code', ARGV[3])
if status ~= 'running' then return status end
local final = ARGV[2]
if final == 'completed' and redis.call('HEXISTS', KEYS[1], 'kill') == 1 then final = 'killed' end
redis.call('HSET', KEYS[1], 'status', final, 'ended', ARGV[4])
return final
"""


@dataclass
class Read:
    """What BashOutput gets: the shell's fields, its status, the new output and what was dropped."""

    status: Status
    info: dict[str, str]
    stdout: str = ""
    stderr: str = ""
    dropped: int = 0
    chunks: list[tuple[str, str]] = field(default_factory=list)

    @property
    def exit_code(self) -> int | None:
        code = self.info.get("exit_code")
        return int(code) if code not in (None, "") else None


class ShellStore:
    """The Redis side of background shells (see the module docstring)."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    @property
    def client_id(self) -> int:
        """Which Redis client this store talks through: stores sharing one are renewed in one call."""
        return id(self.r)

    # ------------------------------------------------------------------ the host's side

    def reserve_id(self, sid: str) -> str:
        """A new shell id, unique in the session (6 hex digits, as Claude Code's)."""
        while True:
            shell_id = secrets.token_hex(3)
            if self.r.sadd(keys.shells(sid), shell_id):
                return shell_id

    def register(self, sid: str, shell_id: str, info: dict[str, str], host: str, ttl: float) -> None:
        """The shell runs now on ``host`` (one transaction: readers never see it running and unhosted)."""
        p = self.r.pipeline(transaction=True)
        p.hset(keys.shell(sid, shell_id), mapping={**info, "status": "running", "host": host,
                                                   "started": f"{time.time():.3f}", "chars": 0})
        p.sadd(keys.shell_host(host), keys.shell_member(sid, shell_id))
        p.pexpire(keys.shell_host(host), _ms(ttl))
        p.execute()

    def renew(self, host: str, members: list[str], ttl: float) -> None:
        """``host`` still runs ``members``: keep its set for another ``ttl`` seconds."""
        p = self.r.pipeline(transaction=True)
        if members:
            p.sadd(keys.shell_host(host), *members)
        p.pexpire(keys.shell_host(host), _ms(ttl))
        p.execute()

    def append(self, sid: str, shell_id: str, chunks: list[tuple[str, int, str]], end: int,
               drop: list[str]) -> list[str] | None:
        """Store ``chunks`` (kind, position, text); delete ``drop``. None: the shell was removed."""
        args: list[str | int] = [len(chunks)]
        for kind, at, text in chunks:
            args += [kind, text, at, len(text)]
        ids = self.r.eval(_APPEND, 2, keys.shell(sid, shell_id), keys.shell_output(sid, shell_id),
                          *args, end, *drop)
        return None if ids is None else [_s(i) for i in ids]

    def finish(self, sid: str, shell_id: str, host: str, status: Status, exit_code: int | None) -> Status | None:
        """The command ended; returns the shell's final status (None: removed meanwhile)."""
        out = self.r.eval(_FINISH, 2, keys.shell(sid, shell_id), keys.shell_host(host),
                          keys.shell_member(sid, shell_id), status, "" if exit_code is None else exit_code,
                          f"{time.time():.3f}")
        return _s(out) if out else None

    def wanted_stopped(self, sid: str, shell_id: str) -> str | None:
        """Why the host should stop this shell now (a kill request, its session removed, or it was
        declared lost), or None."""
        status, kill = self.r.hmget(keys.shell(sid, shell_id), "status", "kill")
        if status is None:
            return "its session was removed"
        if _s(status) != "running":
            return f"it is {_s(status)}"
        return _s(kill) if kill is not None else None

    def forget_shell(self, host: str, member: str) -> None:
        """Host ``host`` no longer runs shell ``member`` (its record was removed with its session)."""
        self.r.srem(keys.shell_host(host), member)

    def drop_host(self, host: str) -> None:
        self.r.delete(keys.shell_host(host))

    # ------------------------------------------------------------------ any worker's side

    def info(self, sid: str, shell_id: str) -> dict[str, str]:
        """The shell's fields ({} if there is no such shell)."""
        try:
            key = keys.shell(sid, shell_id)
        except ValueError:
            return {}
        return {_s(k): _s(v) for k, v in self.r.hgetall(key).items()}

    def status(self, sid: str, shell_id: str) -> Status | None:
        """The shell's status, found lost if its host is gone (None: no such shell)."""
        info = self.info(sid, shell_id)
        if not info:
            return None
        out = self.r.eval(_LOST, 2, keys.shell(sid, shell_id), keys.shell_host(info["host"]),
                          keys.shell_member(sid, shell_id), f"{time.time():.3f}")
        return _s(out) if out else None

    def read(self, sid: str, shell_id: str, call: str = "") -> Read | None:
        """The output since the last read, and the status (None: no such shell). ``call``: the tool call
        reading; the same call again (a retry) gets the same output, and what came since."""
        info = self.info(sid, shell_id)
        if not info:
            return None
        reply = self.r.eval(_READ, 3, keys.shell(sid, shell_id), keys.shell_host(info["host"]),
                            keys.shell_output(sid, shell_id), keys.shell_member(sid, shell_id), f"{time.time():.3f}",
                            call)
        if not reply:
            return None
        status, dropped, entries, flat = reply
        fields = [_s(x) for x in flat]
        out = Read(_s(status), dict(zip(fields[::2], fields[1::2])), dropped=int(_s(dropped)))
        for _id, raw in entries:
            f = [_s(x) for x in raw]
            entry = dict(zip(f[::2], f[1::2]))
            out.chunks.append((entry["k"], entry["d"]))
        out.stdout = "".join(d for k, d in out.chunks if k == "o")
        out.stderr = "".join(d for k, d in out.chunks if k == "e")
        return out

    def request_kill(self, sid: str, shell_id: str, reason: str, call: str = "") -> Status | None:
        """Ask the shell's host to stop it: ``requested``, else its status (None: no such shell).
        ``call``: the tool call asking (kept with the request, so a retry of it can tell it was its own)."""
        info = self.info(sid, shell_id)
        if not info:
            return None
        out = self.r.eval(_KILL, 2, keys.shell(sid, shell_id), keys.shell_host(info["host"]),
                          keys.shell_member(sid, shell_id), f"{time.time():.3f}", reason, call)
        return _s(out) if out else None

    def request_kill_all(self, sid: str, reason: str) -> list[str]:
        """Ask the hosts of every running shell of the session to stop it; returns the shells asked."""
        asked = []
        for shell_id in sorted(_s(s) for s in self.r.smembers(keys.shells(sid))):
            if self.request_kill(sid, shell_id, reason) == "requested":
                asked.append(shell_id)
        return asked


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
