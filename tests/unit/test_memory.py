"""Session memory and auto-memory, in-process: the decision function, the records, and the
forks' flows through the engine (fakeredis, the scripted model, steps run inline)."""

from __future__ import annotations

import json

import pytest

from demo.scripted import DEMO_FILES, Script, ScriptUsage, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from workflows.engine import Engine
from workflows.exceptions import MemoryRecordError
from workflows.memory.records import (
    SESSION_MEMORY_TEMPLATE,
    MemoryThresholds,
    index_markdown,
    make_record,
    parse_markdown,
    project_id,
    session_memory_path,
    should_update_session_memory,
)
from workflows.models import CompactBoundaryEntry, StateEntry, StepKind, StepStatus, SystemEntry
from workflows.models.options import SessionOptions
from workflows.store import keys
from workflows.store.memory import ProjectMemory
from workflows.store.redis_store import Store

T = MemoryThresholds(init_tokens=10_000, update_tokens=5_000, tool_calls=10)


# =========================================================================== the decision function


@pytest.mark.parametrize(
    "tokens, at_last, tools_since, had_tools, expected, why",
    [
        (9_999, None, 50, False, False, "under 10k before the first update, even at a natural break"),
        (10_000, None, 0, False, True, "10k reached, natural break"),
        (10_000, None, 0, True, False, "10k reached, but mid tool loop with few tool calls"),
        (10_000, None, 10, True, True, "10k reached and 10 tool calls"),
        (12_000, None, 9, True, False, "9 tool calls are not enough mid-loop"),
        (14_999, 10_000, 30, False, False, "grown 4,999 since the last: the token condition always holds"),
        (15_000, 10_000, 0, False, True, "grown 5,000, natural break"),
        (15_000, 10_000, 10, True, True, "grown 5,000 and 10 tool calls"),
        (15_000, 10_000, 9, True, False, "grown 5,000 but 9 tool calls and still calling tools"),
        (40_000, 39_000, 100, False, False, "lots of tool calls, little growth"),
        (4_000, 30_000, 10, False, False, "the context shrank (compaction) since the last update"),
    ],
)
def test_when_session_memory_updates(tokens, at_last, tools_since, had_tools, expected, why):
    assert should_update_session_memory(tokens, at_last, tools_since, had_tools, T) is expected, why


def test_the_thresholds_are_settings():
    low = MemoryThresholds(init_tokens=100, update_tokens=50, tool_calls=2)
    assert should_update_session_memory(100, None, 2, True, low)
    assert not should_update_session_memory(100, None, 2, True, T)
    assert should_update_session_memory(149, 100, 0, False, low) is False
    assert should_update_session_memory(150, 100, 0, False, low) is True


# =========================================================================== records


def test_a_record_round_trips_through_markdown_with_frontmatter():
    rec = make_record("user-role", "The user is a data engineer", "user", "Prefers pandas.\n\nWorks on ETL.")
    text = rec.markdown()
    assert text.startswith("---\nname: user-role\ndescription: The user is a data engineer\ntype: user\n---\n")
    back = parse_markdown(text, where="user-role.md")
    assert (back.name, back.description, back.type, back.body) == (rec.name, rec.description, rec.type, rec.body)


@pytest.mark.parametrize("text, needle", [
    ("no frontmatter here", "no YAML frontmatter"),
    ("---\nname: [x\n---\nbody", "not valid YAML"),
    ("---\nname: a\ndescription: d\ntype: opinion\n---\nbody", "Invalid memory type 'opinion'"),
    ("---\nname: a\ntype: user\n---\nbody", "needs a one-line description"),
    ("---\nname: Bad Name\ndescription: d\ntype: user\n---\nbody", "Invalid memory name 'Bad Name'"),
])
def test_a_bad_memory_file_is_refused_by_name_with_the_fix(text, needle):
    with pytest.raises(MemoryRecordError) as err:
        parse_markdown(text, where="x.md")
    assert "x.md" in str(err.value) and needle in str(err.value)


