"""Keeping a worker on duty for the sessions a command waits on, and saying what it waits for.

A command that waits for sessions (``run``, ``watch``, ``demo``, ``compact``, the
interactive mode) does not decide once whether to run a worker: a
:class:`Standby` thread checks every ``standby_check_seconds`` that a live worker
serves every queue those sessions need, and the moment none does (the worker that
did was killed, or was another command's in-process worker and that command
ended), starts one in this process (unless ``MAINSAIL_EMBEDDED_WORKER=false``).

While the command waits without news, :meth:`WaitNotes.note` says what for
("waiting for a worker on queue tools…"), once, and again only when that changes.

A command's in-process worker leaves by handing over (:func:`cli.in_process.hand_over`): it takes
no new step, lets the steps it runs finish (saying so if that takes over a second,
and leaving at once on Ctrl-C, when they go to another worker), then leaves the
registry; another command that still waits notices within ``standby_check_seconds``
and runs its own. With nothing running, leaving takes a few milliseconds.
"""

from __future__ import annotations

import logging

import sys
import threading

import click

from cli.in_process import in_process_redis, mark_threads_started
from statemachines import State
from workflows.engine import display_worker
from workflows.exceptions import MissingCredentials
from workflows.model.providers import is_local_model
from workflows.models import StepKind, StepStatus
from workflows.settings import Settings
from workflows.store.resilience import RedisError

BASE_QUEUES = ("model", "tools", "memory")
#: Seconds without an entry or a delta before a waiting command says what it waits for.
QUIET_SECONDS = 5.0

_current: "Standby | None" = None


def current() -> "Standby | None":
    """This process's standby, if a command started one."""
    return _current


def _note(msg: str) -> None:
    click.echo(click.style(msg, dim=True), err=True)


def start_embedded_worker(rt, settings: Settings, *, queues: set[str] | None = None, quiet: bool = False,
                          why: str | None = None) -> None:
    """Run a worker for ``queues`` (default: model, tools, memory) in this process (threads pool) for as
    long as the command runs."""
    from tasks.worker import InProcessWorker
    from workflows.store import durable

    durable.report_unsafe_at(logging.INFO)  # a person's own command: `mainsail doctor` says it, not every run
    mark_threads_started()
    rt.worker = InProcessWorker(queues=sorted(set(BASE_QUEUES) | set(queues or ())),
                                concurrency=settings.worker_concurrency,
                                in_process_redis=in_process_redis()).start()
    if not quiet:
        _note(why or "No worker is listening; running one in this process. "
                     "Start `mainsail worker` to keep sessions running after this command ends.")


class Standby(threading.Thread):
    """Checks that someone serves the watched sessions' queues; starts a worker here when nobody does."""

    def __init__(self, rt, settings: Settings, queues: tuple[str, ...] = BASE_QUEUES, quiet: bool = False) -> None:
        super().__init__(name="mainsail-standby", daemon=True)
        self.rt = rt
        self.settings = settings
        self.queues = set(queues)
        self.quiet = quiet
        self.sessions: set[str] = set()
        self.missing: set[str] = set()
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self.notes = WaitNotes(rt.store, settings.standby_check_seconds,
                               lambda: rt.worker is not None or settings.embedded_worker)

    def watch(self, sid: str) -> None:
        """Also keep ``sid``'s queues served (its tools queue may be a per-host one)."""
        with self._lock:
            self.sessions.add(sid)

    def needed(self) -> set[str]:
        with self._lock:
            sessions = list(self.sessions)
        queues = set(self.queues)
        for sid in sessions:
            try:
                queues.add(self.rt.store.get_session(sid).tools_queue)
            except Exception:  # removed meanwhile: nothing to serve
                continue
        return queues

    def check(self, why: str | None = "") -> set[str]:
        """Start a worker here if a needed queue has no live worker; returns the queues nobody served.

        ``why``: what to say when it starts one ("": name the queues; None: the first-start note).
        """
        needed = self.needed()
        missing = needed - self.rt.store.live_queues()
        with self._lock:
            if self._stop_event.is_set():
                return missing  # the command is leaving: start nothing now
            if missing and self.rt.worker is None and self.settings.embedded_worker:
                start_embedded_worker(self.rt, self.settings, queues=needed, quiet=self.quiet, why=why if why != ""
                                      else f"No live worker serves queue {', '.join(sorted(missing))}; running "
                                           "one in this process.")
            self.missing = missing
        return missing

    def run(self) -> None:
        while not self._stop_event.wait(self.settings.standby_check_seconds):
            try:
                self.check()
            except RedisError:  # Redis is away: the command's own reads say so; check again later
                pass
            except Exception as exc:  # never let the check kill the command
                print(f"mainsail: checking for workers failed: {exc}", file=sys.stderr)

    def stop(self) -> None:
        """Check no more; returns once a worker this thread was starting (if any) is in ``rt.worker``."""
        global _current
        self._stop_event.set()
        with self._lock:
            pass
        if _current is self:
            _current = None

