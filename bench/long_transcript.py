"""Per-step time against transcript length: does a step cost more as the session grows?

Used by bench/profile_step.py. A session's transcript is preloaded with synthetic Read turns (the
four entries an agent step of ``read_loop`` writes: the assistant's tool_use, its state change, the
tool result, the next state change), then ``read_loop`` goes on for a few more agent steps, run in
this process. The first agent step reads and parses the whole transcript once (this process has
not seen it); the steady-state figure is the median of the steps after it.

The scripted Messages API runs in this process too, and its own work (parsing the request body,
estimating its tokens) grows with the transcript: that time is measured apart and left out of
the "Mainsail" figure, as a real API's time would be. CPU time is printed too: on a shared
machine it moves less than wall time with the other processes' load.
"""

from __future__ import annotations

import collections
import statistics
import time
from dataclasses import dataclass

ENTRIES_PER_TURN = 4


@dataclass
class Growth:
    sid: str
    entries: int  # transcript entries before the measured steps
    first_ms: float  # the first agent step (cold: the transcript is read and parsed once)
    step_ms: float  # median agent step after it
    fake_api_ms: float  # of which the in-process scripted API's own work (median)
    cpu_ms: float  # median CPU time of this process per agent step, fake API included (steadier on a busy box)
    best_ms: float  # the fastest agent step after the first (least disturbed by other processes)

    @property
    def mainsail_ms(self) -> float:
        return self.step_ms - self.fake_api_ms


def preload(engine, sid: str, cwd: str, turns: int, file_text: str, file_path: str = "bench.txt") -> None:
    """Append ``turns`` synthetic Read turns to session ``sid``'s transcript (after its creation)."""
    from statemachines import State
    from workflows.models import (
        AssistantEntry,
        AssistantMessage,
        Message,
        StateEntry,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserEntry,
    )

    numbered = "\n".join(f"{i:6}\t{line}" for i, line in enumerate(file_text.splitlines(), 1))
    entries: list = [UserEntry(session_id=sid, cwd=cwd, message=Message(role="user", content="go"))]
    for i in range(turns):
        tid = f"toolu_pre_{i}"
        use = ToolUseBlock(id=tid, name="Read", input={"file_path": file_path})
        entries += [
            AssistantEntry(session_id=sid, cwd=cwd, message=AssistantMessage(content=[TextBlock(text="Reading."), use])),
            StateEntry(session_id=sid, cwd=cwd, trigger="tools_requested", source=State.QUERYING,
                       dest=State.RUNNING_TOOLS),
            UserEntry(session_id=sid, cwd=cwd, origin="tool_result", display="Read 20 lines",
                      message=Message(role="user", content=[ToolResultBlock(tool_use_id=tid, content=numbered)])),
            StateEntry(session_id=sid, cwd=cwd, trigger="tools_finished", source=State.RUNNING_TOOLS,
                       dest=State.QUERYING),
        ]
    for start in range(0, len(entries), 500):
        pipe = engine.store.pipeline()
        engine.store.append(sid, entries[start:start + 500], pipe)
        pipe.execute()