def test_the_index_groups_records_by_type_one_line_each(fake_redis):
    mem = ProjectMemory(fake_redis, project_id("/srv/app"), "/srv/app")
    mem.put(make_record("ref-grafana", "Latency dashboards live in Grafana", "reference", "grafana.internal/d/api"))
    mem.put(make_record("user-role", "Backend engineer, new to React", "user", "..."))
    index = mem.index()
    assert index.splitlines()[2:] == [
        "- [user-role](user-role.md) (user): Backend engineer, new to React",
        "- [ref-grafana](ref-grafana.md) (reference): Latency dashboards live in Grafana",
    ]
    assert index == index_markdown(mem.records())
    cut = mem.index(max_lines=3)
    assert cut.count("\n- [") == 1 and "ref-grafana" not in cut and "only the first 3 are shown" in cut
    assert fake_redis.hget(keys.projects(), mem.pid) == b"/srv/app"


def test_project_ids_are_key_safe_and_distinct():
    a, b = project_id("/home/me/code/app"), project_id("/home/me/code2/app")
    assert a != b and keys.project_memory(a) and keys.project_memory(b)
    assert project_id("/" + "x" * 300)  # long paths are cut, never invalid


# =========================================================================== flows through the engine


@pytest.fixture(autouse=True)
def no_retries(settings):
    settings.api_max_retries = 0  # a scripted error fails at once


def big(n: int) -> ScriptUsage:
    return ScriptUsage(input_tokens=n, output_tokens=100)


def run_session(engine, ws, script, prompt: str, mode: str = "bypassPermissions", **kw):
    """A new session on ``script``, ``prompt`` run to the end (memory forks included); its id and model."""
    model = scripted_model(script)
    rec = create_session(engine, str(ws), model=model, permission_mode=mode, **kw)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, prompt))
    inline.drain()
    return rec.id, model


def states(engine, sid):
    return [(e.trigger, e.dest) for e in engine.store.entries(sid) if isinstance(e, StateEntry)]


def memory_notes(engine, sid):
    return [e.content for e in engine.store.entries(sid) if isinstance(e, SystemEntry) and e.subtype == "memory"]


def test_a_session_crossing_the_thresholds_updates_its_memory_in_the_background(engine, ws):
    # 12 Reads at a 12k-token context, then an answer at 20k: one update after the 10th call
    # (10 tool calls since), one at the natural break (grown 5k since).
    turns = [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})], usage=big(12_000))
             for _ in range(12)]
    turns.append(Turn(text="Done reading.", usage=big(20_000)))
    model = scripted_model(Script(turns=turns))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "read calc.py a dozen times"))

    # Run only the main loop's steps until the memory fork is requested: it does not wait for it.
    while not any(s.kind is StepKind.MEMORY for s in inline.queue):
        step = next(s for s in inline.queue if s.kind is not StepKind.MEMORY)
        inline.queue.remove(step)
        inline.queue.appendleft(step)
        inline.run(1)
    mem_step = next(s for s in inline.queue if s.kind is StepKind.MEMORY)
    assert mem_step.queue == "memory"
    assert any(s.kind is StepKind.TOOL for s in inline.queue), "the main loop went on without waiting"
    assert engine.store.get_session(rec.id).memory_step == mem_step.id

    inline.drain()
    rec = engine.store.get_session(rec.id)
    doc = engine.store.session_memory(rec.id)
    assert doc and doc != SESSION_MEMORY_TEMPLATE and "Working on: read calc.py a dozen times" in doc
    assert rec.memory_step is None and rec.memory_updates == 1  # the second run found nothing new to add
    mem_steps = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.MEMORY]
    assert len(mem_steps) == 2 and all(s.status is StepStatus.DONE for s in mem_steps)
    fork_calls = api_of(model).fork_requests("session_memory")
    assert fork_calls and all(t["name"] == "Edit" for b in fork_calls for t in b["tools"])
    assert session_memory_path(rec.id) in fork_calls[0]["messages"][0]["content"][0]["text"]
    assert rec.usage.input_tokens > 12 * 12_000 + 20_000, "the forks' calls are charged to the session"


