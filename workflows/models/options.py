"""The options a session is opened with: one model every client builds and the session service resolves.

:class:`SessionOptions` is the one input object (Temporal's "single dataclass instead of many
parameters", the Agents SDK's ``RunConfig``): a front door fills it from its flags or request body,
:mod:`workflows.sessions.setup` resolves it once against ``MAINSAIL_*`` and the settings files, and
:meth:`workflows.engine.Engine.create_session` makes the session from it. Its base
:class:`RemoteOptions` is the part a remote client may give (the API's new sessions, a schedule's
sessions, stored with the schedule); the rest only a process at the workspace may set.
:class:`SessionSetup` is what the settings files add (rules, sandbox, hooks...), never given by a client.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from workflows.models import AgentDefinition, OutputStyle, PathText, PermissionMode, Plugin, RuleSet, SandboxSettings
from workflows.models.hooks import HookSet
from workflows.models.mcp import McpServer


class RemoteOptions(BaseModel):
    """The options any client may give a new session, as ``mainsail submit``'s flags: the API's new
    sessions and each session a schedule starts (stored with the schedule)."""

    model_config = ConfigDict(extra="forbid")

    permission_mode: PermissionMode | None = Field(
        default=None, description="The permission mode (None: MAINSAIL_PERMISSION_MODE, else the settings' "
                                  "defaultMode, else default).")
    model: str | None = Field(default=None, description="An alias or a model id (None: the configured model).")
    max_turns: int | None = Field(default=None, ge=1, description="Stop a run after this many model turns.")
    max_budget_usd: float | None = Field(default=None, gt=0, description="Stop a run once it cost this much.")
    allowed_tools: list[str] = Field(default_factory=list, description="Allow rules (--allowedTools).")
    disallowed_tools: list[str] = Field(default_factory=list, description="Deny rules (--disallowedTools).")
    add_dirs: list[PathText] = Field(default_factory=list, description="Directories outside the workspace that "
                                                                       "count as inside it (--add-dir).")
    approval_timeout_seconds: float | None = Field(default=None, gt=0, description="Deny a permission request "
                                                                                   "nobody answered this long.")
    fallback_model: str | None = Field(default=None, description="Retried once with this model on a 529.")
    system_prompt: str | None = Field(default=None, description="Replaces the default system prompt.")
    append_system_prompt: str | None = Field(default=None, description="Appended to the system prompt.")
    no_memory: bool = Field(default=False, description="No auto-memory (no MEMORY.md, memory tools, extraction).")


class SessionOptions(RemoteOptions):
    """Everything a session is opened with: :class:`RemoteOptions`, plus what only a process at the
    workspace sets (the CLI's flags, the SDK's stream-json door). The one currency of
    :class:`workflows.sessions.service.SessionService` and :meth:`Engine.create_session`."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    session_id: str | None = Field(default=None, description="The new session's id (--session-id); must be new.")
    tools: list[str] | None = Field(default=None, description="The tools offered to the model (--tools); "
                                                              "None: every tool the session may have.")
    asks: Literal["wait", "deny"] = Field(default="wait", description="Who answers a call that would ask: "
                                                                      "wait for a person, or deny (print mode).")
    stream_events: bool = Field(default=False, description="Publish every event of each reply on the live "
                                                           "stream (--include-partial-messages).")
    setting_sources: list[str] | None = Field(default=None, description="Which settings files to read "
                                                                        "(--setting-sources; None: all).")
    extra_settings: list[tuple[str, str]] | None = Field(default=None, description="--settings layers: "
                                                                                   "(where from, JSON text).")
    mcp_configs: list[str] = Field(default_factory=list, description="--mcp-config values (files or JSON).")
    strict_mcp_config: bool = Field(default=False, description="Only the --mcp-config MCP servers.")
    agents: dict[str, AgentDefinition] | None = Field(default=None, description="Sub-agent types (--agents).")
    plugin_dirs: list[str] = Field(default_factory=list, description="Plugin folders (--plugin-dir, the SDK's "
                                                                     "plugins).")
    json_schema: dict[str, Any] | None = Field(default=None, description="The JSON Schema of the structured "
                                                                         "output the model must give "
                                                                         "(--json-schema); None: none.")
    trust: str | None = Field(default=None, description="Who vouches for the workspace now (--trust-project, "
                                                        "a token or schedule made with it).")
    env: dict[str, str] = Field(default_factory=dict, description="The client's environment for the tool "
                                                             "processes (workflows.sessions.client_env).")
    model_env: dict[str, str] = Field(default_factory=dict, description="The client's ANTHROPIC_BASE_URL and "
                                                                   "ANTHROPIC_CUSTOM_HEADERS, for the model calls.")

    @classmethod
    def of(cls, remote: RemoteOptions, **more) -> "SessionOptions":
        """The options a remote client gave (only the :class:`RemoteOptions` part is read), plus ``more``."""
        return cls(**remote.model_dump(include=set(RemoteOptions.model_fields)), **more)


class SessionSetup(BaseModel):
    """What the settings files (and ``MAINSAIL_*``) add to a new session's options, resolved once by
    :func:`workflows.sessions.setup.session_options`; kept in the session for its life."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    rules: RuleSet = Field(default_factory=RuleSet, description="Allow / ask / deny rules (files and flags).")
    sandbox: SandboxSettings | None = Field(default=None, description="How Bash is confined (None: defaults).")
    hooks: HookSet = Field(default_factory=HookSet, description="The files' hooks, snapshotted for every worker.")
    additional_directories: list[str] = Field(default_factory=list, description="Resolved added directories "
                                                                                "(files' and --add-dir).")
    env: dict[str, str] = Field(default_factory=dict, description="The files' env for tool processes.")
    model_overrides: dict[str, str] = Field(default_factory=dict, description="What the aliases stand for "
                                                                              "(ANTHROPIC_DEFAULT_*_MODEL).")
    mcp_servers: list[McpServer] = Field(default_factory=list, description="Its MCP servers, found at its "
                                                                           "first run.")
    bypass_disabled_by: list[str] = Field(default_factory=list, description="Files that disabled "
                                                                            "bypassPermissions (kept for life).")
    untrusted_workspace: bool = Field(default=False, description="The workspace was not trusted at the start.")
    output_style: OutputStyle | None = Field(default=None, description="The outputStyle picked (None: default).")
    plugins: list[Plugin] = Field(default_factory=list, description="Its plugins (--plugin-dir).")


__all__ = ["RemoteOptions", "SessionOptions", "SessionSetup"]
