"""Per-step time against transcript length: does a step cost more as the session grows?

Used by bench/profile_step.py. A session's transcript is preloaded with synthetic Read turns (the
four entries an agent step of ``read_loop`` writes: the assistant's tool_use, its state change, the
tool result, the next state change), then ``read_loop`` goes on for a few more agent steps, run in
this process. The first agent step reads and parses the whole transcript once (this process has
not seen it); the steady-state figure is the median of the steps after it.

By default the model is the fake Messages API in a process of its own (``python -m
tests.fakeapi``, over HTTP, as a real API is remote). Its work grows with the transcript (it parses
a body of ~800 KB at 2,000 entries): it is left out of the "Mainsail" figure, as a real API's time
would be, and so is the SDK's part of the call (sending the body, parsing the stream), which would
be the network's on a real API: the "call" column is the model call less the encoding of its body.
What is left is Mainsail's: building the request and encoding its body (both printed apart), the
claims, the commits, the tool. CPU time (this process's, the SDK's included) is printed too: on a
shared machine it moves less than wall time with the other processes' load.

With ``api_url=None`` the scripted API runs in this process instead (profile_step.py's
``--growth-api in-process``, the figure of earlier rows of bench/README.md): its own work is then
timed apart ("fake API"), but the garbage of its parse of a large body (collected while Mainsail's
code runs, and crowding the CPU's caches) lands on Mainsail's figure.
"""

from __future__ import annotations

import collections
import math
import statistics
import time
from dataclasses import dataclass

from workflows.models.options import SessionOptions

ENTRIES_PER_TURN = 4


@dataclass
class Growth:
    sid: str
    entries: int  # transcript entries before the measured steps
    first_ms: float  # the first agent step (cold: the transcript is read and parsed once)
    step_ms: float  # median agent step after it
    fake_api_ms: float  # of which the in-process scripted API's own work (median; nan when it runs apart)
    sdk_ms: float  # ... the model call less the API's work (when timed) and the body's encoding
    build_ms: float  # ... building the request (context assembly)
    body_ms: float  # ... encoding its JSON body (workflows/model/request_json.py)
    cpu_ms: float  # median CPU time of this process per agent step (the fake API's too when it runs here)
    mainsail_cpu_ms: float  # ... of which Mainsail's: less the model call's CPU, but for its body's encoding
    best_ms: float  # the fastest agent step after the first (least disturbed by other processes)

    @property
    def mainsail_ms(self) -> float:
        """The step less what a real API and the network would take (the fake API's work, the SDK's)."""
        return self.step_ms - (0.0 if math.isnan(self.fake_api_ms) else self.fake_api_ms) - self.sdk_ms


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


#: The model of a session measured against the fake API in its own process (``api_url``).
HTTP_MODEL = "claude-sonnet-4-5"


