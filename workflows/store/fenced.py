"""The step protocol's server-side scripts: each engine event is one round trip to Redis.

Four Lua scripts (the fourth, **go**, is the fence a mutating command passes before it starts: :data:`GO`); three, registered once per client and called by SHA (redis-py's ``Script`` falls
back to EVAL when the server has forgotten them, e.g. after a restart):

- **claim**: reads the session and the step, checks the fence (not finished, not someone
  else's running step, of the session's epoch, attempts left), marks the step ``running`` with
  a new owner and lease, and records it among the worker's held steps; for a step that reads
  the transcript it also returns the entries written since the caller's last read (the same
  snapshot as the record). Whatever it cannot decide alone (a stale step, attempts used up, a
  running step whose lease expired, a record older than the revision field) it hands back as
  ``slow``, and the engine decides in Python and commits as below.
- **heartbeat**: for a batch of steps (every step one process runs), checks that each is still
  the caller's (running, its owner, of the current epoch) and extends its lease.
- **commit**: the fenced commit. The engine reads a session (and step), computes the event's
  writes in Python, and sends them here with the revision it read and, for a step event, the
  step's expected status and owner. The script applies every write atomically only if the
  record is still at that revision (and a step expected ``pending`` still is); otherwise it
  answers with the current record and step, and the engine applies its event again on them
  (optimistic concurrency, no lock, no WATCH). Each commit carries a token written into the
  record: a commit re-sent after a lost reply is recognised as already landed, never applied twice.

**Which writes bump the revision.** Every change to a session's record, transcript or steps goes
through the commit script, which writes a new revision, with one exception: the claim script
turns a ``pending`` step ``running`` without touching the record. It never changes a ``running``
step (one whose lease expired goes to Python, which commits). So a step the caller read as
``running`` at revision N is unchanged while the record is at N, and a commit fenced on a running
step needs no read of the step: the revision check covers it. A fence expecting ``pending`` reads
the step, since a claim may have taken it meanwhile.

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

from workflows.models import BACKGROUND_HOOK_EVENTS, BACKGROUND_KINDS, StepKind
from workflows.store import keys as keys_module

_HEAD = r"""
local function head(raw)
  local rev, token, epoch = string.match(raw, '^{"revision":(%d+),"commit":"([^"]*)","epoch":(%d+)')
  return rev, token, epoch
end
"""

#: KEYS: session, steps, transcript. ARGV: expected revision, token, fence step id ('' none), its
#: expected status, its expected owner ('' for none), the record's new JSON ('' to leave it), then the
#: writes: for each, its argument count and its arguments. Replies: {'ok', id of the transcript XADD or
#: ''}, {'landed'}, {'gone'}, {'conflict' or 'fenced', record, step}.
#:
#: The record is swapped in with SET ... GET (one command for the read and the write); a refused commit
#: puts the old value back before it answers, inside the script, so no one ever sees the new one.
COMMIT = _HEAD + r"""
local raw
if ARGV[6] ~= '' then
  raw = redis.call('SET', KEYS[1], ARGV[6], 'GET')
  if not raw then redis.call('DEL', KEYS[1]); return {'gone'} end
else
  raw = redis.call('GET', KEYS[1])
  if not raw then return {'gone'} end
end
local function refuse(reply)
  if ARGV[6] ~= '' then redis.call('SET', KEYS[1], raw) end
  return reply
end
local rev, token = head(raw)
if token ~= nil and token ~= '' and token == ARGV[2] then return refuse({'landed'}) end
local step = ''
if (rev or '0') ~= ARGV[1] then
  if ARGV[3] ~= '' then step = redis.call('HGET', KEYS[2], ARGV[3]) or '' end
  return refuse({'conflict', raw, step})
end
if ARGV[3] ~= '' and ARGV[4] ~= 'running' then
  step = redis.call('HGET', KEYS[2], ARGV[3])
  if not step then return refuse({'gone'}) end
  local s = cjson.decode(step)
  local owner = s.owner
  if owner == cjson.null then owner = '' end
  if s.status ~= ARGV[4] or owner ~= ARGV[5] then return refuse({'fenced', raw, step}) end
