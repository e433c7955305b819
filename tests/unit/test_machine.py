"""The session state machine: every legal transition, every illegal one, guards, diagram, CLI."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest
from transitions import Machine, MachineError

import statemachines
from statemachines import (
    BUSY_STATES,
    TRANSITIONS,
    TRIGGERS,
    InvalidTransition,
    Snapshot,
    State,
    allowed_triggers,
    mermaid,
    next_state,
)
from statemachines import session as session_mod

ROOT = Path(__file__).resolve().parents[2]

#: Every snapshot the guards can tell apart.
SNAPSHOTS = [
    Snapshot(auto_memory=a, manual_compaction=m, permissions_pending=p)
    for a, m, p in itertools.product((False, True), (False, True), (0, 1, 3))
]


def _sources(t: dict) -> list[State]:
    return list(t["source"]) if isinstance(t["source"], list) else [t["source"]]


def _passes(t: dict, snap: Snapshot) -> bool:
    return all(cond(snap) for cond in t.get("conditions", []))


def _snapshot_for(index: int, source: State) -> Snapshot | None:
    """A snapshot under which transition ``index`` is the one taken from ``source``.

    Its guards pass, and every earlier transition with the same trigger and source
    (which would win, being first) is refused.
    """
    t = TRANSITIONS[index]
    earlier = [
        e for e in TRANSITIONS[:index] if e["trigger"] == t["trigger"] and source in _sources(e)
    ]
    for snap in SNAPSHOTS:
        if _passes(t, snap) and not any(_passes(e, snap) for e in earlier):
            return snap
    return None


LEGAL = [
    pytest.param(i, src, id=f"{src.value}-{t['trigger']}->{State(t['dest']).value}")
    for i, t in enumerate(TRANSITIONS)
    for src in _sources(t)
]

LEGAL_PAIRS = {(src, t["trigger"]) for t in TRANSITIONS for src in _sources(t)}

ILLEGAL = [
    pytest.param(state, trig, id=f"{state.value}-{trig}")
    for state in State
    for trig in TRIGGERS
    if (state, trig) not in LEGAL_PAIRS
]


# --------------------------------------------------------------------------- states


def test_states_are_exactly_the_six_lowercase_values():
    assert [s.value for s in State] == [
        "idle",
        "querying",
        "running_tools",
        "awaiting_permission",
        "compacting",
        "extracting",
    ]
    for s in State:
        assert s.value == s.name.lower()
        assert State(s.value) is s


def test_busy_states_are_every_state_but_idle():
    assert set(BUSY_STATES) == set(State) - {State.IDLE}
    assert State.IDLE not in BUSY_STATES


def test_triggers_are_unique_and_cover_the_table():
    assert len(TRIGGERS) == len(set(TRIGGERS))
    assert set(TRIGGERS) == {t["trigger"] for t in TRANSITIONS}
    assert TRIGGERS[0] == "submit"


def test_every_transition_is_between_known_states():
    for t in TRANSITIONS:
        assert State(t["dest"]) in State
        for src in _sources(t):
            assert State(src) in State


def test_the_table_has_illegal_pairs_to_test():
    # Guard against the parametrization silently collapsing to nothing.
    assert len(LEGAL) >= len(TRANSITIONS)
    assert len(ILLEGAL) > 20


# --------------------------------------------------------------------------- legal transitions


@pytest.mark.parametrize(("index", "source"), LEGAL)
def test_every_legal_transition(index, source):
    t = TRANSITIONS[index]
    snap = _snapshot_for(index, source)
    assert snap is not None, f"transition {t} is shadowed by an earlier one: it can never be taken"
    assert next_state(source, t["trigger"], snap) is State(t["dest"])
    # The stored (string) form of the state works too.
    assert next_state(source.value, t["trigger"], snap) is State(t["dest"])


def test_unguarded_transitions_need_no_snapshot():
    assert next_state(State.IDLE, "submit") is State.QUERYING
    assert next_state("querying", "tools_requested") is State.RUNNING_TOOLS
    assert next_state(State.EXTRACTING, "extracted") is State.IDLE


@pytest.mark.parametrize("state", BUSY_STATES, ids=lambda s: s.value)
@pytest.mark.parametrize("trigger", ["fail", "halt", "cancel"])
def test_fail_halt_cancel_go_idle_from_every_busy_state(state, trigger):
    assert next_state(state, trigger) is State.IDLE


@pytest.mark.parametrize("trigger", ["fail", "halt", "cancel"])
def test_fail_halt_cancel_are_illegal_when_idle(trigger):
    with pytest.raises(InvalidTransition):
        next_state(State.IDLE, trigger)


# --------------------------------------------------------------------------- guards


@pytest.mark.parametrize(
    ("manual", "dest"), [(True, State.IDLE), (False, State.QUERYING)], ids=["manual", "auto"]
)
def test_compacted_manual_returns_idle_auto_resumes_query(manual, dest):
    for auto_memory in (False, True):
        snap = Snapshot(manual_compaction=manual, auto_memory=auto_memory)
        assert next_state(State.COMPACTING, "compacted", snap) is dest


def test_compacted_default_snapshot_is_automatic():
    assert next_state(State.COMPACTING, "compacted") is State.QUERYING


@pytest.mark.parametrize(
    ("auto_memory", "dest"), [(True, State.EXTRACTING), (False, State.IDLE)], ids=["memory-on", "memory-off"]
)
def test_answered_extracts_only_with_auto_memory(auto_memory, dest):
    for manual in (False, True):
        snap = Snapshot(auto_memory=auto_memory, manual_compaction=manual)
        assert next_state(State.QUERYING, "answered", snap) is dest


@pytest.mark.parametrize(
    ("pending", "dest"),
    [(0, State.RUNNING_TOOLS), (1, State.AWAITING_PERMISSION), (5, State.AWAITING_PERMISSION)],
)
def test_permission_decided_waits_for_every_decision(pending, dest):
    snap = Snapshot(permissions_pending=pending)
    assert next_state(State.AWAITING_PERMISSION, "permission_decided", snap) is dest


def test_guard_functions_are_pure_and_complementary():
    for snap in SNAPSHOTS:
        assert session_mod.auto_memory_enabled(snap) != session_mod.auto_memory_disabled(snap)
        assert session_mod.is_manual_compaction(snap) != session_mod.is_auto_compaction(snap)
        assert session_mod.all_permissions_decided(snap) == (snap.permissions_pending == 0)


def test_a_guard_that_refuses_every_candidate_raises(monkeypatch):
    """With only the manual branch of ``compacted``, an automatic compaction has nowhere to go."""
    only_manual = [t for t in TRANSITIONS if t["trigger"] == "compacted" and t["dest"] is State.IDLE]
    assert len(only_manual) == 1
    monkeypatch.setattr(session_mod, "_TABLE", session_mod.transition_table(only_manual))
    assert next_state(State.COMPACTING, "compacted", Snapshot(manual_compaction=True)) is State.IDLE
    with pytest.raises(InvalidTransition) as info:
        next_state(State.COMPACTING, "compacted", Snapshot(manual_compaction=False))
    assert info.value.state is State.COMPACTING
    assert info.value.trigger == "compacted"
    assert "guard refused" in str(info.value)


def _machine_answer(state: State, trigger: str, snap: Snapshot) -> State | str:
    """What a ``transitions`` Machine built from TRANSITIONS does: the dest, or how it refuses."""

    class Model:
        pass

    model = Model()
    Machine(model=model, states=State, transitions=TRANSITIONS, initial=state, auto_transitions=False,
            send_event=False)
    if not hasattr(model, trigger):
        return "unknown trigger"
    try:
        ok = getattr(model, trigger)(snap)
    except MachineError:
        return "illegal here"
    return State(model.state) if ok else "its guard refused"


def _table_answer(state: State, trigger: str, snap: Snapshot) -> State | str:
    try:
        return next_state(state, trigger, snap)
    except InvalidTransition as exc:
        msg = str(exc)
        return next((why for why in ("unknown trigger", "its guard refused") if why in msg), "illegal here")


@pytest.mark.parametrize("state", State, ids=lambda s: s.value)
def test_next_state_answers_as_a_transitions_machine_does(state):
    """The lookup table is the transitions library's semantics, for every state, trigger and snapshot."""
    for trigger, snap in itertools.product([*TRIGGERS, "no_such_trigger"], SNAPSHOTS):
        assert _table_answer(state, trigger, snap) == _machine_answer(state, trigger, snap), (trigger, snap)


