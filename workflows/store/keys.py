"""Every Redis key Mainsail uses, built in one place.

Ids are validated here so that no caller can build a malformed key (a colon
or a space in an id would silently address another session's data).
"""

from __future__ import annotations

import re

PREFIX = "mainsail:"
_ID = re.compile(r"\A[A-Za-z0-9_\-]{1,128}\Z")  # \Z: "$" would accept a trailing newline


def _check(kind: str, value: str) -> str:
    if not isinstance(value, str) or not _ID.match(value):
        raise ValueError(f"Invalid {kind} id {value!r}: use letters, digits, '-' or '_' (1-128 characters)")
    return value


def session(sid: str) -> str:
    """The session record (JSON string)."""
    return f"{PREFIX}session:{_check('session', sid)}"


def log(sid: str) -> str:
    """The transcript stream: append-only, never trimmed."""
    return f"{session(sid)}:log"


def live(sid: str) -> str:
    """Ephemeral streaming deltas for watchers (capped, with a TTL)."""
    return f"{session(sid)}:live"


def steps(sid: str) -> str:
    """The step ledger: hash of step id -> step record JSON."""
    return f"{session(sid)}:steps"


def inbox(sid: str) -> str:
    """User messages that arrived while the session was busy."""
    return f"{session(sid)}:inbox"


def lock(sid: str) -> str:
    """The single-writer lock of a session."""
    return f"{session(sid)}:lock"


def files_read(sid: str) -> str:
    """Hash of absolute path -> mtime at the last Read, for Write/Edit's read-first rule."""
    return f"{session(sid)}:files"


def session_memory(sid: str) -> str:
    """The session's memory document (markdown), kept by the session-memory fork."""
    return f"{session(sid)}:memory"


def commands(sid: str) -> str:
    """Hash of custom command name -> its definition (JSON), read from the files when the CLI opened the session."""
    return f"{session(sid)}:commands"


def fork_checkpoint(sid: str, step_id: str) -> str:
    """A memory fork's progress (messages, staged writes), so another worker can resume it."""
    return f"{session(sid)}:fork:{_check('step', step_id)}"


def shells(sid: str) -> str:
    """Set of the session's background shell ids (Bash ``run_in_background``)."""
    return f"{session(sid)}:shells"


def shell(sid: str, shell_id: str) -> str:
    """Hash of one background shell: command, status, exit code, the process running it, BashOutput's cursor."""
    return f"{session(sid)}:shell:{_check('shell', shell_id)}"


def shell_output(sid: str, shell_id: str) -> str:
    """Stream of a background shell's output chunks (capped), so BashOutput on any worker can read them."""
    return f"{shell(sid, shell_id)}:out"


def shell_member(sid: str, shell_id: str) -> str:
    """A shell's member in its host's set: ``sid/shell``."""
    return f"{_check('session', sid)}/{_check('shell', shell_id)}"


def shell_host(name: str) -> str:
    """Set of the ``sid/shell`` members one worker process runs, expiring unless that process renews it: a
    running shell missing from its host's set is lost (the process died)."""
    return f"{PREFIX}shells:{name}"
def session_mcp_tools(sid: str, digest: str) -> str:
    """A session's MCP tool definitions (JSON), named by their content's digest (never rewritten)."""
    return f"{session(sid)}:mcp:{_check('digest', digest)}"


def file_turns(sid: str) -> str:
    """Hash of user-message uuid -> when its first file checkpoint was taken (workflows/edits/checkpoints.py)."""
    return f"{session(sid)}:file-turns"


def file_checkpoints(sid: str, turn: str) -> str:
    """Hash of path -> the file as it was before that user message's first edit of it (JSON; first write wins)."""
    return f"{session(sid)}:file-history:{_check('message', turn)}"


def file_heads(sid: str) -> str:
    """Hash of path -> sha256 of what the session's edit tools last wrote there (to see changes made since)."""
    return f"{session(sid)}:file-heads"


def file_blob(sid: str, digest: str) -> str:
    """A checkpointed file's bytes, named by their sha256 (written once, shared by every checkpoint of them)."""
    return f"{session(sid)}:file-blob:{_check('digest', digest)}"