end
local id = ''
local i = 7
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local out = redis.call(unpack(ARGV, i + 1, i + n))
  if ARGV[i + 1] == 'XADD' and ARGV[i + 2] == KEYS[3] then id = out end
  i = i + n + 1
end
return {'ok', id}
"""

#: KEYS: session, steps, leases, the worker's held steps, transcript. ARGV: step id, owner, now, lease
#: until, max attempts, lease member, record in held steps ('1'/'0'), background kinds (',k,'),
#: background hook events (',e,'), the worker's name ('' none), kinds that read the transcript (',k,'),
#: the last transcript id the caller holds ('' none: from the start), the worker key prefix. Replies: {'gone'}, {'finished' or
#: 'busy', record}, {'claimed', record, step, entries} (entries: XRANGE rows after that id, for a kind
#: that reads the transcript), {'slow', record, step}.
CLAIM = _HEAD + r"""
local raw = redis.call('GET', KEYS[1])
local step = redis.call('HGET', KEYS[2], ARGV[1])
if not raw or not step then return {'gone'} end
local s = cjson.decode(step)
local status = s.status
if status == 'done' or status == 'superseded' or status == 'failed' then return {'finished', raw} end
local owner = s.owner
if owner == cjson.null then owner = '' end
local function rows()
  if not string.find(ARGV[11], ',' .. s.kind .. ',', 1, true) then return {} end
  local start = '-'
  if ARGV[12] ~= '' then start = '(' .. ARGV[12] end
  return redis.call('XRANGE', KEYS[5], start, '+')
end
if status == 'running' and owner == ARGV[2] then return {'claimed', raw, step, rows()} end
local _, _, epoch = head(raw)
local event = s.event
if event == cjson.null then event = '' end
local background = string.find(ARGV[8], ',' .. s.kind .. ',', 1, true)
  or (s.kind == 'hook' and string.find(ARGV[9], ',' .. event .. ',', 1, true))
if epoch == nil or (not background and s.epoch ~= tonumber(epoch)) then return {'slow', raw, step} end
if status == 'running' then
  local deadline = redis.call('ZSCORE', KEYS[3], ARGV[6])
  if deadline and tonumber(deadline) > tonumber(ARGV[3]) then return {'busy', raw} end
  local worker = s.worker
  if worker ~= nil and worker ~= cjson.null and redis.call('EXISTS', ARGV[13] .. worker) == 1 then
    return {'busy', raw}  -- its lease lapsed, but its worker lives: its call may be alive; never run it twice
  end
  return {'slow', raw, step}
