"""The engine: apply one event to a session and say what runs next.

:class:`Engine` composes parts, each a class a newcomer reads in one sitting, each handed the one
committer (and with it the store and settings) and the other parts it names in ``uses``
(:class:`workflows.commit.Part`). Every event is committed the same way: a part fills a public
transaction (:class:`workflows.commit.Tx`) and the committer writes it in one fenced script call
(:class:`workflows.commit.Committer`: read, apply, one atomic write checked by Redis itself).

Where each concern is committed (the engine's attribute, its class and module):

- ``committer``: the fenced commit, a step's outcome, claims remembered (:mod:`workflows.commit.committer`);
- ``sessions``: create, fork, change, end and remove sessions (:mod:`~workflows.engine.sessions`);
- ``prompts``: submit, compact, cancel, stop, clear the queue (:mod:`~workflows.engine.prompts`);
- ``ledger``: the step protocol's claim, heartbeat, and the reaper's take-backs (:mod:`~workflows.engine.ledger`);
- ``turns``: one turn of the agent loop: a run's start, the model's reply, the next call, the run's end
  (:mod:`~workflows.engine.turn`), and what a call costs (:mod:`~workflows.commit.charges`);
- ``tools``: a reply's tool calls: checked, batched, dispatched, their results (:mod:`~workflows.engine.tool_calls`);
- ``approvals``: asking a person and settling the answer (:mod:`~workflows.engine.approvals`);
- ``commands``: custom slash commands (their ``!`` lines and ``@`` files run first) (:mod:`~workflows.engine.commands`);
- ``compaction``: compaction's commit side (:mod:`~workflows.compaction.commits`; its run side is
  :mod:`workflows.compaction.run`);
- ``forks``: memory forks' commit side (:mod:`~workflows.forks.commits`; run side :mod:`workflows.forks.run`);
- ``subagents``: Task calls as child sessions, and their answers coming back (:mod:`~workflows.engine.subagents`);
- ``titles``: a session's title step (:mod:`~workflows.engine.titles`; run side :mod:`workflows.titles`);
- ``rewinding``: ``/rewind`` of the conversation, the code, or both (:mod:`~workflows.engine.rewinding`);
- ``hooks``: hooks' outcomes (:mod:`workflows.hooks.commits`, :mod:`workflows.hooks.lifecycle`);
- ``mcp``: finding a session's MCP servers and their tools before its prompt (:mod:`workflows.mcp.commits`).

The verbs that front doors, tasks and workers call stay callable on the engine (``engine.submit(...)`` is
``engine.prompts.submit(...)``); inside the engine, a part calls the part that owns what it needs.
The engine never imports ``tasks/``: it returns the steps to dispatch.
"""

from workflows.commit import Committer, Tx  # noqa: F401  (Tx: the engine's transaction type)
from workflows.commit.support import (  # noqa: F401  (the engine's public names)
    INTERRUPTED,
    QUEUE_FOR_KIND,
    REJECTED,
    REJECTED_RESULT,
    STOPPED_WHILE_RUNNING,
    UNKNOWN_OUTCOME,
    Claim,
    Stopped,
    _git_branch,
    display_worker,
    find_request,
    require_idle,
)
from workflows.compaction.commits import Compacting
from workflows.context.claude_copy import ClaudeCopy
from workflows.engine.approvals import Approvals
from workflows.engine.commands import CommandRuns
from workflows.engine.ledger import StepLedger
from workflows.engine.prompts import PromptVerbs
from workflows.engine.rewinding import Rewinding
from workflows.engine.sessions import SessionVerbs
from workflows.engine.subagents import SubagentLogic
from workflows.engine.titles import TitleLogic
from workflows.engine.tool_calls import ToolCalls
from workflows.engine.turn import TurnLogic
from workflows.forks.commits import MemoryForks
from workflows.hooks.commits import HookCommits
from workflows.mcp.commits import McpCommits
from workflows.settings import Settings
from workflows.store.redis_store import Store