def session_subkeys(sid: str) -> str:
    """SCAN pattern of every key under a session (``session:{sid}:*``; ids hold no glob characters)."""
    return f"{session(sid)}:*"


def member_pattern(sid: str) -> str:
    """ZSCAN pattern of a session's ``sid/...`` members in the lease and approval sets."""
    return f"{_check('session', sid)}/*"


def sessions() -> str:
    """Sorted set of session ids by last update."""
    return f"{PREFIX}sessions"


def leases() -> str:
    """Sorted set of ``sid/step`` members by lease (or pickup) deadline, for the reaper."""
    return f"{PREFIX}steps:leases"


def lease_member(sid: str, step_id: str) -> str:
    return f"{_check('session', sid)}/{_check('step', step_id)}"


def parse_lease_member(member: str) -> tuple[str, str]:
    sid, _, step_id = member.partition("/")
    return _check("session", sid), _check("step", step_id)


def awaiting() -> str:
    """Sorted set of session ids waiting for a permission decision, by since when."""
    return f"{PREFIX}awaiting"


def approvals() -> str:
    """Sorted set of ``sid/request`` members by approval deadline (auto-deny when passed)."""
    return f"{PREFIX}approvals"


def reaper_lock() -> str:
    """The sweep lock; its token starts with the holder's worker name, so a dead holder's is broken."""
    return f"{PREFIX}reaper:lock"


def reaper_watch() -> str:
    """Held for one reaper tick by the reaper that lists Redis's client connections in that tick."""
    return f"{PREFIX}reaper:watch"


def redis_run_id() -> str:
    """The run id of the Redis server as the reapers last saw it: a new one means Redis restarted."""
    return f"{PREFIX}redis:run-id"


def retention_lock() -> str:
    """Held for an hour by the worker that ran the retention gc last (so it runs at most hourly)."""
    return f"{PREFIX}retention:lock"


def workers() -> str:
    """Sorted set of worker names by heartbeat expiry."""
    return f"{PREFIX}workers"


def worker(name: str) -> str:
    """Hash describing one worker (queues, pid, host); it expires when the worker stops refreshing it,
    which is how the reaper knows the worker died."""
    return f"{worker_prefix()}{name}"


def worker_prefix() -> str:
    """What :func:`worker` puts before a worker's name (the claim script, workflows/store/fenced.py, builds
    the key of the worker named in a step record with it)."""
    return f"{PREFIX}worker:"


def worker_steps(name: str) -> str:
    """Hash of the steps one worker took from a queue (``sid/step`` -> ``""``) or claimed (-> owner
    token): what the reaper takes back at once when the worker dies."""
    return f"{PREFIX}worker:{name}:steps"


def worker_tether(name: str) -> str:
    """The list a worker's named connection waits on (never written but to wake it when it stops)."""
    return f"{PREFIX}worker:{name}:tether"


def worker_tethers() -> str:
    """Hash: worker name -> the client name of its connection, for every registered worker that named one
    (kept past its registration's expiry: a lapsed worker whose connection is gone is dead at once)."""
    return f"{PREFIX}workers:tethers"


def worker_events() -> str:
    """Stream (capped) of the reapers' verdicts: a worker found dead, or stalled with its connection open."""
    return f"{PREFIX}workers:events"


def worker_reaping(name: str) -> str:
    """Held by the reaper that is taking back a dead worker's steps (one reaper per dead worker)."""
    return f"{PREFIX}worker:{name}:reaping"


def project_memory(pid: str) -> str:
    """Hash of record name -> auto-memory record JSON, for one project (git root)."""
    return f"{PREFIX}project:{_check('project', pid)}:memory"


def project_extract_lock(pid: str) -> str:
    """Held by the one extraction of a project that runs now (token ``sid/step``)."""
    return f"{PREFIX}project:{_check('project', pid)}:extract-lock"


def projects() -> str:
    """Hash of project id -> its root path."""
    return f"{PREFIX}projects"


def web_cache(digest: str) -> str:
    """A page WebFetch fetched (JSON), by the SHA-256 of its URL; expires after 15 minutes."""
    return f"{PREFIX}web:{_check('digest', digest)}"


def api_tokens() -> str:
    """The team server's API tokens: hash of token name -> record JSON (never the token itself)."""
    return f"{PREFIX}api-tokens"


