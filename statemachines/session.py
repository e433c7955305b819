"""The session state machine: states, transitions as data, pure guards.

A session is always in exactly one :class:`State`. Events (triggers) move it
between states; a trigger that is not legal in the current state raises
:class:`InvalidTransition`. Nothing here does I/O: the engine in
``workflows/`` loads a session, asks this module for the next state, and
persists it.

Guards are pure functions of a :class:`Snapshot`, the few facts about a
session that decide between two transitions sharing a trigger.

:data:`TRANSITIONS` is written in the form the ``transitions`` library takes
(:func:`mermaid` draws it with that library). :func:`next_state` answers from a
lookup table built once from the same data, with the library's semantics: the
first candidate whose guards all pass wins. Adding and removing a model on a
shared ``Machine`` for every event cost more than the answer, and was not safe
across threads; a test checks the table against a ``Machine`` for every state,
trigger and snapshot.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable


class State(str, enum.Enum):
    """Where a session is. Stored as its lowercase value."""

    IDLE = "idle"
    QUERYING = "querying"
    RUNNING_TOOLS = "running_tools"
    AWAITING_PERMISSION = "awaiting_permission"
    COMPACTING = "compacting"
    EXTRACTING = "extracting"


BUSY_STATES = tuple(s for s in State if s is not State.IDLE)


@dataclass(frozen=True)
class Snapshot:
    """The facts guards may look at. Built by the engine from the session record."""

    auto_memory: bool = False
    manual_compaction: bool = False
    permissions_pending: int = 0


# Guards: pure functions of a Snapshot.
def auto_memory_enabled(snap: Snapshot) -> bool:
    """A final answer goes through ``extracting`` only when auto-memory is on."""
    return snap.auto_memory


def auto_memory_disabled(snap: Snapshot) -> bool:
    return not snap.auto_memory


def is_manual_compaction(snap: Snapshot) -> bool:
    """A ``/compact`` from idle returns to idle; an automatic one resumes the query."""
    return snap.manual_compaction


def is_auto_compaction(snap: Snapshot) -> bool:
    return not snap.manual_compaction


def all_permissions_decided(snap: Snapshot) -> bool:
    return snap.permissions_pending == 0


S = State

#: The machine, as data. Order matters where two transitions share a trigger and
#: a source: the first whose guards pass wins.
TRANSITIONS: list[dict] = [
    {"trigger": "submit", "source": S.IDLE, "dest": S.QUERYING},
    {"trigger": "tools_requested", "source": S.QUERYING, "dest": S.RUNNING_TOOLS},
    {"trigger": "approval_needed", "source": S.QUERYING, "dest": S.AWAITING_PERMISSION},
    {"trigger": "approval_needed", "source": S.RUNNING_TOOLS, "dest": S.AWAITING_PERMISSION},
    {
        "trigger": "permission_decided",
        "source": S.AWAITING_PERMISSION,
        "dest": S.RUNNING_TOOLS,
        "conditions": [all_permissions_decided],
    },
    {
        "trigger": "permission_decided",
        "source": S.AWAITING_PERMISSION,
        "dest": S.AWAITING_PERMISSION,
    },
    {"trigger": "tools_finished", "source": S.RUNNING_TOOLS, "dest": S.QUERYING},
    {"trigger": "compaction_needed", "source": S.QUERYING, "dest": S.COMPACTING},
    {"trigger": "compact", "source": S.IDLE, "dest": S.COMPACTING},
    {
        "trigger": "compacted",
        "source": S.COMPACTING,
        "dest": S.IDLE,
        "conditions": [is_manual_compaction],
    },
    {
        "trigger": "compacted",
        "source": S.COMPACTING,
        "dest": S.QUERYING,
        "conditions": [is_auto_compaction],
    },
    {
        "trigger": "answered",
        "source": S.QUERYING,
        "dest": S.EXTRACTING,
        "conditions": [auto_memory_enabled],
    },
    {
        "trigger": "answered",
        "source": S.QUERYING,
        "dest": S.IDLE,
        "conditions": [auto_memory_disabled],
    },
    {"trigger": "extracted", "source": S.EXTRACTING, "dest": S.IDLE},
    # A step failed for good (attempts exhausted, API error): record it, stop the turn.
    {"trigger": "fail", "source": list(BUSY_STATES), "dest": S.IDLE},
    # A limit (max turns, budget) stopped the turn cleanly.
    {"trigger": "halt", "source": list(BUSY_STATES), "dest": S.IDLE},
    {"trigger": "cancel", "source": list(BUSY_STATES), "dest": S.IDLE},
]

TRIGGERS: tuple[str, ...] = tuple(dict.fromkeys(t["trigger"] for t in TRANSITIONS))


class InvalidTransition(Exception):
    """A trigger was fired in a state that does not allow it.

    Attributes:
        state: the state the session was in.
        trigger: the event that was refused.
    """

    def __init__(self, state: State | str, trigger: str, detail: str = "") -> None:
        self.state = State(state)
        self.trigger = trigger
        allowed = ", ".join(allowed_triggers(self.state)) or "none"
        msg = f"Cannot {trigger!r} a session that is {self.state.value}; allowed here: {allowed}"
        super().__init__(msg + (f" ({detail})" if detail else ""))


Guard = Callable[[Snapshot], bool]
Table = dict[tuple[State, str], tuple[tuple[State, tuple[Guard, ...]], ...]]


def transition_table(transitions: list[dict]) -> Table:
    """``(source, trigger) -> ((dest, guards), ...)`` in the order of ``transitions``."""
    table: dict[tuple[State, str], list] = {}
    for t in transitions:
        sources = t["source"] if isinstance(t["source"], list) else [t["source"]]
        for source in sources:
            table.setdefault((State(source), t["trigger"]), []).append(
                (State(t["dest"]), tuple(t.get("conditions", ()))))
    return {key: tuple(candidates) for key, candidates in table.items()}


_TABLE: Table = transition_table(TRANSITIONS)


def next_state(state: State | str, trigger: str, snap: Snapshot | None = None) -> State:
    """Return the state that ``trigger`` leads to from ``state``.

    Raises:
        InvalidTransition: the trigger is unknown, not legal from ``state``, or
            every candidate transition's guard refused it.
    """
    state = State(state)
    if trigger not in TRIGGERS:
        raise InvalidTransition(state, trigger, "unknown trigger")
    candidates = _TABLE.get((state, trigger))
    if candidates is None:
        raise InvalidTransition(state, trigger)
    snap = snap or Snapshot()
    for dest, guards in candidates:
        if all(guard(snap) for guard in guards):
            return dest
    raise InvalidTransition(state, trigger, "its guard refused")


def allowed_triggers(state: State | str) -> list[str]:
    """Triggers with at least one transition from ``state`` (guards not evaluated)."""
    state = State(state)
    out = []
    for t in TRANSITIONS:
        sources = t["source"] if isinstance(t["source"], list) else [t["source"]]
        if state in sources and t["trigger"] not in out:
            out.append(t["trigger"])
    return out


def mermaid() -> str:
    """The machine as a mermaid ``stateDiagram-v2``, generated from :data:`TRANSITIONS`."""
    from transitions.extensions.diagrams import GraphMachine

    class Diagram:  # the model transitions draws; holds nothing but its state
        pass

    machine = GraphMachine(
        model=Diagram(),
        states=State,
        transitions=TRANSITIONS,
        initial=State.IDLE,
        auto_transitions=False,
        graph_engine="mermaid",
        show_conditions=True,
        title="Mainsail session",
    )
    return machine.get_graph().draw(None)