class _Verb:
    """An engine verb carried out by one of its parts: ``engine.submit`` is ``engine.prompts.submit``.

    On the class (``Engine.submit``) it is a plain function of the engine, so that a test or a bench can
    wrap it there."""

    def __init__(self, part: str) -> None:
        self.part = part

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, engine, owner=None):
        if engine is None:
            part, name = self.part, self.name

            def verb(engine, *args, **kwargs):
                return getattr(getattr(engine, part), name)(*args, **kwargs)

            verb.__name__ = verb.__qualname__ = name
            return verb
        return getattr(getattr(engine, self.part), self.name)


class Engine:
    """Applies events to sessions. Holds the store, the settings and its parts, no session state."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.committer = committer = Committer(store, settings, QUEUE_FOR_KIND)
        committer.copies.append(ClaudeCopy(store.cached_entries))
        self.sessions = SessionVerbs(committer)
        self.prompts = PromptVerbs(committer)
        self.ledger = StepLedger(committer)
        self.turns = TurnLogic(committer)
        self.tools = ToolCalls(committer)
        self.approvals = Approvals(committer)
        self.commands = CommandRuns(committer)
        self.compaction = Compacting(committer)
        self.forks = MemoryForks(committer)
        self.subagents = SubagentLogic(committer)
        self.titles = TitleLogic(committer)
        self.rewinding = Rewinding(committer)
        self.hooks = HookCommits(committer)
        self.mcp = McpCommits(committer)
        parts = {name: part for name, part in vars(self).items() if hasattr(part, "connect")}
        for part in parts.values():
            part.connect(parts)

    # ------------------------------------------------------------------ sessions and prompts (front doors)
    create_session = _Verb("sessions")
    fork_session = _Verb("sessions")
    set_model = _Verb("sessions")
    update_limits = _Verb("sessions")
    end_session = _Verb("sessions")
    delete_session = _Verb("sessions")
    submit = _Verb("prompts")
    compact = _Verb("prompts")
    cancel = _Verb("prompts")
    stop = _Verb("prompts")
    clear_queue = _Verb("prompts")
    context_size = _Verb("prompts")
    decide_request = _Verb("approvals")
    expire_approvals = _Verb("approvals")
    refresh_commands = _Verb("commands")
    rewind_points = _Verb("rewinding")
    rewind = _Verb("rewinding")
    add_agents = _Verb("subagents")
    add_hooks = _Verb("hooks")
    answer_client_hooks = _Verb("hooks")
    mark_session_start = _Verb("hooks")
    add_mcp_servers = _Verb("mcp")
    record_client_servers = _Verb("mcp")
    answer_client_mcp = _Verb("mcp")
    reset_mcp_server = _Verb("mcp")

    # ------------------------------------------------------------------ the step protocol (tasks, workers)
    claim = _Verb("ledger")
    heartbeat = _Verb("ledger")
    heartbeat_many = _Verb("ledger")
    extraction_lock = _Verb("ledger")
    defer_step = _Verb("ledger")
    fail_step = _Verb("ledger")
    reap = _Verb("ledger")
    take_back = _Verb("ledger")
    keep_next = _Verb("committer")
    take_kept = _Verb("committer")
    hold_of = _Verb("committer")

    # ------------------------------------------------------------------ step outcomes (workers)
    record_model_reply = _Verb("turns")
    record_tool_output = _Verb("tools")
    record_compaction = _Verb("compaction")
    record_compaction_failure = _Verb("compaction")
    save_fork_checkpoint = _Verb("forks")
    record_session_memory = _Verb("forks")
    record_extraction = _Verb("forks")
    record_fork_failure = _Verb("forks")
    record_title = _Verb("titles")
    deliver_report = _Verb("subagents")
    record_child_answer = _Verb("subagents")
    abandon_child_step = _Verb("subagents")
    parent_waits = _Verb("subagents")
    stop_children = _Verb("subagents")
    settle_pre_tool = _Verb("hooks")
    ask_client_hooks = _Verb("hooks")
    ask_client_event = _Verb("hooks")
    hold_tool_output = _Verb("hooks")
    settle_session_hook = _Verb("hooks")
    settle_background_hook = _Verb("hooks")
    settle_mcp_discovery = _Verb("mcp")
    ask_client_mcp = _Verb("mcp")
