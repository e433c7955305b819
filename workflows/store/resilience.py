"""Riding out Redis errors on the step path without spending an attempt.

A step's claim, its commit and the reads it starts with are retried with backoff
(50 ms doubling to 1 s) for up to ``redis_retry_seconds`` when Redis cannot be
reached, is loading its data after a restart, or the session lock stays taken:
a Redis restart costs a running step that long at most, not a lease and an attempt.

Retrying is safe because every step event is fenced. A claim asked again by the
same owner returns the same claim. A commit whose first try did land (only its
reply was lost) is refused by the fence on the next try; since the first try's
follow-up steps may then never have been sent, the session's pending steps are
dispatched again (a duplicate message is a no-op at claim).
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING, Callable, TypeVar

# The Redis errors code outside the store modules catches: imported from here, never from redis-py.
from redis.exceptions import AuthenticationError, BusyLoadingError  # noqa: F401
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import LockError, NoPermissionError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from workflows.exceptions import LockTimeout

if TYPE_CHECKING:
    from workflows.models import StepRecord

log = logging.getLogger(__name__)

#: Errors worth waiting out (redis-py's BusyLoadingError, "LOADING", is a ConnectionError).
TRANSIENT = (RedisConnectionError, RedisTimeoutError, LockTimeout)
FIRST_DELAY = 0.05
MAX_DELAY = 1.0

#: Engine methods that commit a step's outcome and return the steps to dispatch.
COMMITS = frozenset({
    "record_model_reply", "record_tool_output", "fail_step", "defer_step", "record_compaction",
    "record_compaction_failure", "record_session_memory", "record_extraction", "record_fork_failure",
    "ask_client_hooks", "ask_client_event", "hold_tool_output", "settle_session_hook", "settle_background_hook",
})
#: Engine methods retried as they are (their result says nothing to dispatch).
RETRIED = frozenset({"save_fork_checkpoint"})

T = TypeVar("T")


def retrying(fn: Callable[[], T], *, what: str, budget: float, say: Callable[[str], None] | None = None) -> T:
    """``fn()``, retried on :data:`TRANSIENT` errors for up to ``budget`` seconds.

    ``say``: where the retries are told (a CLI command: stderr); the log by default.

    Raises:
        The last transient error, once the budget is spent; any other error at once.
    """
    deadline = time.monotonic() + budget
    delay, failures = FIRST_DELAY, 0
    while True:
        try:
            result = fn()
        except TRANSIENT as exc:
            failures += 1
            if time.monotonic() + delay > deadline:
                (say or log.error)(f"{what}: still failing after {failures} tries over {budget:.1f}s ({exc}); "
                                   "giving up")
                raise
            if failures == 1:
                (say or log.warning)(f"{what}: {_brief(exc)}; retrying for up to {budget:g}s")
            time.sleep(delay)
            delay = min(delay * 2, MAX_DELAY)
            continue
        if failures:
            (say or log.warning)(f"{what}: succeeded after {failures} Redis error(s)")
        return result


def _brief(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


class ResilientEngine:
    """An engine whose claim and commits ride out Redis errors; everything else passes through."""

    def __init__(self, engine) -> None:
        self._engine = engine
        self._budget = engine.settings.redis_retry_seconds

    def __getattr__(self, name: str):
        attr = getattr(self._engine, name)
        if name in COMMITS:
            return functools.partial(self._commit, attr, name)
        if name in RETRIED:
            return lambda *a, **kw: retrying(lambda: attr(*a, **kw), what=name, budget=self._budget)
        return attr

    def claim(self, sid: str, step_id: str, owner: str, worker: str | None = None):
        return retrying(lambda: self._engine.claim(sid, step_id, owner, worker),
                        what=f"claim of step {step_id[:8]} (session {sid[:8]})", budget=self._budget)

    def read(self, fn: Callable[[], T], what: str) -> T:
        """A read the step needs before it can start (e.g. the transcript), retried like a commit."""
        return retrying(fn, what=what, budget=self._budget)

    def _commit(self, method, name: str, sid: str, step_id: str, *args, **kwargs) -> list[StepRecord]:
        failed, steps = self._retried(method, name, sid, step_id, *args, **kwargs)
        return self._landed(name, sid, step_id) if failed and not steps else steps

    def settle_pre_tool(self, sid: str, step_id: str, *args, **kwargs) -> tuple[bool, list[StepRecord]]:
        """:meth:`Engine.settle_pre_tool`, retried (a retry of a landed verdict records nothing twice)."""
        name = "settle_pre_tool"
        failed, (go_on, steps) = self._retried(self._engine.settle_pre_tool, name, sid, step_id, *args, **kwargs)
        return go_on, (self._landed(name, sid, step_id) if failed and not go_on and not steps else steps)

    def _retried(self, method, name: str, sid: str, step_id: str, *args, **kwargs):
        failed = False

        def attempt():
            nonlocal failed
            try:
                return method(sid, step_id, *args, **kwargs)
            except TRANSIENT:
                failed = True
                raise

        result = retrying(attempt, what=f"{name} of step {step_id[:8]} (session {sid[:8]})", budget=self._budget)
        return failed, result

    def _landed(self, name: str, sid: str, step_id: str) -> list[StepRecord]:
        """The fence refused a retry: an earlier try may have landed, its steps unsent."""
        return retrying(lambda: pending_steps(self._engine.store, sid),
                        what=f"{name} of step {step_id[:8]} (session {sid[:8]})", budget=self._budget)


def pending_steps(store, sid: str) -> list[StepRecord]:
    """The session's steps waiting for a worker (of its current epoch, or background forks)."""
    from workflows.models import StepStatus  # (here: the CLI imports this module's errors without the models)

    rec = store.get_session(sid)
    return [s for s in store.steps(sid)
            if s.status is StepStatus.PENDING and (s.background or s.epoch == rec.epoch)]
