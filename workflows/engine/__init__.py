"""The engine: apply one event to a session and say what runs next.

:class:`Engine` is one object made of parts, each a module a newcomer reads in one sitting:

- :mod:`~workflows.engine.commit`: the fenced commit every event goes through (read, apply, one
  atomic write checked by Redis itself) and the helpers that fill a transaction;
- :mod:`~workflows.engine.sessions`: the human-paced verbs (create, submit, cancel, limits, remove);
- :mod:`~workflows.engine.ledger`: the step protocol's claim, heartbeat, and the reaper's take-backs;
- :mod:`~workflows.engine.turn`: one turn of the agent loop (reply, tool calls, next call, end);
- :mod:`~workflows.engine.approvals`: asking a person and settling the answer;
- :mod:`~workflows.engine.commands`: custom slash commands (their ``!`` lines and ``@`` files run first);
- :mod:`~workflows.engine.compacting` and :mod:`~workflows.engine.forks`: compaction and memory forks;
- :mod:`~workflows.engine.subagents`: Task calls as child sessions, and their answers coming back;
- :mod:`~workflows.engine.rewinding`: ``/rewind`` of the conversation, the code (file checkpoints), or both;
- :mod:`workflows.hooks.commits`: hooks' outcomes;
- :mod:`workflows.mcp.commits`: finding a session's MCP servers and their tools before its prompt.

The engine never imports ``tasks/``: it returns the steps to dispatch.
"""

from workflows.engine.approvals import Approvals
from workflows.engine.commands import CommandRuns
from workflows.engine.commit import CommitCore
from workflows.engine.compacting import Compacting
from workflows.engine.forks import MemoryForks
from workflows.engine.ledger import StepLedger
from workflows.engine.rewinding import Rewinding
from workflows.engine.sessions import SessionVerbs
from workflows.engine.subagents import SubagentLogic
from workflows.engine.support import (  # noqa: F401  (the engine's public names)
    INTERRUPTED,
    QUEUE_FOR_KIND,
    UNKNOWN_OUTCOME,
    Claim,
    Stopped,
    _git_branch,
    _Tx,
    display_worker,
    find_request,
    require_idle,
)
from workflows.engine.titles import TitleLogic
from workflows.engine.turn import TurnLogic
from workflows.hooks.commits import HookCommits
from workflows.mcp.commits import McpCommits


class Engine(SessionVerbs, StepLedger, TurnLogic, SubagentLogic, Approvals, CommandRuns, Compacting, MemoryForks,
             TitleLogic, HookCommits, McpCommits, Rewinding, CommitCore):
    """Applies events to sessions. Holds the store and settings, no session state."""