def measure(engine, workspace: str, entries: int, steps: int, file_text: str) -> Growth:
    """Preload about ``entries`` transcript entries, then time ``steps`` agent steps (model + tool)."""
    import workflows.steps as steps_mod
    from workflows import scripted
    from workflows.models import StepKind

    turns = max(1, entries // ENTRIES_PER_TURN)
    model = f"scripted:read_loop:{turns + steps}"
    rec = engine.create_session(workspace, model=model, permission_mode="bypassPermissions", auto_memory=False)
    preload(engine, rec.id, rec.workspace, turns, file_text)
    n_entries = engine.store.log_length(rec.id)

    api = scripted.get_api(model)
    fake = _Stopwatch(api, "handle")
    agent_steps: list[float] = []  # model step + the tool step after it
    fake_per_step: list[float] = []
    cpu_per_step: list[float] = []
    queue = collections.deque(engine.submit(rec.id, "go"))
    pending_model = None
    try:
        while queue:
            step = queue.popleft()
            fake.total = 0.0
            t0, c0 = time.perf_counter(), time.process_time()
            steps_mod.run_step(engine, rec.id, step.id, queue.extend)
            took, cpu = time.perf_counter() - t0, time.process_time() - c0
            if step.kind is StepKind.MODEL:
                pending_model = (took, fake.total, cpu)
            elif step.kind is StepKind.TOOL and pending_model is not None:
                agent_steps.append(pending_model[0] + took)
                fake_per_step.append(pending_model[1] + fake.total)
                cpu_per_step.append(pending_model[2] + cpu)
                pending_model = None
    finally:
        fake.restore()
    def median_ms(values: list[float]) -> float:
        return statistics.median(values[1:] or values) * 1000

    return Growth(sid=rec.id, entries=n_entries, first_ms=agent_steps[0] * 1000, step_ms=median_ms(agent_steps),
                  fake_api_ms=median_ms(fake_per_step), cpu_ms=median_ms(cpu_per_step),
                  best_ms=min(agent_steps[1:] or agent_steps) * 1000)


class _Stopwatch:
    """Adds up the time spent in ``obj.name`` (an instance's method) until restored."""

    def __init__(self, obj, name: str) -> None:
        self.obj, self.name, self.total = obj, name, 0.0
        orig = getattr(obj, name)

        def timed(*a, **kw):
            t0 = time.perf_counter()
            try:
                return orig(*a, **kw)
            finally:
                self.total += time.perf_counter() - t0

        setattr(obj, name, timed)

    def restore(self) -> None:
        delattr(self.obj, self.name)


def request_costs(engine, sid: str, rounds: int = 15) -> tuple[float, float]:
    """Fastest of ``rounds``: building session ``sid``'s next request, and the SDK turning it into bytes.

    The SDK's part (its copy of the params, then JSON) uses its private helper: nan when it is gone.
    """
    from workflows.context import build_request

    rec, entries = engine.store.get_session(sid), engine.store.cached_entries(sid)

    def build():
        return build_request(rec, entries, engine.settings.max_tokens)

    try:
        from anthropic._utils._prepare import serialize_data
    except ImportError:
        return _best(build, rounds), float("nan")
    request = build()
    return _best(build, rounds), _best(lambda: serialize_data(request, location="body"), rounds)


def _best(fn, rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1000


def report(engine, workspace: str, file_text: str, sizes: tuple[int, ...] = (100, 2000), steps: int = 10) -> None:
    """Print per-step time at each transcript size and the ratio of the largest to the smallest."""
    auto_compact = engine.settings.auto_compact
    engine.settings.auto_compact = False  # a long synthetic transcript must not be compacted away
    try:
        rows = [measure(engine, workspace, n, steps, file_text) for n in sizes]
    finally:
        engine.settings.auto_compact = auto_compact
    print(f"\n  per agent step against transcript length (read_loop, {steps} steps; median after the first)")
    print(f"  {'entries':>8} {'first (cold) ms':>16} {'step ms':>9} {'fake API ms':>12} {'Mainsail ms':>12}"
          f" {'CPU ms':>8} {'best ms':>8}")
    for g in rows:
        print(f"  {g.entries:8d} {g.first_ms:16.2f} {g.step_ms:9.2f} {g.fake_api_ms:12.2f} {g.mainsail_ms:12.2f}"
              f" {g.cpu_ms:8.2f} {g.best_ms:8.2f}")
    print("  within a step, fastest of 15: building the request, and the SDK's copy and JSON of it")
    print(f"  {'entries':>8} {'build_request ms':>16} {'SDK ms':>9}")
    for g in rows:
        build_ms, sdk_ms = request_costs(engine, g.sid)
        print(f"  {g.entries:8d} {build_ms:16.2f} {sdk_ms:9.2f}")
    small, large = rows[0], rows[-1]
    print(f"  step at {large.entries} entries / at {small.entries} entries: {large.step_ms / small.step_ms:.2f}x "
          f"(Mainsail without the fake API: {large.mainsail_ms / small.mainsail_ms:.2f}x; "
          f"CPU: {large.cpu_ms / small.cpu_ms:.2f}x; best: {large.best_ms / small.best_ms:.2f}x; aim: <= 1.2)")
