"""Pure state-machine definitions. No Redis, no Celery, no I/O."""

from statemachines.session import (
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

__all__ = [
    "BUSY_STATES",
    "TRANSITIONS",
    "TRIGGERS",
    "InvalidTransition",
    "Snapshot",
    "State",
    "allowed_triggers",
    "mermaid",
    "next_state",
]