def turns_for(entries: int) -> int:
    """The synthetic turns preloaded for about ``entries`` transcript entries."""
    return max(1, entries // ENTRIES_PER_TURN)


#: The worker name the steps run under (their claims join its held steps, as a real worker's).
WORKER = "bench@profile-step"


def serves(step) -> bool:
    """The queues the benches' in-process steps run as a worker serving them (each step runs the one its
    commit claims next, a reply's quick calls run in its model step)."""
    return step.queue in ("model", "tools")


def measure(engine, workspace: str, entries: int, steps: int, file_text: str, api_url: str | None = None) -> Growth:
    """Preload about ``entries`` transcript entries, then time ``steps`` agent steps (a model call to the next) after
    the first. ``api_url``: the fake Messages API serving ``read_loop`` with turns enough (None: the
    scripted API in this process)."""
    import workflows.steps.run as steps_mod
    from demo import scripted
    from workflows.model import request_json
    from workflows.models import StepKind

    turns = turns_for(entries)
    model = f"scripted:read_loop:{turns + steps + 1}" if api_url is None else HTTP_MODEL
    rec = engine.create_session(workspace, SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True))
    preload(engine, rec.id, rec.workspace, turns, file_text)
    n_entries = engine.store.log_length(rec.id)

    watches = {"call": _Stopwatch(steps_mod, "stream_reply"), "build": _Stopwatch(steps_mod, "build_request"),
               "body": _Stopwatch(request_json, "body")}
    if api_url is None:
        watches["fake"] = _Stopwatch(scripted.get_api(model), "handle")
    agent_steps: list[float] = []  # model step + the tool step after it
    parts: dict[str, list[float]] = {name: [] for name in watches}
    cpu_per_step: list[float] = []
    own_cpu_per_step: list[float] = []
    queue = collections.deque(engine.submit(rec.id, "go"))
    claimed = None
    current: list | None = None  # [wall, {part: wall}, cpu, own cpu] of the agent step under way
    try:
        while (claimed or queue) and len(agent_steps) <= steps:  # the first (cold), then ``steps``
            step = claimed[0] if claimed else queue.popleft()
            if step.kind is StepKind.MODEL and current is not None:  # an agent step: a model call to the next
                agent_steps.append(current[0])
                for name in watches:
                    parts[name].append(current[1][name])
                cpu_per_step.append(current[2])
                own_cpu_per_step.append(current[3])
                current = None
            for watch in watches.values():
                watch.total = watch.cpu = 0.0
            t0, c0 = time.perf_counter(), time.process_time()
            # as a worker serving both queues runs them: the step its commit claims next, its quick calls
            _, claimed = steps_mod.run_one(engine, step.session_id, step.id, queue.extend, worker=WORKER,
                                           keep=serves, claimed=claimed)
            took, cpu = time.perf_counter() - t0, time.process_time() - c0
            # Mainsail's CPU: the process's less the model call's, but for the body's encoding in it
            own_cpu = cpu - watches["call"].cpu + watches["body"].cpu
            if step.kind is StepKind.MODEL:
                current = [took, {name: w.total for name, w in watches.items()}, cpu, own_cpu]
            elif step.kind is StepKind.TOOL and current is not None:
                current[0] += took
                for name, watch in watches.items():
                    current[1][name] += watch.total
                current[2] += cpu
                current[3] += own_cpu
    finally:
        for watch in watches.values():
            watch.restore()

    def median_ms(values: list[float]) -> float:
        return statistics.median(values[1:] or values) * 1000

    fake = parts.get("fake") or [0.0] * len(parts["call"])
    sdk = [call - api - body for call, api, body in zip(parts["call"], fake, parts["body"])]
    return Growth(sid=rec.id, entries=n_entries, first_ms=agent_steps[0] * 1000, step_ms=median_ms(agent_steps),
                  fake_api_ms=median_ms(parts["fake"]) if "fake" in parts else float("nan"), sdk_ms=median_ms(sdk),
                  build_ms=median_ms(parts["build"]),
                  body_ms=median_ms(parts["body"]), cpu_ms=median_ms(cpu_per_step),
                  mainsail_cpu_ms=median_ms(own_cpu_per_step), best_ms=min(agent_steps[1:] or agent_steps) * 1000)


class _Stopwatch:
    """Adds up the time (``total``) and this process's CPU time (``cpu``) spent in ``obj.name`` (a module's
    function or an instance's method) until restored."""

    def __init__(self, obj, name: str) -> None:
        self.obj, self.name, self.total, self.cpu = obj, name, 0.0, 0.0
        self.orig = orig = getattr(obj, name)
        self.own = name in vars(obj)

        def timed(*a, **kw):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return orig(*a, **kw)
            finally:
                self.total += time.perf_counter() - t0
                self.cpu += time.process_time() - c0

        setattr(obj, name, timed)

    def restore(self) -> None:
        if self.own:  # a module's function (or an attribute of the object's own): put it back
            setattr(self.obj, self.name, self.orig)
        else:  # an instance's method: drop the shadowing attribute
            delattr(self.obj, self.name)


