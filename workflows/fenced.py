"""The step protocol's server-side scripts: each engine event is one round trip to Redis.

Three Lua scripts, registered once per client and called by SHA (redis-py's ``Script`` falls
back to EVAL when the server has forgotten them, e.g. after a restart):

- **claim**: reads the session and the step, checks the fence (not finished, not someone
  else's live lease, of the session's epoch, attempts left), marks the step ``running`` with
  a new owner and lease, and records it among the worker's held steps. Whatever it cannot
  decide alone (a stale step, attempts used up, a record older than the revision field) it
  hands back as ``slow``, and the engine decides in Python and commits as below.
- **heartbeat**: checks that the step is still the caller's (running, its owner, of the
  current epoch) and extends its lease.
- **commit**: the fenced commit. The engine reads a session (and step), computes the event's
  writes in Python, and sends them here with the revision it read and, for a step event, the
  step's expected status and owner. The script applies every write atomically only if the
  record is still at that revision and the step still the caller's; otherwise it answers with
  the current record and step, and the engine applies its event again on them (optimistic
  concurrency, no lock, no WATCH). Each commit carries a token written into the record: a
  commit re-sent after a lost reply is recognised as already landed, never applied twice.

The session record's JSON starts with ``{"revision":N,"commit":"token","epoch":E,`` (the
field order of :class:`~workflows.models.SessionRecord`), so the scripts read those three
without decoding the rest. Step records hold only scalars, so cjson round-trips them.

The writes of a commit are recorded with :class:`Recorder`, which has redis-py's command
methods (``set``, ``xadd``, ``zadd``...) but only notes each command's arguments; the script
replays them with ``redis.call``. The store's writers take it where they take a pipeline.
"""

from __future__ import annotations

from typing import NamedTuple

import redis
from redis.commands.core import CoreCommands

from workflows.models import BACKGROUND_HOOK_EVENTS, BACKGROUND_KINDS

_HEAD = r"""
local function head(raw)
  local rev, token, epoch = string.match(raw, '^{"revision":(%d+),"commit":"([^"]*)","epoch":(%d+)')
  return rev, token, epoch
end
"""

#: KEYS: session, steps. ARGV: expected revision, token, fence step id ('' none), its expected status,
#: its expected owner ('' for none), then the writes: for each, its argument count and its arguments.
COMMIT = _HEAD + r"""
local raw = redis.call('GET', KEYS[1])
if not raw then return {'gone'} end
local rev, token = head(raw)
if token ~= nil and token ~= '' and token == ARGV[2] then return {'landed'} end
local step = ''
if ARGV[3] ~= '' then
  step = redis.call('HGET', KEYS[2], ARGV[3])
  if not step then return {'gone'} end
end
if (rev or '0') ~= ARGV[1] then return {'conflict', raw, step} end
if step ~= '' then
  local s = cjson.decode(step)
  local owner = s.owner
  if owner == cjson.null then owner = '' end
  if s.status ~= ARGV[4] or owner ~= ARGV[5] then return {'fenced', raw, step} end
end
local i = 6
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return {'ok'}
"""

#: KEYS: session, steps, leases, the worker's held steps. ARGV: step id, owner, now, lease until, max
#: attempts, lease member, record in held steps ('1'/'0'), background kinds (',k,'), background hook
#: events (',e,').
CLAIM = _HEAD + r"""
local raw = redis.call('GET', KEYS[1])
local step = redis.call('HGET', KEYS[2], ARGV[1])
if not raw or not step then return {'gone'} end
local s = cjson.decode(step)
local status = s.status
if status == 'done' or status == 'superseded' or status == 'failed' then return {'finished', raw} end
local owner = s.owner
if owner == cjson.null then owner = '' end
if status == 'running' and owner == ARGV[2] then return {'claimed', raw, step} end
local _, _, epoch = head(raw)
local event = s.event
if event == cjson.null then event = '' end
local background = string.find(ARGV[8], ',' .. s.kind .. ',', 1, true)
  or (s.kind == 'hook' and string.find(ARGV[9], ',' .. event .. ',', 1, true))
if epoch == nil or (not background and s.epoch ~= tonumber(epoch)) then return {'slow', raw, step} end
if status == 'running' then
  local deadline = redis.call('ZSCORE', KEYS[3], ARGV[6])
  if deadline and tonumber(deadline) > tonumber(ARGV[3]) then return {'busy', raw} end
end
if s.attempt >= tonumber(ARGV[5]) then return {'slow', raw, step} end
s.status = 'running'
s.attempt = s.attempt + 1
s.owner = ARGV[2]
s.updated_at = tonumber(ARGV[3])
step = cjson.encode(s)
redis.call('HSET', KEYS[2], ARGV[1], step)
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[6])
if ARGV[7] == '1' then redis.call('HSET', KEYS[4], ARGV[6], ARGV[2]) end
return {'claimed', raw, step}
"""

