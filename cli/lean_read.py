"""Reading commands on the lean path: the standard library's Redis client (workflows/store/wire.py) and the
records as stored JSON, with neither redis-py, pydantic nor the settings loaded (a reading command's start:
bench/README.md, ``startup.py``).

It takes only the plain case and answers ``False`` for anything else, and the command then runs its full
path, which reads (and reports a problem) as it always has: a team server (``MAINSAIL_SERVER``), a TLS or
unusual Redis URL, a variable spelled in another case (the settings read them case-blind), a Redis that does
not answer at once, a record or a step missing a field it reads (one of another version). The note under a
working session's row is cli/worker_note.py's own, given the steps and the registry read here.
"""

from __future__ import annotations

import json
import os
import sys

from cli.worker_note import WORKING, unserved_note
from statemachines import State

#: The settings the lean path reads itself (as the full path's settings name them, MAINSAIL_ + the field).
VARIABLES = ("MAINSAIL_REDIS_URL", "MAINSAIL_LOCAL_REDIS_URL", "MAINSAIL_DATA_DIR")
#: Settings that make the full path differ: then it is taken.
OTHERS = ("MAINSAIL_SERVER", "MAINSAIL_REDIS_CA_FILE", "MAINSAIL_LEAN_READ")
#: A step record's ``finished`` and ``background`` as workflows/models/steps.py says them (a unit test compares
#: them over every kind, status and hook event).
FINISHED = frozenset({"done", "superseded", "failed"})
BACKGROUND_KINDS = frozenset({"memory", "extract", "title", "bg_agent"})
BACKGROUND_HOOK_EVENTS = frozenset({"Notification", "SessionEnd"})
#: How long the lean path waits for Redis before it leaves the question to the full path.
TIMEOUT = 1.0


class Fallback(Exception):
    """The lean path does not take this case."""


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None  # (an empty variable is an unset one, as in the settings)


def redis_url() -> tuple[str, str | None]:
    """The Redis the full path would read, and what to say on stderr about it (None: nothing), as
    cli/connect.py's ``existing_redis_url`` resolves it; :class:`Fallback` where this cannot be sure."""
    if os.environ.get("MAINSAIL_LEAN_READ", "").lower() in ("0", "false", "no"):
        raise Fallback("switched off")
    names = {k for k in os.environ if k.upper().startswith("MAINSAIL_")}
    if any(k != k.upper() for k in names):
        raise Fallback("a variable in another case")
    if any(_env(k) for k in OTHERS if k != "MAINSAIL_LEAN_READ"):
        raise Fallback("a server or a CA file")
    url = _env("MAINSAIL_REDIS_URL")
    if url:
        return url, None
    if _env("MAINSAIL_LOCAL_REDIS_URL"):
        raise Fallback("a local Redis to probe")
    from pathlib import Path

    data = _env("MAINSAIL_DATA_DIR")
    if data is None:  # (workflows/settings/env.py's default)
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        data = os.path.join(base, "mainsail")
    where = Path(data) / "redis"
    try:
        url = (where / "url").read_text().strip()
    except OSError:
        raise Fallback("no embedded Redis") from None
    if not url:
        raise Fallback("no embedded Redis")
    from workflows.store.urls import mask_url

    return url, (f"mainsail: using the embedded Redis (data in {where}) at {mask_url(url)}; MAINSAIL_REDIS_URL "
                 "is unset (set it to use another Redis).")


class Step:
    """A stored step record, as the note about unserved queues reads it (cli/worker_note.py)."""

    __slots__ = ("status", "kind", "event", "epoch", "queue")

    def __init__(self, data: dict) -> None:
        try:
            for name in self.__slots__:
                setattr(self, name, data[name])
        except KeyError:
            raise Fallback("a step of another shape") from None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def background(self) -> bool:
        return self.kind in BACKGROUND_KINDS or (self.kind == "hook" and self.event in BACKGROUND_HOOK_EVENTS)