def test_a_request_while_an_update_runs_waits_and_runs_once_after_it(engine, ws):
    engine.settings.session_memory_init_tokens = 100
    engine.settings.session_memory_update_tokens = 100
    engine.settings.session_memory_tool_calls = 1
    turns = [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})], usage=big(1_000 * (i + 1)))
             for i in range(4)]
    turns.append(Turn(text="ok", usage=big(9_000)))
    model = scripted_model(Script(turns=turns))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    held = []
    while inline.queue:  # run the main loop to its end, holding back every memory step
        step = inline.queue.popleft()
        if step.kind is StepKind.MEMORY:
            held.append(step)
            continue
        inline.queue.appendleft(step)
        inline.run(1)
    assert len(held) == 1, "five requests, one update running: never two at once"
    assert engine.store.get_session(rec.id).memory_trailing
    inline.dispatch(held)
    inline.drain()
    mem_steps = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.MEMORY]
    assert len(mem_steps) == 2, "the requests made meanwhile became one trailing run"
    assert engine.store.get_session(rec.id).memory_trailing is False


def test_compaction_uses_the_session_memory_and_makes_no_summary_call(engine, ws):
    engine.settings.session_memory_init_tokens = 100
    engine.settings.session_memory_update_tokens = 100
    engine.settings.autocompact_pct_override = 50
    turns = [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})], usage=big(20_000)),
             Turn(text="first answer", usage=big(20_000)),
             Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})], usage=big(190_000)),
             Turn(text="second answer", usage=big(1_000))]
    model = scripted_model(Script(turns=turns))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "remember the plan"))
    inline.drain()
    assert "Working on: remember the plan" in engine.store.session_memory(rec.id)
    inline.dispatch(engine.submit(rec.id, "more"))
    inline.drain()
    boundary = [e for e in engine.store.entries(rec.id) if isinstance(e, CompactBoundaryEntry)]
    assert len(boundary) == 1 and boundary[0].source == "session_memory"
    api = api_of(model)
    assert not any("create a detailed summary" in json.dumps(b) for b in api.all_requests), "no summary call"
    assert "Working on: remember the plan" in json.dumps(api.requests[-1]["messages"])


def test_the_session_memory_fork_may_only_edit_its_notes(engine, ws):
    sid, model = run_session(engine, ws, Script(
        turns=[Turn(text="hello", usage=big(30_000))],
        session_memory=[
            Turn(tool_uses=[ToolUse(name="Bash", input={"command": "rm -rf /"}),
                            ToolUse(name="Edit", input={"file_path": str(ws / "calc.py"), "old_string": "a - b",
                                                        "new_string": "a * b"})]),
            Turn(text="Gave up."),
        ]), "hi")
    assert (ws / "calc.py").read_text() == DEMO_FILES["calc.py"]
    second = api_of(model).fork_requests("session_memory")[1]
    results = second["messages"][-1]["content"]
    path = session_memory_path(sid)
    assert results[0]["is_error"] and results[0]["content"].startswith("Bash is not allowed here")
    assert f"may only use Edit on {path}" in results[0]["content"]
    assert results[1]["is_error"] and f"Editing {ws / 'calc.py'} is not allowed here" in results[1]["content"]
    assert engine.store.session_memory(sid) is None, "no edit, no document"
    assert "Session memory unchanged" in memory_notes(engine, sid)[0]


EXTRACT_SAVES = [
    Turn(tool_uses=[
        ToolUse(name="Read", input={"file_path": "calc.py"}),
        ToolUse(name="Edit", input={"file_path": "calc.py", "old_string": "a - b", "new_string": "a * b"}),
        ToolUse(name="Bash", input={"command": "echo hi > notes.txt"}),
        ToolUse(name="Bash", input={"command": "git log --oneline | head -3"}),
        ToolUse(name="MemoryWrite", input={"name": "user-role", "type": "user",
                                           "description": "The user is a data scientist new to Python packaging",
                                           "body": "Explain packaging steps in detail."}),
        ToolUse(name="MemoryWrite", input={"name": "no-mocks", "type": "feedback",
                                           "description": "Integration tests must hit a real database",
                                           "body": "Why: mocks hid a broken migration.\nHow: use the test DB."}),
    ]),
    Turn(text="Saved two memories."),
]


