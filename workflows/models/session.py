"""The session record, what opens a session (its options), and the sub-agent types it may start."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from statemachines import State
from workflows.models.base import _Model, now
from workflows.models.commands import CommandRun
from workflows.models.content import Usage
from workflows.models.hook_outcome import ClientHookRequest
from workflows.models.hooks import HookSet
from workflows.models.mcp import McpServer
from workflows.models.policy import PermissionMode, PermissionRequest, RequestStatus, RuleSet, RuleSpec, SandboxSettings
from workflows.models.steps import ToolCall, ToolCallStatus

#: What a model call was for, as usage and cost are broken down (``SessionRecord.usage_by_kind``).
COST_KINDS = {
    "main": "main loop",
    "compact": "compaction",
    "memory": "session memory",
    "extract": "memory extraction",
    "subagent": "sub-agents",
    "title": "session title",
    "web": "web fetch & search",  # WebFetch's small-model answer, WebSearch's search call  # child sessions' calls, rolled up when each reports (workflows.engine.subagents)
}


class AgentDefinition(_Model):
    """A sub-agent type the Task tool can start: Claude Code's agent file (``.claude/agents/NAME.md``:
    frontmatter ``name``, ``description``, ``tools``, ``model``; the body is its system prompt) or an
    ``--agents`` JSON entry."""

    name: str
    description: str
    prompt: str = ""  # its system prompt ("" for general-purpose: the session's own)
    tools: list[str] | None = None  # None: every tool the parent has (but Task)
    disallowed_tools: list[str] = Field(default_factory=list)
    model: str | None = None  # None or "inherit": the parent's model
    source: str = "built-in"  # built-in, project, user, flag (a file's path where it came from a file)


class OutputStyle(_Model):
    """An output style (Claude Code's ``outputStyle``: :mod:`workflows.styles`): its prompt joins the system
    prompt under ``# Output Style: NAME``."""

    name: str
    description: str = ""
    prompt: str = ""
    keep_coding_instructions: bool = False  # read, as Claude Code reads it; 2.1.332's prompt is the same either way
    source: str = "built-in"  # built-in, userSettings, projectSettings, plugin


class Plugin(_Model):
    """A plugin a session loaded (``--plugin-dir``, the SDK's ``plugins``: :mod:`workflows.plugins`)."""

    name: str
    path: str
    version: str | None = None
    description: str = ""


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("a path cannot hold a NUL byte (\\x00): no file name has one")
    return value


#: A path a client gives (the API's workspaces and added directories): text without a NUL byte, which
#: the operating system refuses in any path (refused here, with the field named, before the disk is asked).
PathText = Annotated[str, AfterValidator(_no_nul), Field(json_schema_extra={"pattern": "^[^\\x00]*$"})]


class StructuredRun(_Model):
    """A run's structured output (``--json-schema``: workflows/tools/structured.py): the object the model gave
    through StructuredOutput, its rejected calls, and whether it was told once to call the tool."""

    output: dict[str, Any] | None = None  # the valid object (the run then ends)
    failures: int = 0  # calls whose input did not match the schema
    last_error: str = ""  # the last such call's error
    enforced: bool = False  # the model ended without calling it and was told to call it (once a run)


class SessionRecord(_Model):
    # The first three fields lead the record's JSON, in this order: the server-side scripts of the step
    # protocol (workflows/store/fenced.py) read them from the JSON's first bytes, without decoding the rest.
    revision: int = 0  # +1 at every commit; a commit made on an older revision is refused (optimistic)
    commit: str = ""  # the token of the commit that wrote this revision (a re-sent commit is recognised)
    epoch: int = 0  # +1 at every cancel: steps of an older epoch are superseded
    id: str
    state: State = State.IDLE
    model: str
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    workspace: str
    git_branch: str | None = None
    title: str = ""
    title_step: str | None = None  # the title step asked for after the first turn (asked once: workflows.titles)
    tools_queue: str = "tools"
    max_turns: int | None = None
    rules: RuleSet = Field(default_factory=RuleSet)  # settings files + flags at start, plus "always" answers
    home: str = ""  # the submitting user's home, for ~/ in rules
    # Claude Code's copy of the transcript (workflows/context/claude_copy.py): its file on the machine named
    # ``claude_host`` (the front door's that made the session); "": none is written.
    claude_transcript: str = ""
    claude_host: str = ""
    approval_timeout_seconds: float | None = None
    #: Who answers a call that would ask: "wait" for a person (a durable request, answered at a
    #: terminal, by `mainsail approve` or by an SDK client's can_use_tool); "deny": nobody (print mode
    #: without a permission prompt tool, as Claude Code's -p): denied at once and listed in the result.
    asks: Literal["wait", "deny"] = "wait"
    #: A client shows every event of each reply as it streams (Claude Code's --include-partial-messages): the
    #: model step publishes the raw Messages API events on the live stream, not just the text deltas.
    stream_events: bool = False
    #: The tools offered to the model (Claude Code's --tools); None: every tool the session may have.
    tools: list[str] | None = None
    #: The JSON Schema of the output the model must give through StructuredOutput (--json-schema); None: no
    #: structured output. ``structured``: the current run's.
    json_schema: dict[str, Any] | None = None
    structured: StructuredRun = Field(default_factory=StructuredRun)
    #: The model's task list (TodoWrite), as last sent: dicts with content, status, activeForm.
    todos: list[dict[str, Any]] = Field(default_factory=list)
    permission_requests: list[PermissionRequest] = Field(default_factory=list)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)  # how its Bash commands are confined
    hooks: HookSet = Field(default_factory=HookSet)  # settings files' hooks at start, plus added ones
    # MCP servers (workflows/mcp), from the configuration at start (a resume's --mcp-config adds): each one's
    # config, status and tool names. The tool definitions are at session:{sid}:mcp:{mcp_tools_digest}.
    mcp_servers: list[McpServer] = Field(default_factory=list)
    mcp_tools_digest: str | None = None
    # Directories outside the workspace that count as inside it (--add-dir, permissions.additionalDirectories),
    # resolved physically when the session started.
    additional_directories: list[str] = Field(default_factory=list)
    # The client's environment (scrubbed), then the settings files' ``env`` over it: set for the session's tool
    # processes (reserved names never get here: workflows.sessions.client_env).
    env: dict[str, str] = Field(default_factory=dict)
    # The client's ANTHROPIC_BASE_URL / ANTHROPIC_CUSTOM_HEADERS (workflows.sessions.client_env): its model calls'.
    model_env: dict[str, str] = Field(default_factory=dict)
    # ANTHROPIC_DEFAULT_{OPUS,SONNET,HAIKU}_MODEL captured at start: what the aliases stand for.
    model_overrides: dict[str, str] = Field(default_factory=dict)
    fallback_model: str | None = None  # retried once with this when the model is overloaded (529)
    # The settings files (and --settings layers) that set permissions.disableBypassPermissionsMode when it
    # started: bypassPermissions stays refused for its life (workflows/permissions/bypass.py).
    bypass_disabled_by: list[str] = Field(default_factory=list)
    # The workspace was not trusted when it started (workflows/trust): its own settings that run code or widen
    # access were left out, and so are a project command file's allowed-tools (workflows/engine/commands.py).
    untrusted_workspace: bool = False
    unpriced_models: list[str] = Field(default_factory=list)  # models without a price, warned about once
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    # When its score in the ``sessions`` listing was last set: the steps of a running turn set it at most
    # every few seconds (workflows/commit/committer.py), not at each commit.
    listed_at: float = 0.0

    usage: Usage = Field(default_factory=Usage)
    usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    cost_by_model: dict[str, float | None] = Field(default_factory=dict)
    # Per kind of call (:data:`COST_KINDS`); sessions older than this field have none for earlier calls.
    usage_by_kind: dict[str, Usage] = Field(default_factory=dict)
    cost_by_kind: dict[str, float | None] = Field(default_factory=dict)
    # Every cost figure is None (unknown) once it holds a call of a model without a price.
    cost_usd: float | None = 0.0
    max_budget_usd: float | None = None
    # The API token that started it ("": a person at the server's machine): its costs count against the token's
    # budget, and its notifications go to the token's subscriptions (workflows/costs, workflows/notify).
    token: str = ""
    # Why its last prompt was refused (a spent budget: workflows/costs/budgets.py); None once a turn starts.
    budget_stop: str | None = None
    forked_from: str | None = None
    # Sub-agents (workflows.engine.subagents): the types the Task tool offers, snapshotted at the start
    # (every worker sees the same); a child session's link to the parent's Task call; a parent's children.
    agents: dict[str, AgentDefinition] = Field(default_factory=dict)
    parent_session_id: str | None = None
    parent_tool_use_id: str | None = None
    parent_step_id: str | None = None
    agent_type: str | None = None
    children: list[str] = Field(default_factory=list)
    final_result: str | None = None  # a child's last run's result text, for its report
    final_is_error: bool = False
    final_subtype: str | None = None  # its result's subtype (a background agent's status)
    # Background agents (Agent run_in_background; workflows.engine.background): a child launched so; a parent's
    # live ones (child id -> its task_started notice), and how many notifications it was sent (print mode waits).
    background_agent: bool = False
    background_tasks: dict[str, dict] = Field(default_factory=dict)
    notifications: int = 0
    # Running totals of the sub-agents started (the result line's subagent_stats: workflows.engine.agent_stats)
    subagent_stats: dict[str, Any] = Field(default_factory=dict)

    # Context, computed once at the start so every worker sends the same bytes (the prompt cache holds).
    system_context: str = ""
    user_context: str = ""
    # The reminder that lists the session's skills to the model (workflows.tools.skill.skill_listing); "": none,
    # and no Skill tool. Read from the files when the session is opened (engine.commands.refresh_commands).
    skill_listing: str = ""
    custom_system_prompt: str | None = None
    append_system_prompt: str | None = None
    output_style: OutputStyle | None = None  # None: the default style (workflows.styles)
    plugins: list[Plugin] = Field(default_factory=list)  # its plugins, in the order given

    # Token accounting and compaction.
    context_tokens: int = 0  # the last response's input (+ cache) and output tokens
    context_added: int = 0  # estimated tokens added since that response
    run_prompt_uuid: str | None = None
    # What started the run, when not a person: the result line's origin (workflows.engine.background.origin)
    run_origin: dict[str, Any] | None = None
    #: Keys of the last messages submitted with one (``Engine.submit(once=...)``, e.g. a schedule's run):
    #: the same key again submits nothing, so a retried sender cannot send twice.
    submit_keys: list[str] = Field(default_factory=list)
    compact_failures: int = 0
    auto_compact_off: bool = False  # the circuit breaker tripped
    compact_trigger: str | None = None  # "auto" | "manual" while compacting
    compact_instructions: str | None = None
    api_ms: int = 0
    turns: int = 0  # model calls over the session's life

    # The current run: from a submit until the session is idle again.
    run_started_at: float = 0.0
    run_turns: int = 0
    run_api_ms: int = 0
    run_usage: Usage = Field(default_factory=Usage)  # main loop: model turns and compactions
    run_cost_usd: float | None = 0.0
    run_usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    run_cost_by_model: dict[str, float | None] = Field(default_factory=dict)
    # Memory forks that finished since the run started (still counting after its result, until the next run).
    run_memory_usage: Usage = Field(default_factory=Usage)
    run_memory_cost_usd: float | None = 0.0
    tool_calls: list[ToolCall] = Field(default_factory=list)
    current_batch: int = 0

    run_denials: list[dict[str, Any]] = Field(default_factory=list)
    last_uuid: str | None = None  # newest transcript entry, the parent of the next
    run_wrote_memory: bool = False  # the main agent saved a memory record in this run
    # Session-level hooks (workflows/hooks/session_hooks.py).
    held_prompt: str | None = None  # the run's prompt, held until its UserPromptSubmit verdict
    client_hooks: list[ClientHookRequest] = Field(default_factory=list)  # the SDK client's callbacks asked
    prompt_checked: bool = False  # the held prompt's UserPromptSubmit hooks have answered
    session_started: bool = False  # SessionStart (source ``start_source``) has run
    start_source: str = "startup"  # the next SessionStart's source: startup, resume, clear or compact
    stop_hook_active: bool = False  # a Stop hook blocked in this run: the next Stop is told so
    run_stop_blocks: int = 0  # Stop blocks in this run (capped: workflows.hooks.session_hooks)
    # A custom slash command (workflows.engine.commands): the one whose lines run before its prompt, and
    # what its frontmatter gives the run it starts (cleared when that run ends).
    command: CommandRun | None = None
    run_model: str | None = None  # the command's ``model``: the run's calls send it
    run_allow: list[RuleSpec] = Field(default_factory=list)  # the command's ``allowed-tools``

    # Session memory: the running summary kept by a background fork.
    memory_step: str | None = None  # the update running now (at most one: this is its lock)
    memory_trailing: bool = False  # another update was asked for while it ran
    memory_tokens: int | None = None  # context size when the last update was asked for
    memory_tool_calls: int = 0  # tool calls since then
    memory_updates: int = 0
    memory_covers: str | None = None  # newest entry the memory document has seen

    # Auto-memory: durable records per project, extracted after a final answer.
    auto_memory: bool = True
    project_id: str | None = None
    project_root: str | None = None
    extract_step: str | None = None  # the extraction running now (never two at once)
    extract_trailing: bool = False  # a later turn ended while it ran: one more run, over the latest
    extract_cursor: str | None = None  # newest entry an extraction (or a direct write) covered
    last_error: str | None = None

    def model_context(self) -> str:
        """What leads the first user message the model gets: the user context, then the skills' listing."""
        return f"{self.user_context}\n{self.skill_listing}" if self.skill_listing else self.user_context

    def sent_model(self, name: str | None = None) -> str:
        """The model id the next call sends for ``name`` (default: the run's model, a custom command's, else the
        session's): aliases resolved, ``opusplan`` by the current permission mode."""
        from workflows.models.model_names import resolve_model

        return resolve_model(name or self.run_model or self.model, plan=self.permission_mode is PermissionMode.PLAN,
                             overrides=self.model_overrides)

    def pending_tool_calls(self) -> list[ToolCall]:
        return [c for c in self.tool_calls if c.status is not ToolCallStatus.DONE]

    def pending_requests(self) -> list[PermissionRequest]:
        return [r for r in self.permission_requests if r.status is RequestStatus.PENDING]

    def saving_memory(self) -> bool:
        """A memory fork (session-memory update or extraction) is running for this session."""
        return bool(self.memory_step or self.extract_step)

    def memory_pending(self) -> bool:
        """The memory of the work done is not committed yet: the extraction after a final answer runs
        (``extracting``), or a memory fork (extraction or session-memory update) has a step. The one
        test of it: the CLI waits for memory (``wait_for_memory``), and the API's ``until_idle`` ends
        a stream, only once this is False."""
        return self.state is State.EXTRACTING or self.saving_memory()