class LeanStore:
    """What cli/worker_note.py asks of a store, read over the lean client: the steps of a session and the
    queues live workers serve (workflows/store/registry.py's ``live_queues``)."""

    def __init__(self, wire) -> None:
        self.wire = wire

    def steps(self, sid: str) -> list[Step]:
        from workflows.store import keys

        return [Step(json.loads(raw)) for raw in self.wire.call("HVALS", keys.steps(sid))]

    def live_queues(self) -> set[str]:
        import time

        from workflows.store import keys

        names = self.wire.call("ZRANGEBYSCORE", keys.workers(), repr(time.time()), "+inf")
        queues: set[str] = set()
        for fields in self.wire.pipeline([("HGETALL", keys.worker(n.decode())) for n in names]) if names else []:
            if not isinstance(fields, list):
                raise Fallback("a registration of another type")
            info = dict(zip(fields[::2], fields[1::2]))
            queues.update(q for q in info.get(b"queues", b"").decode().split(",") if q)
        return queues


class Row:
    """A stored session record, as the table reads it (cli/session_table.py's FIELDS) and the note (its epoch)."""

    __slots__ = ("id", "state", "children", "agent_type", "title", "model", "turns", "cost_usd", "updated_at",
                 "workspace", "parent_session_id", "epoch")

    def __init__(self, data: dict) -> None:
        try:
            for name in self.__slots__:
                setattr(self, name, data[name])
            self.state = State(data["state"])
        except (KeyError, ValueError):
            raise Fallback("a record of another shape") from None


def sessions(state: str | None, workspace: str | None, limit: int) -> bool:
    """``mainsail sessions`` (without ``--tree``) on the lean path; False: not taken, nothing printed."""
    import click

    from cli.session_table import listed, none_listed, print_table
    from workflows.store import keys
    from workflows.store.wire import Wire, WireError

    try:
        url, say = redis_url()
        ws = os.path.realpath(workspace) if workspace else None
        with Wire(url, timeout=TIMEOUT) as wire:
            ids = [i.decode() for i in wire.call("ZREVRANGE", keys.sessions(), 0, 9_999)]
            rows: list[Row] = []
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                for raw in wire.call("MGET", *[keys.session(i) for i in chunk]):
                    if raw is None:
                        continue
                    rec = Row(json.loads(raw))
                    if listed(rec, state, ws):
                        rows.append(rec)
                        if len(rows) >= limit:
                            break
                if len(rows) >= limit:
                    break
            queued = wire.pipeline([("LLEN", keys.inbox(r.id)) for r in rows]) if rows else []
            if any(not isinstance(n, int) for n in queued):
                raise Fallback("an inbox of another type")
            notes = []
            if any(r.state in WORKING for r in rows):  # (else no row has a note: the registry is not read)

                store = LeanStore(wire)
                live = store.live_queues()
                notes = [n for n in (unserved_note(store, r, live) for r in rows) if n]
    except (Fallback, WireError, OSError, ValueError, UnicodeDecodeError):
        return False
    if say:
        print(say, file=sys.stderr)
    if not rows:
        click.echo(none_listed(state, ws))
        return True
    print_table([(0, r) for r in rows], {r.id: n for r, n in zip(rows, queued)})
    for note in notes:
        click.secho(note, fg="yellow")
    return True


def nothing_pending() -> bool:
    """Whether ``mainsail pending`` has nothing to list, known on the lean path; False: not known here (a
    session waits: its requests are printed by the full path, with their diffs and prompts)."""
    from workflows.store import keys
    from workflows.store.wire import Wire, WireError

    try:
        url, say = redis_url()
        with Wire(url, timeout=TIMEOUT) as wire:
            if wire.call("ZCOUNT", keys.awaiting(), "-inf", "+inf") != 0:
                return False
    except (Fallback, WireError, OSError, ValueError):
        return False
    if say:
        print(say, file=sys.stderr)
    return True


__all__ = ["Fallback", "nothing_pending", "redis_url", "sessions"]