def test_a_final_answer_extracts_records_that_the_next_session_starts_with(engine, ws):
    model = scripted_model(Script(turns=[Turn(text="Noted.")], extract=EXTRACT_SAVES))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "I'm a data scientist; never mock the database in tests"))
    inline.run(1)
    (ext,) = inline.queue
    assert ext.kind is StepKind.EXTRACT and ext.queue == "memory"
    assert engine.store.get_session(rec.id).state is State.EXTRACTING
    inline.drain()
    assert states(engine, rec.id)[-2:] == [("answered", State.EXTRACTING), ("extracted", State.IDLE)]
    mem = ProjectMemory(engine.store.r, engine.store.get_session(rec.id).project_id)
    got = {r.name: r.type for r in mem.records()}
    assert got == {"user-role": "user", "no-mocks": "feedback"}
    assert (ws / "calc.py").read_text() == DEMO_FILES["calc.py"], "the fork's Edit was denied"
    assert not (ws / "notes.txt").exists(), "a writing command was denied"
    results = api_of(model).fork_requests("extract")[1]["messages"][-1]["content"]
    assert not results[0].get("is_error") and "def add" in results[0]["content"]
    assert results[1]["is_error"] and "Edit of calc.py is not allowed" in results[1]["content"]
    assert "write only memory records" in results[1]["content"]
    assert results[2]["is_error"] and "may only read" in results[2]["content"]
    assert not results[3].get("is_error"), results[3]
    assert "saved 2 memories" in memory_notes(engine, rec.id)[-1]

    # The next session of the project starts with the index; the records are read on demand.
    model2 = scripted_model(Script(turns=[
        Turn(tool_uses=[ToolUse(name="MemoryRead", input={"name": "no-mocks"})]), Turn(text="ok")]))
    rec2 = engine.create_session(str(ws), SessionOptions(model=model2, permission_mode="default"))
    inline.dispatch(engine.submit(rec2.id, "write the tests"))
    inline.drain()
    first = api_of(model2).requests[0]
    text = json.dumps(first["messages"][0])
    assert "# autoMemory" in text and "[no-mocks](no-mocks.md) (feedback): Integration tests must hit" in text
    assert {"MemoryRead", "MemoryWrite", "MemoryDelete"} <= {t["name"] for t in first["tools"]}
    read = api_of(model2).requests[1]["messages"][-1]["content"][0]
    assert "Why: mocks hid a broken migration." in read["content"] and not read.get("is_error")


def test_a_direct_write_by_the_main_agent_skips_the_extraction(engine, ws):
    sid, model = run_session(engine, ws, Script(turns=[
        Turn(tool_uses=[ToolUse(name="MemoryWrite", input={
            "name": "deploy-freeze", "type": "project", "description": "No deploys before the 1 Dec release",
            "body": "Release branch is cut on Nov 28."})]),
        Turn(text="I'll remember that."),
    ]), "remember: no deploys before the release", mode="default")
    rec = engine.store.get_session(sid)
    assert not [s for s in engine.store.steps(rec.id) if s.kind is StepKind.EXTRACT]
    assert api_of(model).fork_requests("extract") == []
    assert "extraction is skipped" in memory_notes(engine, rec.id)[-1]
    assert rec.extract_cursor == engine.store.entries(rec.id)[-1].uuid or rec.state is State.IDLE
    assert ProjectMemory(engine.store.r, rec.project_id).get("deploy-freeze").type == "project"
    assert states(engine, rec.id)[-2:] == [("answered", State.EXTRACTING), ("extracted", State.IDLE)]