end
if s.attempt >= tonumber(ARGV[5]) then return {'slow', raw, step} end
s.status = 'running'
s.attempt = s.attempt + 1
s.owner = ARGV[2]
if ARGV[10] ~= '' then s.worker = ARGV[10] else s.worker = cjson.null end
s.updated_at = tonumber(ARGV[3])
step = cjson.encode(s)
redis.call('HSET', KEYS[2], ARGV[1], step)
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[6])
if ARGV[7] == '1' then redis.call('HSET', KEYS[4], ARGV[6], ARGV[2]) end
return {'claimed', raw, step, rows()}
"""

#: KEYS: leases, then per step its session and its steps hash. ARGV: background kinds, background hook
#: events (as for CLAIM), then per step: its id, owner, lease until ('' to check only), lease member.
#: Per step, its kind while it is still the caller's (running, its owner, of the current epoch unless it
#: runs in the background; lease extended), else 0. Reads only the record's first bytes.
HEARTBEAT = _HEAD + r"""
local out = {}
local n = (#KEYS - 1) / 2
for i = 1, n do
  local a = 2 + (i - 1) * 4
  local answer = 0
  local raw = redis.call('GETRANGE', KEYS[2 * i], 0, 127)
  local step = redis.call('HGET', KEYS[2 * i + 1], ARGV[a + 1])
  if raw ~= '' and step then
    local s = cjson.decode(step)
    if s.status == 'running' and s.owner == ARGV[a + 2] then
      local event = s.event
      if event == cjson.null then event = '' end
      local background = string.find(ARGV[1], ',' .. s.kind .. ',', 1, true)
        or (s.kind == 'hook' and string.find(ARGV[2], ',' .. event .. ',', 1, true))
      local ours = true
      if not background then
        local _, _, epoch = head(raw)
        ours = epoch ~= nil and s.epoch == tonumber(epoch)
      end
      if ours then
        if ARGV[a + 3] ~= '' then redis.call('ZADD', KEYS[1], 'XX', ARGV[a + 3], ARGV[a + 4]) end
        answer = s.kind
      end
    end
  end
  out[i] = answer
end
return out
"""

#: KEYS: session, steps, leases, the reaping key of the step's worker (a key that never exists when there is no
#: worker). ARGV: step id, owner, lease member, now, margin, lease until. The fence a mutating command passes
#: just before it starts (workflows/steps/fence.py): 1 while the step is still the caller's (running, its
#: owner, of the session's epoch), its lease has more than ``margin`` seconds left (a lapsed lease is never
#: revived here: a reaper may be recording the step's outcome as unknown on it) and no reaper is taking back
#: its worker's steps; its lease is then extended. Else 0.
GO = _HEAD + r"""
local raw = redis.call('GETRANGE', KEYS[1], 0, 127)
local step = redis.call('HGET', KEYS[2], ARGV[1])
if raw == '' or not step then return 0 end
local s = cjson.decode(step)
if s.status ~= 'running' or s.owner ~= ARGV[2] then return 0 end
local _, _, epoch = head(raw)
if epoch == nil or s.epoch ~= tonumber(epoch) then return 0 end
local deadline = redis.call('ZSCORE', KEYS[3], ARGV[3])
if not deadline or tonumber(deadline) <= tonumber(ARGV[4]) + tonumber(ARGV[5]) then return 0 end
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
redis.call('ZADD', KEYS[3], 'XX', ARGV[6], ARGV[3])
return 1
"""

BACKGROUND_KIND_LIST = "," + ",".join(sorted(k.value for k in BACKGROUND_KINDS)) + ","
BACKGROUND_EVENT_LIST = "," + ",".join(sorted(BACKGROUND_HOOK_EVENTS)) + ","
#: The kinds of step that read the transcript when they start: their claim brings what is new in it.
READER_KIND_LIST = "," + ",".join(sorted(k.value for k in StepKind if k is not StepKind.TOOL)) + ","


def reads_transcript(kind: StepKind) -> bool:
    """Whether a step of ``kind`` reads the transcript when it starts (its claim then brings what is new)."""
    return f",{kind.value}," in READER_KIND_LIST


class Recorder(CoreCommands):
    """redis-py's command methods, recording each command's arguments instead of sending them."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []

    def execute_command(self, *args, **options):
        self.ops.append(args)
        return self

    def flat(self) -> list:
        out: list = []
        for op in coalesced(self.ops):
            out.append(len(op))
            out.extend(op)
        return out


def coalesced(ops: list[tuple]) -> list[tuple]:
    """``ops`` with each HSET folded into an earlier HSET of the same hash when no command between
    them names that hash: one command instead of several (a step finished and the one claimed after it
    are one HSET of the steps hash), same effect."""
    out: list[list] = []
    open_hsets: dict = {}  # hash key -> index in out of the HSET later ones may join
    for op in ops:
        if op and op[0] == "HSET" and len(op) >= 4 and op[1] in open_hsets:
            out[open_hsets[op[1]]].extend(op[2:])
            continue
        for arg in op[1:]:
            if isinstance(arg, (str, bytes)) and arg in open_hsets:
                del open_hsets[arg]
        if op and op[0] == "HSET" and len(op) >= 4:
            open_hsets[op[1]] = len(out)
        out.append(list(op))
    return [tuple(op) for op in out]


class Reply(NamedTuple):
    """A script's answer: ``status`` and, where it has them, the raw session and step JSON.

    ``extra``: for a claim, the transcript rows after the caller's last id ``mark`` (XRANGE's reply);
    for a commit, the stream id of its last transcript entry ('' when it wrote none)."""

    status: str
    session: bytes | None = None
    step: bytes | None = None
    extra: object = None
    mark: str | None = None


def _reply(raw) -> Reply:
    status = raw[0].decode() if isinstance(raw[0], bytes) else raw[0]
    if status == "ok":
        id_ = raw[1] if len(raw) > 1 else b""
        return Reply(status, extra=id_.decode() if isinstance(id_, bytes) else id_)
    session = raw[1] if len(raw) > 1 and raw[1] not in (b"", "") else None
    step = raw[2] if len(raw) > 2 and raw[2] not in (b"", "") else None
    return Reply(status, session, step, raw[3] if len(raw) > 3 else None)


class Scripts:
    """The three scripts, registered on one client."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._commit = client.register_script(COMMIT)
        self._claim = client.register_script(CLAIM)
        self._heartbeat = client.register_script(HEARTBEAT)
        self._go = client.register_script(GO)
        self._loaded = False

    def _load(self) -> None:
        """Load the scripts before their first EVALSHA: the CLI's in-process fakeredis server drops the
        connection on a NOSCRIPT reply instead of answering it (a real Redis that restarted answers it,
        and redis-py then loads the script and calls it again)."""
        if not self._loaded:
            for script in (self._commit, self._claim, self._heartbeat, self._go):
                script.sha = self._client.script_load(script.script)
            self._loaded = True

    def commit(self, keys: list[str], revision: int | str, token: str, ops: Recorder,
               fence: tuple[str, str, str] | None = None, record: str = "") -> Reply:
        """Apply ``ops`` (and write ``record``, the session's new JSON) if the session is at ``revision``
        and the ``fence`` step (id, status, owner) is as given; else say why ('conflict', 'fenced',
        'gone') with what is there now. ``keys``: session, steps, transcript."""
        self._load()
        step_id, status, owner = fence or ("", "", "")
        return _reply(self._commit(keys=keys, args=[revision, token, step_id, status, owner or "", record,
                                                    *ops.flat()]))

    def claim(self, keys: list[str], step_id: str, owner: str, now: float, lease_until: float,
              max_attempts: int, member: str, held: bool, worker: str = "", after: str | None = None) -> Reply:
        """``keys``: session, steps, leases, held steps, transcript. ``after``: the last transcript id the
        caller holds (None: it holds none)."""
        self._load()
        return _reply(self._claim(keys=keys, args=[step_id, owner, repr(now), repr(lease_until), max_attempts,
                                                   member, "1" if held else "0", BACKGROUND_KIND_LIST,
                                                   BACKGROUND_EVENT_LIST, worker, READER_KIND_LIST,
                                                   after or "", keys_module.worker_prefix()]))

    def go(self, keys: list[str], step_id: str, owner: str, member: str, now: float, margin: float,
           until: float) -> bool:
        """The fence of a mutating command (see :data:`GO`). ``keys``: session, steps, leases, reaping key."""
        self._load()
        return bool(self._go(keys=keys, args=[step_id, owner, member, repr(now), repr(margin), repr(until)]))

    def heartbeat(self, leases: str, items: list[tuple[str, str, str, str, float | None, str]]) -> list[str | None]:
        """``items``: (session key, steps key, step id, owner, lease until or None to check only, lease
        member). Per item, the step's kind while it is still the caller's, else None."""
        if not items:
            return []
        self._load()
        keys, args = [leases], [BACKGROUND_KIND_LIST, BACKGROUND_EVENT_LIST]
        for session, steps, step_id, owner, until, member in items:
            keys += [session, steps]
            args += [step_id, owner, "" if until is None else repr(until), member]
        return [(k.decode() if isinstance(k, bytes) else k) or None if k else None
                for k in self._heartbeat(keys=keys, args=args)]
