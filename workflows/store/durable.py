"""Making the claim of a mutating step durable before its effect starts.

With ``appendfsync everysec`` (the AOF's usual setting) Redis acknowledges a write before it is on disk: a
host crash loses up to the last second of writes. If that second held the claim of a Bash or Edit step
(``running``, attempt 1), Redis comes back with the step ``pending`` and attempt 0, a worker claims it
afresh and the command runs a second time, though it may have run already (bench/host_crash.py).

So the tool step waits, after its claim and before the tool's effect, until the AOF holds the claim on
disk (:meth:`Durability.wait`):

- **WAITAOF** (Redis 7.2 and later, Valkey): one write on the waiting connection (a counter of
  ``mainsail:metrics``), then ``WAITAOF 1 0 timeout``. The AOF is one log, so the fsync that covers this
  write covers the claim written before it, by whatever connection. Cost: one fsync per mutating call, no
  cost to any other write (bench/README.md).
- **A WAITAOF that answers early**: under ``everysec``, Redis 7.x and Valkey (8.1, 9.1) acknowledge a WAITAOF
  once the write is in the file, before its fsync, when the last fsync is less than a second old (the flaw
  redis/redis#13793 fixed in Redis 8.0; brought in by redis/redis#12622, in 7.4, and whether a 7.2 patch
  release took that is not known here; seen here with strace: the reply came in 2 ms with no fsync call).
  Their WAITAOF is not trusted under ``everysec`` (7.2's neither: fail closed): such a Redis counts as one
  without it (below). Redis 8.0 and later is trusted.
- **Older Redis** (7.0 has no per-write fsync): ``appendfsync always`` makes every write durable before
  its reply, so the claim already is; the check is one ``CONFIG GET`` per process. docs/deploying.md says
  which to choose and what each costs.
- **Turned off** (``MAINSAIL_DURABLE_CLAIMS=false``): no wait, one warning per process; for measuring what
  the wait prevents (bench/host_crash.py ``--no-durable``).
- **Neither** (AOF off, or ``everysec`` on a Redis without WAITAOF, or CONFIG refused): the command runs as
  it would have (refusing every Bash call of a laptop's embedded Redis would be worse than the risk), with
  one warning per ``mainsail worker`` process naming the setting that would close the window (the CLI's
  own worker logs it at INFO: ``mainsail doctor`` shows it).

A WAITAOF that times out (a disk that does not answer) fails closed: :class:`NotDurable`, and the call is
not run (the model is told why).
"""

from __future__ import annotations

import logging
import threading

import redis

from workflows.exceptions import MainsailError
from workflows.store import keys

log = logging.getLogger(__name__)

#: How long a mutating call waits for the AOF's fsync before it is refused.
WAIT_MS = 5000

WAITAOF, ALWAYS, UNSAFE = "waitaof", "appendfsync always", "unsafe"

#: The level at which a process says, once, that its Redis cannot make claims durable.
_UNSAFE_LEVEL = logging.WARNING


def report_unsafe_at(level: int) -> None:
    """Say that a Redis cannot make claims durable at ``level`` (the CLI's own worker: INFO, since
    ``mainsail doctor`` says it; a ``mainsail worker``: WARNING)."""
    global _UNSAFE_LEVEL
    _UNSAFE_LEVEL = level


class NotDurable(MainsailError):
    """Redis did not confirm the claim on disk in time: the call's effect must not start."""


class Durability:
    """How this process makes a claim durable, found out at the first wait (see the module docstring)."""

    def __init__(self, r: redis.Redis, *, say: bool = True, enabled: bool = True) -> None:
        self.r = r
        self.say = say  # log :attr:`why` when unsafe (``mainsail doctor`` shows it itself)
        self.mode: str | None = None if enabled else UNSAFE
        self.why = "" if enabled else ("MAINSAIL_DURABLE_CLAIMS is off: a host crash that loses the AOF's last "
                                       "second can run a command twice.")
        if not enabled and say:
            log.warning("%s", self.why)
        self._lock = threading.Lock()

    def wait(self) -> str:
        """Return once every write made so far is on disk (or say why it cannot be: :data:`UNSAFE`).

        Raises:
            NotDurable: WAITAOF answered that the AOF was not fsynced within :data:`WAIT_MS`.
        """
        if self.mode is None:
            with self._lock:
                if self.mode is None:
                    self.mode, self.why = self._detect()  # (its WAITAOF, when it has one, was this wait)
                    if self.mode == UNSAFE and self.say:
                        log.log(_UNSAFE_LEVEL, "%s", self.why)
                    return self.mode
        if self.mode == WAITAOF:
            self._waitaof()
        return self.mode

    def _waitaof(self) -> None:
        p = self.r.pipeline(transaction=False)
        p.hincrby(keys.metrics(), "durable_waits_total", 1)
        p.execute_command("WAITAOF", 1, 0, WAIT_MS)
        local, _ = p.execute()[1]
        if int(local) < 1:
            raise NotDurable(f"Redis did not write the step's claim to its AOF on disk within {WAIT_MS / 1000:g}s "
                             "(is its disk stalled?), so the command was not run: a crash now could run it twice.")

    def _detect(self) -> tuple[str, str]:
        try:
            self._waitaof()
            early = early_waitaof(self.r)
        except redis.ResponseError as exc:
            text, early = str(exc).lower(), None
            if "appendonly" in text:  # WAITAOF exists, the AOF is off
                return UNSAFE, ("Redis has its AOF off (appendonly no): a Redis restart or host crash loses sessions, "
                                "and a command whose claim is lost may run twice. Set appendonly yes.")
        else:
            if early is None:
                return WAITAOF, ""
        try:
            fsync = self.r.config_get("appendfsync").get("appendfsync")
            aof = self.r.config_get("appendonly").get("appendonly")
        except redis.ResponseError:
            fsync = aof = None
        if aof == "yes" and fsync == "always":
            return ALWAYS, ""
        said = "cannot be read (CONFIG refused)" if fsync is None else f"appendonly {aof}, appendfsync {fsync}"
        if early is not None:
            return UNSAFE, (f"{early} acknowledges WAITAOF before the fsync under appendfsync everysec (the flaw Redis "
                            f"8.0 fixed, redis/redis#13793), and its AOF settings {said}: a host crash can lose the "
                            "claim of a running command, which may then run twice. Use Redis 8.0 or later, or set "
                            "appendfsync always (docs/deploying.md).")
        return UNSAFE, (f"Redis has no WAITAOF (before 7.2) and its AOF settings {said}: a host crash can lose the "
                        "last second of writes, and with it the claim of a running command, which may then run "
                        "twice. Use Redis 8.0 or later, or set appendfsync always (docs/deploying.md).")


def early_waitaof(r: redis.Redis) -> str | None:
    """The server's name and version when its WAITAOF can answer before the fsync (see the module docstring):
    Valkey, or Redis before 8.0; also when INFO is refused (fail closed). None for Redis 8.0 or later."""
    try:
        info = r.info("server")
    except redis.ResponseError:
        return "A Redis whose INFO is refused (its version unknown)"
    if str(info.get("server_name", "")).lower() == "valkey":
        return f"Valkey {info.get('valkey_version', '?')}"
    version = str(info.get("redis_version", "0"))
    try:
        major_minor = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:
        return f"Redis {version}"
    return f"Redis {version}" if major_minor < (8, 0) else None


__all__ = ["ALWAYS", "Durability", "NotDurable", "UNSAFE", "WAITAOF", "early_waitaof", "report_unsafe_at"]