def test_three_quick_turns_give_one_trailing_extraction_not_three(engine, ws):
    import threading

    from workflows.steps.run import run_step

    release = threading.Event()
    extracting = threading.Event()

    def main(body):
        return Turn(text="answer " + body["messages"][-1]["content"][-1]["text"])

    def extract(body):  # the first extraction is slow: turns end while it runs
        extracting.set()
        release.wait(10)
        return Turn(text="Nothing to save.")

    main.extract = extract
    model = scripted_model(main)
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "first"))
    inline.run(1)
    (ext1,) = inline.queue
    inline.queue.clear()
    later: list = []
    worker = threading.Thread(target=run_step, args=(engine, rec.id, ext1.id, later.extend))
    worker.start()
    assert extracting.wait(10)
    for prompt in ("second", "third"):  # each arrives while the session waits in `extracting`: runs at once
        inline.dispatch(engine.submit(rec.id, prompt))
        inline.drain()
        assert engine.store.get_session(rec.id).extract_trailing
    assert engine.store.get_session(rec.id).state is State.EXTRACTING
    assert len([s for s in engine.store.steps(rec.id) if s.kind is StepKind.EXTRACT]) == 1, "never two at once"
    release.set()
    worker.join(10)
    (trailing,) = later
    assert trailing.kind is StepKind.EXTRACT
    inline.dispatch(later)
    inline.drain()
    extract_steps = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.EXTRACT]
    assert len(extract_steps) == 2, "the first, then one trailing run over the latest turns"
    calls = api_of(model).fork_requests("extract")
    assert len(calls) == 2
    assert "User: first" in calls[0]["messages"][0]["content"][0]["text"]
    text = calls[1]["messages"][0]["content"][0]["text"]
    assert "User: second" in text and "User: third" in text and "User: first" not in text
    rec = engine.store.get_session(rec.id)
    assert rec.state is State.IDLE and not rec.extract_trailing and rec.extract_step is None


def test_no_memory_sessions_neither_extract_nor_load_nor_offer_memory_tools(engine, ws):
    ProjectMemory.for_workspace(engine.store.r, str(ws)).put(make_record("x", "a fact", "user", "body"))
    sid, model = run_session(engine, ws, Script(turns=[Turn(text="ok")]), "hi", auto_memory=False)
    assert states(engine, sid)[-1] == ("answered", State.IDLE)
    body = api_of(model).requests[0]
    assert "autoMemory" not in json.dumps(body) and "MemoryWrite" not in {t["name"] for t in body["tools"]}


@pytest.mark.parametrize("action", ["cancel", "compact"])
def test_cancel_or_compact_while_extracting_does_not_wait_for_the_extraction(engine, ws, action):
    model = scripted_model(Script(turns=[Turn(text="ok")], extract=EXTRACT_SAVES))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "I'm a data scientist"))
    inline.run(1)
    assert engine.store.get_session(rec.id).state is State.EXTRACTING
    if action == "cancel":
        assert engine.cancel(rec.id) is True
        assert engine.store.get_session(rec.id).state is State.IDLE
    else:
        inline.dispatch(engine.compact(rec.id))
        assert engine.store.get_session(rec.id).state is State.COMPACTING
    inline.drain()
    rec = engine.store.get_session(rec.id)
    assert rec.state is State.IDLE and rec.extract_step is None
    assert len(ProjectMemory(engine.store.r, rec.project_id).records()) == 2


def test_a_failed_extraction_warns_and_releases_the_session(engine, ws):
    from demo.scripted import ScriptError

    sid, _ = run_session(engine, ws, Script(
        turns=[Turn(text="ok")], extract=[Turn(text="x", errors=[ScriptError(status=400, message="bad request")])]),
        "hi", mode="default")
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and rec.extract_step is None
    warn = [e.content for e in engine.store.entries(rec.id) if isinstance(e, SystemEntry) and e.subtype == "warning"]
    assert warn and warn[-1].startswith("Memory extraction failed:") and "bad request" in warn[-1]