def test_next_state_builds_no_machine(monkeypatch):
    """State-machine objects are built once per process, not per event."""

    def refuse(*a, **kw):
        raise AssertionError("a Machine was built or changed for one event")

    monkeypatch.setattr(Machine, "__init__", refuse)
    monkeypatch.setattr(Machine, "add_model", refuse)
    assert next_state(State.IDLE, "submit") is State.QUERYING
    with pytest.raises(InvalidTransition):
        next_state(State.IDLE, "extracted")


# --------------------------------------------------------------------------- illegal transitions


@pytest.mark.parametrize(("state", "trigger"), ILLEGAL)
def test_every_illegal_pair_raises(state, trigger):
    expected_allowed = [t["trigger"] for t in TRANSITIONS if state in _sources(t)]
    expected_allowed = list(dict.fromkeys(expected_allowed))
    for snap in (Snapshot(), Snapshot(auto_memory=True, manual_compaction=True, permissions_pending=2)):
        with pytest.raises(InvalidTransition) as info:
            next_state(state, trigger, snap)
        err = info.value
        assert err.state is state
        assert err.trigger == trigger
        msg = str(err)
        assert state.value in msg
        assert repr(trigger) in msg
        allowed_part = msg.split("allowed here:", 1)[1]
        for trig in expected_allowed:
            assert trig in allowed_part
    assert allowed_triggers(state) == expected_allowed