class WaitNotes:
    """Says what a session waits for after :data:`QUIET_SECONDS` without news, once per change.

    Args:
        store: where to look.
        every: seconds between two looks while it stays quiet.
        embedded: whether a worker runs, or would start, in this process.
    """

    def __init__(self, store, every: float, embedded) -> None:
        self.store = store
        self.every = every
        self.embedded = embedded
        self._said: dict[str, tuple[float, str | None]] = {}  # sid -> (silence when looked, what was said)

    def note(self, sid: str, silence: float) -> None:
        if silence < QUIET_SECONDS:
            self._said.pop(sid, None)
            return
        looked, said = self._said.get(sid, (None, None))
        if looked is not None and silence - looked < self.every:
            return
        try:
            text = waiting_for(self.store, sid, self.embedded())
        except RedisError:
            text = "waiting for Redis to answer again…"
        self._said[sid] = (silence, text or said)
        if text and text != said:
            _note(text)


def waiting_for(store, sid: str, embedded: bool) -> str | None:
    """What session ``sid`` waits for, in a sentence; None when it waits for nothing we can name."""
    rec = store.get_session(sid)
    if rec.state in (State.IDLE, State.AWAITING_PERMISSION):
        return None
    steps = [s for s in store.steps(sid) if not s.finished and (s.background or s.epoch == rec.epoch)]
    live = store.workers.live()
    served = {q for info in live.values() for q in info.get("queues", "").split(",") if q}
    for s in steps:
        if s.status is StepStatus.PENDING and s.queue not in served:
            fix = (" (starting one in this process)" if embedded
                   else f"; none is running: start one with `mainsail worker -Q {s.queue}`")
            return f"waiting for a worker on queue {s.queue}…{fix}"
    agents = [s for s in steps if s.kind is StepKind.AGENT and s.status is StepStatus.RUNNING]
    if agents and len(agents) == sum(s.status is StepStatus.RUNNING for s in steps):
        return (f"waiting for {len(agents)} sub-agent{'s' if len(agents) != 1 else ''} to report "
                f"({', '.join((s.detail or '')[:8] for s in agents)}; `mainsail sessions --tree` lists them)…")
    for s in steps:
        if s.status is StepStatus.RUNNING and s.kind not in (StepKind.AGENT, StepKind.BG_AGENT):
            what = _what(rec, s)
            worker = _worker_of(live, s.owner)
            if worker is None:
                return (f"waiting: the worker running {what} stopped answering; "
                        "it goes to another worker within a few seconds…")
            return f"waiting for {what} on worker {display_worker(worker)}…"
    for s in steps:
        if s.status is StepStatus.PENDING:
            n = sum(1 for info in live.values() if s.queue in info.get("queues", "").split(","))
            return (f"waiting for {_what(rec, s)} to be picked up from queue {s.queue} "
                    f"({n} live worker{'s serve' if n != 1 else ' serves'} it)…")
    return None


def _what(rec, step) -> str:
    if step.kind is StepKind.TOOL:
        call = next((c for c in rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
        return f"the {call.name if call else 'tool'} call"
    if step.kind is StepKind.HOOK:
        return f"the {step.event} hooks"
    return {StepKind.MODEL: "the model's reply", StepKind.COMPACT: "the compaction",
            StepKind.MCP: "the MCP servers to start"}.get(step.kind, "memory")


def _worker_of(live: dict[str, dict[str, str]], owner: str | None) -> str | None:
    """The live worker whose process made claim ``owner`` (``host:pid:...``)."""
    if not owner:
        return None
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    return next((n for n, info in live.items() if info.get("host") == host and info.get("pid") == pid), None)


# ---------------------------------------------------------------------------- credentials


def require_model_access(rt, settings: Settings, model: str) -> None:
    """Refuse, before anything is created, a real model that no worker here can call.

    Workers report whether they hold an API key or a base URL (never the key). It is enough that
    one live worker serving ``model`` can call it; when none serves it, this command runs a worker
    itself, so its own credentials count. With no worker and no embedded one, the session waits
    for a worker, and the command says so.

    Raises:
        MissingCredentials: nobody who will run the model calls can make them.
    """
    if is_local_model(model):
        return
    serving = {n: i for n, i in rt.store.workers.live().items() if "model" in i.get("queues", "").split(",")}
    if any(i.get("api_key") != "no" or i.get("base_url") for i in serving.values()):
        return  # "yes", or a worker too old to say
    if not serving:
        if settings.anthropic_api_key or settings.anthropic_base_url or not settings.embedded_worker:
            return
        raise MissingCredentials(
            f"No API key for model {model!r}: no worker is running, so this command would call the model "
            "itself, and it has no ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a compatible endpoint). Set "
            "it here, or start workers that have it (`mainsail worker`), or try `mainsail demo`, which needs "
            "no credentials.")
    names = ", ".join(sorted(display_worker(n) for n in serving))
    raise MissingCredentials(
        f"No worker can call model {model!r}: the workers serving queue model ({names}) hold no API key and "
        "no ANTHROPIC_BASE_URL. Set ANTHROPIC_API_KEY in their environment and restart them (a key set "
        "here is never sent to workers).")


def ensure_worker(rt, settings: Settings, queues: tuple[str, ...] = BASE_QUEUES, quiet: bool = False,
                  sid: str | None = None) -> "Standby":
    """Run a worker in this process when no registered worker serves ``queues`` (and ``sid``'s, a session
    it waits on), now or later while this command runs: it keeps checking."""
    global _current
    standby = getattr(rt, "standby", None)
    fresh = standby is None
    if fresh:
        standby = Standby(rt, settings, queues, quiet)
        rt.standby = standby
    if sid:
        standby.watch(sid)
    standby.check(why=None)
    if fresh:
        standby.start()
    _current = standby
    return standby