def test_compaction_from_notes_keeps_what_they_do_not_cover_yet(engine, ws):
    engine.settings.session_memory_init_tokens = 100
    engine.settings.session_memory_update_tokens = 100
    engine.settings.autocompact_pct_override = 50
    (ws / "late.txt").write_text("LATE-RESULT-42\n")

    def main(body):
        text = json.dumps(body["messages"])
        if "LATE-RESULT-42" in text:
            return Turn(text="second answer", usage=big(1_000))
        if "now read late.txt" in text:
            return Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "late.txt"})], usage=big(190_000))
        return Turn(text="first answer", usage=big(20_000))

    sid, model = run_session(engine, ws, main, "remember the plan")
    assert engine.store.get_session(sid).memory_covers
    engine.settings.session_memory = False  # the notes stay behind from here on
    inline = Inline(engine)
    inline.dispatch(engine.submit(sid, "now read late.txt"))
    inline.drain()
    (boundary,) = [e for e in engine.store.entries(sid) if isinstance(e, CompactBoundaryEntry)]
    assert boundary.source == "session_memory" and len(boundary.preserved) >= 3
    after = json.dumps(api_of(model).requests[-1]["messages"])
    notes_at = after.index("Working on: remember the plan")
    assert notes_at < after.index("now read late.txt") < after.index("LATE-RESULT-42")
    assert "first answer" not in after, "what the notes cover is gone from the view"
    assert not any("create a detailed summary" in json.dumps(b) for b in api_of(model).all_requests)


def test_the_kept_part_never_cuts_a_tool_call_from_its_result_and_has_a_limit(engine, ws):
    from workflows.compaction.run import kept_after_notes
    from workflows.models import AssistantEntry, UserEntry

    turns = [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]), Turn(text="done")]
    sid, _ = run_session(engine, ws, Script(turns=turns), "read it", auto_memory=False)
    entries = engine.store.entries(sid)
    call = next(e for e in entries if isinstance(e, AssistantEntry) and e.message.tool_uses())
    result = next(e for e in entries if isinstance(e, UserEntry) and e.origin == "tool_result")
    kept = kept_after_notes(entries, call.uuid)
    assert [e.uuid for e in kept][:2] == [call.uuid, result.uuid], "the call comes back with its result"
    assert kept_after_notes(entries, entries[-1].uuid) == []
    assert kept_after_notes(entries, "not-in-the-view") is None
    assert kept_after_notes(entries, call.uuid, max_tokens=5) is None, "too far behind: summary call instead"


def test_two_sessions_of_a_project_never_extract_at_once(engine, ws):
    import threading
    import time as _time

    from workflows.steps.run import run_step

    release, extracting = threading.Event(), threading.Event()

    def main(body):
        return Turn(text="ok")

    def extract(body):
        if "User: from A" in body["messages"][0]["content"][0]["text"]:
            extracting.set()
            release.wait(10)
        return Turn(text="Nothing to save.")

    main.extract = extract
    model = scripted_model(main)
    a = engine.create_session(str(ws), SessionOptions(model=model))
    b = engine.create_session(str(ws), SessionOptions(model=model))
    assert a.project_id == b.project_id
    inline = Inline(engine)
    inline.dispatch(engine.submit(a.id, "from A"))
    inline.run(1)
    (ext_a,) = inline.queue
    inline.queue.clear()
    worker = threading.Thread(target=run_step, args=(engine, a.id, ext_a.id, inline.dispatch))
    worker.start()
    assert extracting.wait(10)

    inline.dispatch(engine.submit(b.id, "from B"))
    inline.drain()  # B's model call, then its extraction: given back, not run
    (ext_b,) = [s for s in engine.store.steps(b.id) if s.kind is StepKind.EXTRACT]
    assert ext_b.status is StepStatus.PENDING and ext_b.attempt == 0 and "waiting for the project's" in ext_b.error
    assert engine.store.get_session(b.id).state is State.EXTRACTING
    assert len(api_of(model).fork_requests("extract")) == 1, "only A's extraction ran"

    release.set()
    worker.join(10)
    assert engine.store.get_session(a.id).state is State.IDLE
    inline.dispatch([s for s in engine.reap(now=_time.time() + 30) if s.session_id == b.id])
    inline.drain()
    assert engine.store.get_session(b.id).state is State.IDLE
    assert len(api_of(model).fork_requests("extract")) == 2
    assert engine.store.r.get(keys.project_extract_lock(a.project_id)) is None, "released after each commit"