def test_illegal_message_lists_allowed_triggers_exactly():
    with pytest.raises(InvalidTransition) as info:
        next_state(State.IDLE, "tools_finished")
    assert str(info.value) == "Cannot 'tools_finished' a session that is idle; allowed here: submit, compact"


@pytest.mark.parametrize("state", list(State), ids=lambda s: s.value)
def test_unknown_trigger_raises(state):
    with pytest.raises(InvalidTransition) as info:
        next_state(state, "launch_rockets")
    err = info.value
    assert err.state is state
    assert err.trigger == "launch_rockets"
    assert state.value in str(err)
    assert "unknown trigger" in str(err)
    for trig in allowed_triggers(state):
        assert trig in str(err)


def test_invalid_transition_accepts_state_strings():
    err = InvalidTransition("querying", "extracted")
    assert err.state is State.QUERYING
    assert "querying" in str(err)


def test_unknown_state_is_rejected():
    with pytest.raises(ValueError):
        next_state("sleeping", "submit")


def test_allowed_triggers_by_state():
    assert allowed_triggers(State.IDLE) == ["submit", "compact"]
    assert allowed_triggers("extracting") == ["extracted", "fail", "halt", "cancel"]
    assert set(allowed_triggers(State.AWAITING_PERMISSION)) == {"permission_decided", "fail", "halt", "cancel"}


# --------------------------------------------------------------------------- purity


def test_importing_statemachines_loads_neither_redis_nor_celery():
    code = "import statemachines, sys; assert 'redis' not in sys.modules and 'celery' not in sys.modules, sorted(m for m in sys.modules if m.split('.')[0] in ('redis', 'celery'))"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- diagram and CLI


def _edges(diagram: str) -> set[tuple[str, str, str]]:
    """(source, dest, trigger) for every labelled edge; mermaid groups labels with ``|``."""
    out = set()
    for line in diagram.splitlines():
        m = re.match(r"^\s*(\w+) --> (\w+): (.+)$", line)
        if not m:
            continue
        src, dst, labels = m.groups()
        for label in labels.split("|"):
            trig = label.strip().split(" [", 1)[0].strip()
            out.add((src, dst, trig))
    return out


def test_mermaid_has_every_transition():
    diagram = mermaid()
    assert "stateDiagram-v2" in diagram
    expected = {
        (src.name, State(t["dest"]).name, t["trigger"]) for t in TRANSITIONS for src in _sources(t)
    }
    assert _edges(diagram) == expected
    assert "QUERYING --> RUNNING_TOOLS: tools_requested" in diagram
    assert "IDLE --> QUERYING: submit" in diagram
    for state in State:
        assert state.name in diagram


def test_mermaid_starts_with_the_diagram_type():
    lines = [ln.strip() for ln in mermaid().splitlines() if ln.strip()]
    # A front-matter title block may precede it; the first non-front-matter line is the type.
    if lines[0] == "---":
        lines = lines[lines.index("---", 1) + 1 :]
    assert lines[0] == "stateDiagram-v2"


def test_cli_fsm_prints_the_diagram():
    from click.testing import CliRunner

    from cli.main import cli

    result = CliRunner().invoke(cli, ["fsm"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "stateDiagram-v2" in result.output
    assert "COMPACTING --> QUERYING: compacted" in result.output


def test_statemachines_exports():
    assert set(statemachines.__all__) >= {"State", "TRANSITIONS", "next_state", "InvalidTransition", "mermaid"}