#: KEYS: session, steps, leases. ARGV: step id, owner, lease until ('' to check only), lease member,
#: background kinds, background hook events (as for CLAIM). The step's kind while it is still the
#: caller's (running, its owner, of the current epoch unless it runs in the background; lease extended);
#: 0 when it is not any more.
HEARTBEAT = _HEAD + r"""
local raw = redis.call('GET', KEYS[1])
local step = redis.call('HGET', KEYS[2], ARGV[1])
if not raw or not step then return 0 end
local s = cjson.decode(step)
if s.status ~= 'running' or s.owner ~= ARGV[2] then return 0 end
local event = s.event
if event == cjson.null then event = '' end
local background = string.find(ARGV[5], ',' .. s.kind .. ',', 1, true)
  or (s.kind == 'hook' and string.find(ARGV[6], ',' .. event .. ',', 1, true))
if not background then
  local _, _, epoch = head(raw)
  if epoch == nil or s.epoch ~= tonumber(epoch) then return 0 end
end
if ARGV[3] ~= '' then redis.call('ZADD', KEYS[3], 'XX', ARGV[3], ARGV[4]) end
return s.kind
"""

BACKGROUND_KIND_LIST = "," + ",".join(sorted(k.value for k in BACKGROUND_KINDS)) + ","
BACKGROUND_EVENT_LIST = "," + ",".join(sorted(BACKGROUND_HOOK_EVENTS)) + ","


class Recorder(CoreCommands):
    """redis-py's command methods, recording each command's arguments instead of sending them."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []

    def execute_command(self, *args, **options):
        self.ops.append(args)
        return self

    def flat(self) -> list:
        out: list = []
        for op in self.ops:
            out.append(len(op))
            out.extend(op)
        return out


class Reply(NamedTuple):
    """A script's answer: ``status`` and, where it has them, the raw session and step JSON."""

    status: str
    session: bytes | None = None
    step: bytes | None = None


def _reply(raw) -> Reply:
    status = raw[0].decode() if isinstance(raw[0], bytes) else raw[0]
    session = raw[1] if len(raw) > 1 and raw[1] not in (b"", "") else None
    step = raw[2] if len(raw) > 2 and raw[2] not in (b"", "") else None
    return Reply(status, session, step)


class Scripts:
    """The three scripts, registered on one client."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._commit = client.register_script(COMMIT)
        self._claim = client.register_script(CLAIM)
        self._heartbeat = client.register_script(HEARTBEAT)
        self._loaded = False

    def _load(self) -> None:
        """Load the scripts before their first EVALSHA: the CLI's in-process fakeredis server drops the
        connection on a NOSCRIPT reply instead of answering it (a real Redis that restarted answers it,
        and redis-py then loads the script and calls it again)."""
        if not self._loaded:
            for script in (self._commit, self._claim, self._heartbeat):
                script.sha = self._client.script_load(script.script)
            self._loaded = True

    def commit(self, keys: list[str], revision: int | str, token: str, ops: Recorder,
               fence: tuple[str, str, str] | None = None) -> Reply:
        """Apply ``ops`` if the session is at ``revision`` and the ``fence`` step (id, status, owner)
        is as given; else say why ('conflict', 'fenced', 'gone') with what is there now."""
        self._load()
        step_id, status, owner = fence or ("", "", "")
        return _reply(self._commit(keys=keys, args=[revision, token, step_id, status, owner or "", *ops.flat()]))

    def claim(self, keys: list[str], step_id: str, owner: str, now: float, lease_until: float,
              max_attempts: int, member: str, held: bool) -> Reply:
        self._load()
        return _reply(self._claim(keys=keys, args=[step_id, owner, repr(now), repr(lease_until), max_attempts,
                                                   member, "1" if held else "0", BACKGROUND_KIND_LIST,
                                                   BACKGROUND_EVENT_LIST]))

    def heartbeat(self, keys: list[str], step_id: str, owner: str, lease_until: float | None,
                  member: str) -> str | None:
        self._load()
        kind = self._heartbeat(keys=keys, args=[step_id, owner, "" if lease_until is None else repr(lease_until),
                                                member, BACKGROUND_KIND_LIST, BACKGROUND_EVENT_LIST])
        if not kind:
            return None
        return kind.decode() if isinstance(kind, bytes) else kind