def request_costs(engine, sid: str, rounds: int = 15) -> tuple[float, float, float]:
    """Fastest of ``rounds``: building session ``sid``'s next request, encoding its body as Mainsail
    sends it (its shared blocks' JSON kept), and what the SDK would take to copy and encode the same
    request itself (its private helper: nan when it is gone)."""
    from workflows.context.assemble import build_request
    from workflows.model import request_json

    rec, entries = engine.store.get_session(sid), engine.store.cached_entries(sid)

    def build():
        return build_request(rec, entries, engine.settings.max_tokens)

    request = build()
    body_ms = _best(lambda: request_json.body(build()), rounds) - _best(build, rounds)
    try:
        from anthropic._utils._prepare import serialize_data
    except ImportError:
        return _best(build, rounds), body_ms, float("nan")
    return _best(build, rounds), body_ms, _best(lambda: serialize_data(request, location="body"), rounds)


def _best(fn, rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1000


def report(engine, workspace: str, file_text: str, sizes: tuple[int, ...] = (100, 2000), steps: int = 10,
           api_url: str | None = None) -> None:
    """Print per-step time at each transcript size and the ratio of the largest to the smallest.
    ``api_url``: as for :func:`measure`."""
    auto_compact = engine.settings.auto_compact
    engine.settings.auto_compact = False  # a long synthetic transcript must not be compacted away
    try:
        rows = [measure(engine, workspace, n, steps, file_text, api_url) for n in sizes]
    finally:
        engine.settings.auto_compact = auto_compact
    where = "in this process" if api_url is None else "in its own process, over HTTP"
    print(f"\n  per agent step against transcript length (read_loop, {steps} steps; median after the first;"
          f" the fake API {where})")
    print("  of a step: the fake API's own work (a real API's; timed only in this process), the rest of the call\n"
          "  (the SDK's part: the network's, on a real API), and Mainsail's (the rest: building the request and\n"
          "  its body, shown apart, claims, commits, tool), with its CPU time (the process's less the call's but\n"
          "  for the body's encoding: what other processes' load on this machine moves least)")
    print(f"  {'entries':>8} {'first (cold) ms':>16} {'step ms':>9} {'fake API ms':>12} {'call ms':>8}"
          f" {'Mainsail ms':>12} {'its CPU ms':>11} {'build ms':>9} {'body ms':>8} {'CPU ms':>8} {'best ms':>8}")
    for g in rows:
        fake = "-" if math.isnan(g.fake_api_ms) else f"{g.fake_api_ms:.2f}"
        print(f"  {g.entries:8d} {g.first_ms:16.2f} {g.step_ms:9.2f} {fake:>12} {g.sdk_ms:8.2f}"
              f" {g.mainsail_ms:12.2f} {g.mainsail_cpu_ms:11.2f} {g.build_ms:9.2f} {g.body_ms:8.2f} {g.cpu_ms:8.2f}"
              f" {g.best_ms:8.2f}")
    print("  fastest of 15: building the request, encoding its body (Mainsail's), and what the SDK's own copy\n"
          "  and JSON of the same request would take (what Mainsail's body spares it)")
    print(f"  {'entries':>8} {'build_request ms':>16} {'body ms':>8} {'SDK copy+JSON ms':>17}")
    for g in rows:
        build_ms, body_ms, sdk_ms = request_costs(engine, g.sid)
        print(f"  {g.entries:8d} {build_ms:16.2f} {body_ms:8.2f} {sdk_ms:17.2f}")
    small, large = rows[0], rows[-1]
    print(f"  step at {large.entries} entries / at {small.entries} entries: {large.step_ms / small.step_ms:.2f}x "
          f"(Mainsail's part: {large.mainsail_ms / small.mainsail_ms:.2f}x, its CPU: "
          f"{large.mainsail_cpu_ms / small.mainsail_cpu_ms:.2f}x; process CPU: {large.cpu_ms / small.cpu_ms:.2f}x; best: {large.best_ms / small.best_ms:.2f}x; aim: <= 1.2)")
    grown = large.step_ms - small.step_ms
    if grown > 0:
        api = "" if api_url else f"fake API {large.fake_api_ms - small.fake_api_ms:+.2f} ms, "
        print(f"  where the {grown:.2f} ms more per step go: {api}"
              f"call {large.sdk_ms - small.sdk_ms:+.2f} ms, Mainsail {large.mainsail_ms - small.mainsail_ms:+.2f} ms "
              f"(of which build {large.build_ms - small.build_ms:+.2f} ms, body {large.body_ms - small.body_ms:+.2f} ms)")
