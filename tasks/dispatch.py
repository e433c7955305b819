"""Send the steps a commit returned to their queues.

Publishing rides out a Redis outage: kombu retries it (reconnecting) for about
``redis_retry_seconds``, waiting at most a second between tries, so a step's
follow-ups go out within a second of Redis coming back. A message sent twice
(the first one's reply lost) is harmless: the second delivery is a no-op at claim.
"""

from __future__ import annotations

import math

from tasks.app import TASK_FOR_KIND, app, queue_key
from workflows.models import StepRecord
from workflows.settings import get_settings

#: Move a step's message (found among the newest ARGV[2]+1 of the queue) to the end consumed next.
_TO_FRONT = """
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[2]))
for _, item in ipairs(items) do
  if string.find(item, ARGV[1], 1, true) then
    redis.call('LREM', KEYS[1], 1, item)
    redis.call('RPUSH', KEYS[1], item)
    return 1
  end
end
return 0
"""
SEARCH_NEWEST = 50

RETRY_START = 0.05
RETRY_STEP = 0.25
RETRY_MAX = 1.0


def retry_policy(budget: float) -> dict:
    """kombu's publish retry policy for about ``budget`` seconds of retrying."""
    return {"max_retries": max(3, math.ceil(budget / RETRY_MAX) + 4), "interval_start": RETRY_START,
            "interval_step": RETRY_STEP, "interval_max": RETRY_MAX}


def dispatch(steps: list[StepRecord]) -> None:
    if not steps:
        return
    policy = retry_policy(get_settings().redis_retry_seconds)
    for step in steps:
        app.send_task(TASK_FOR_KIND[step.kind.value], args=[step.session_id, step.id], queue=step.queue,
                      retry=True, retry_policy=policy)


def dispatch_first(steps: list[StepRecord]) -> None:
    """Send steps taken back from a dead worker (or found lost) to the front of their queues.

    They already waited their turn once: a recovered step must not queue again behind every step
    sent since. kombu pushes at the end of the list consumed last; the message is then moved to the
    end consumed first (as kombu itself does when it restores unacknowledged messages). If a worker
    took it meanwhile, there is nothing to move.
    """
    dispatch(steps)
    if not steps:
        return
    from tasks import runtime

    client = runtime.engine().store.r
    for step in steps:
        try:
            client.eval(_TO_FRONT, 1, queue_key(step.queue), step.id, SEARCH_NEWEST)
        except Exception:  # it is queued all the same, only later
            pass