def api_token(digest: str) -> str:
    """A token's SHA-256 (hex) -> its name: how a request's token is found without storing it."""
    if not re.fullmatch(r"[0-9a-f]{64}", digest or ""):
        raise ValueError("Invalid token digest: expected 64 hex characters")
    return f"{PREFIX}api-token:{digest}"


# ---------------------------------------------------------------- schedules (workflows/schedules/)

def schedules() -> str:
    """Zset of schedule ids by creation time."""
    return f"{PREFIX}schedules"


def schedule(schedule_id: str) -> str:
    """A schedule's record (JSON string)."""
    return f"{PREFIX}schedule:{_check('schedule', schedule_id)}"


def schedule_runs(schedule_id: str) -> str:
    """List of a schedule's latest firings (JSON), newest first, capped."""
    return f"{PREFIX}schedule:{_check('schedule', schedule_id)}:runs"


def schedule_lock(schedule_id: str) -> str:
    """Held while one firing of the schedule creates and starts its session."""
    return f"{PREFIX}schedule:{_check('schedule', schedule_id)}:lock"


def schedule_firing(schedule_id: str, slot: str) -> str:
    """One firing's claim (``SET NX``): the run due at ``slot`` (a UTC ``YYYYmmddTHHMM``, or
    ``manual-<id>``) of the schedule, and the session it started. Expires after a week."""
    if not re.fullmatch(r"\d{8}T\d{4}|manual-[A-Za-z0-9_\-]{1,64}", slot or ""):
        raise ValueError(f"Invalid firing slot {slot!r}")
    return f"{PREFIX}schedule:{_check('schedule', schedule_id)}:fired:{slot}"


#: Celery beat's entries (celery-redbeat): Celery's side of the keyspace, like the broker's queues.
REDBEAT_PREFIX = "mainsail-celery:redbeat:"


def metrics() -> str:
    """Counters and histogram buckets every process adds to (``field`` -> number; workflows/store/metrics.py)."""
    return f"{PREFIX}metrics"


def notify_subscriptions() -> str:
    """Webhook subscriptions: hash of subscription id -> record JSON (workflows/store/notify.py)."""
    return f"{PREFIX}notify:subscriptions"


def notify_delivered(event_id: str, subscription_id: str) -> str:
    """One event's delivery to one subscription: ``sending`` while a POST is out, ``done`` after a 2xx."""
    return f"{PREFIX}notify:delivered:{_check('event', event_id)}:{_check('subscription', subscription_id)}"


def notify_outbox() -> str:
    """Notification events their commit recorded and no dispatcher has sent yet: hash of event id -> the
    event's JSON (workflows/notify/outbox.py)."""
    return f"{PREFIX}notify:outbox"


def notify_outbox_due() -> str:
    """When each outbox event may be taken by the sweep: zset of event id -> unix milliseconds."""
    return f"{PREFIX}notify:outbox:due"


def notify_queued(event_id: str) -> str:
    """The subscriptions an outbox event's delivery task was sent for: hash of subscription id -> 1."""
    return f"{PREFIX}notify:queued:{_check('event', event_id)}"


def cost_day(day: str) -> str:
    """One UTC day's costs (``YYYY-MM-DD``): hash of JSON ``[token, workspace, model]`` -> USD (costs.py)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day or ""):
        raise ValueError(f"Invalid day {day!r}: use YYYY-MM-DD")
    return f"{PREFIX}costs:{day}"


def cost_day_tokens(day: str) -> str:
    """One UTC day's token counts, by the fields of :func:`cost_day` (input + output + cache)."""
    return f"{cost_day(day)}:tokens"


def cost_day_unpriced(day: str) -> str:
    """One UTC day's calls of models without a price, by the fields of :func:`cost_day`."""
    return f"{cost_day(day)}:unpriced"


def cost_days() -> str:
    """The days that have costs (set of ``YYYY-MM-DD``)."""
    return f"{PREFIX}costs:days"


def budgets() -> str:
    """Budgets: hash of ``token:NAME`` / ``workspace:PATH`` -> record JSON (workflows/store/costs.py)."""
    return f"{PREFIX}budgets"
