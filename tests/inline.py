"""Run a session's steps synchronously in this process, for unit tests and benchmarks.

The same ``run_step`` the Celery tasks call; only the dispatcher differs: steps
go to a local FIFO instead of a broker.
"""

from __future__ import annotations

import itertools
from collections import deque

from demo import scripted
from workflows.engine import Engine
from workflows.models import StepRecord
from workflows.steps.run import run_step

_names = itertools.count()


def scripted_model(script) -> str:
    """Register ``script`` (a Script, dict or turn function) and return a model name for it."""
    name = f"test-{next(_names)}"
    scripted._apis[name] = scripted.ScriptedMessagesAPI(script)
    return f"scripted:{name}"


def api_of(model: str) -> scripted.ScriptedMessagesAPI:
    return scripted.get_api(model)


class Inline:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.queue: deque[StepRecord] = deque()
        self.ran: list[StepRecord] = []

    def dispatch(self, steps: list[StepRecord]) -> None:
        self.queue.extend(steps)

    def run(self, n: int) -> None:
        """Run exactly the next ``n`` queued steps."""
        for _ in range(n):
            step = self.queue.popleft()
            self.ran.append(step)
            run_step(self.engine, step.session_id, step.id, self.dispatch)

    def drain(self, limit: int = 500) -> int:
        """Run steps until none is queued."""
        n = 0
        while self.queue:
            step = self.queue.popleft()
            self.ran.append(step)
            run_step(self.engine, step.session_id, step.id, self.dispatch)
            n += 1
            if n > limit:
                raise RuntimeError("too many steps: a loop?")
        return n
