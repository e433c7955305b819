"""The commit every event of a session goes through: one public transaction type and one committer.

- :class:`~workflows.commit.tx.Tx`: what one event changes (entries, steps, leases, memory writes);
- :class:`~workflows.commit.committer.Committer`: read, apply, one atomic write checked by Redis itself
  (the fenced script of :mod:`workflows.store.fenced`), and the claims this process remembers between a
  step's events;
- :class:`~workflows.commit.part.Part`: the base of the engine's parts (:mod:`workflows.engine`), which
  fill a ``Tx`` and hand it to the committer. The hooks' and MCP's parts (``workflows/hooks/commits.py``,
  ``workflows/mcp/commits.py``) import this package, never the engine;
- :mod:`~workflows.commit.peers`: what the parts call on each other, one Protocol per part.
"""

from workflows.commit.committer import (
    MAX_CONFLICTS,
    CommitConflict,
    Committer,
    retry_on_conflict,
    stale,
)
from workflows.commit.part import Part
from workflows.commit.tx import Tx

__all__ = ["MAX_CONFLICTS", "CommitConflict", "Committer", "Part", "Tx", "retry_on_conflict", "stale"]
