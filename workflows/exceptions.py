"""Every error Mainsail raises on purpose.

Hierarchy::

    MainsailError                   root: the CLI turns any of these into a message, never a traceback
    ├── ConfigurationError          you configured it wrong (settings, API key, Redis URL); fix and rerun
    │   ├── MissingCredentials      no API key and no base URL for a real model
    │   ├── InvalidSchedule         a schedule's cron expression, workspace or options are wrong
    │   └── McpConfigError          an MCP server configuration (.mcp.json, --mcp-config...) is malformed
    ├── McpServerError              an MCP server could not be started or reached, or failed mid-call
    ├── StoreUnavailable            Redis cannot be reached
    ├── SessionNotFound             no session with that id (or prefix)
    ├── ScheduleNotFound            no schedule with that id (or prefix), or several match
    ├── AmbiguousSession            a prefix matches several sessions
    ├── SessionBusy                 the operation needs an idle session
    ├── ContextFull                 the context is past the blocking limit: compact first
    ├── RewindRefused               a /rewind cannot go there (no such message) or would overwrite changes
    ├── LockTimeout                 another writer held the session lock too long
    ├── StepNotFound                a task named a step the ledger does not hold
    ├── RequestNotFound             no pending permission request matches (or several do)
    ├── RequestClosed               the request was already decided, or superseded by a cancel
    │   └── ClientOnlyRequest       an approval of a call only the Agent SDK client can run
    ├── AlwaysNotOffered            an "always" answer to a request that offers none (approve it once)
    ├── BypassDisabled              bypassPermissions is refused here (a settings file, or the API token)
    ├── ScopeMissing                an API token lacks the admin scope for what it asked (a protected write)
    ├── BudgetExceeded              a token's or workspace's budget is spent: no new turn until it is raised
    ├── NotifyError                 a notification subscription is malformed, or not this token's to change
    └── ToolError                   a tool refused its input or failed; becomes an error tool_result
        ├── ToolInputError          the model's tool input did not validate
        └── ToolRefused             the tool's own checks refused the call before it changed anything

``statemachines.InvalidTransition`` is the domain error for an illegal trigger; it
lives with the machine so that package stays free of imports.
"""

from __future__ import annotations


class MainsailError(Exception):
    """Root of every error Mainsail raises on purpose."""


class ConfigurationError(MainsailError):
    """The configuration is wrong; the message says which setting and how to fix it."""


class MissingCredentials(ConfigurationError):
    """No ANTHROPIC_API_KEY and no ANTHROPIC_BASE_URL for a model that needs one."""


class McpConfigError(ConfigurationError):
    """An MCP configuration is malformed; the message names the file (or flag), the server, and the fix."""


class McpServerError(MainsailError):
    """An MCP server could not be started or reached, or its connection broke; the message says which and why."""


class InvalidSchedule(ConfigurationError):
    """A schedule's cron expression, workspace or session options are wrong; the message says which."""


class ScheduleBroken(InvalidSchedule):
    """A schedule's stored record cannot be read (e.g. a cron saved before it was refused); it does not fire."""


class ScheduleNotFound(MainsailError):
    """No schedule matches the id or prefix given (or several do)."""


class StoreUnavailable(MainsailError):
    """Redis could not be reached."""


class SessionNotFound(MainsailError):
    """No session matches the id or prefix given."""


class AmbiguousSession(MainsailError):
    """A session id prefix matches more than one session."""


class SessionBusy(MainsailError):
    """The operation needs the session to be idle."""


class ContextFull(MainsailError):
    """A new prompt would not fit: the context is past the blocking limit and auto-compact is off."""


class RewindRefused(MainsailError):
    """A rewind was refused: the message is not one to rewind to, or files changed since the session's last edit
    of them (``--force`` restores them anyway); the message says which and how to go on."""

    def __init__(self, message: str, changed: list[str] | None = None) -> None:
        super().__init__(message)
        self.changed = changed or []  # the files that changed since the session's last edit of them


class LockTimeout(MainsailError):
    """The session lock could not be acquired in time."""


class StepNotFound(MainsailError):
    """A task named a step that is not in the session's ledger."""


class RequestNotFound(MainsailError):
    """No permission request of the session matches the id given, or several do."""


class RequestClosed(MainsailError):
    """The permission request was already decided, or a cancel superseded it."""


class ClientOnlyRequest(RequestClosed):
    """An approval of a request only the Agent SDK client can settle (a call of its in-process MCP server): it
    stays pending; a shell can deny it, not run it."""


class AlwaysNotOffered(MainsailError):
    """An "always" answer to a permission request that offers none (no rule can cover the call safely):
    it is approved once or denied, never silently approved once for an "always"."""


class BypassDisabled(MainsailError):
    """A session may not run in bypassPermissions: ``permissions.disableBypassPermissionsMode`` in a
    settings file, or an API token made without ``--allow-bypass``; the message names which and the fix."""


class ScopeMissing(MainsailError):
    """An API token made without ``--admin`` asked for something that may write a protected path (an
    allow rule for its session that would let such writes through); the message names the fix."""


class ToolError(MainsailError):
    """A tool refused or failed; the message is sent to the model as an error result."""


class ToolInputError(ToolError):
    """The tool input from the model did not validate against the tool's schema."""


class ToolRefused(ToolError):
    """The tool's own checks refused the call before it changed anything (Claude Code's ``validateInput``:
    Edit's string not found, a file not read yet); like a :class:`ToolInputError`, the model gets the
    message inside ``<tool_use_error>`` tags."""


class MemoryRecordError(ToolError):
    """A memory record or file that does not validate, or is missing; the message says how to fix it."""


class TokenError(MainsailError):
    """An API token is unknown, revoked, or not allowed to do what was asked."""


class BudgetExceeded(MainsailError):
    """A new turn was refused: the budget of the session's token or workspace is spent (the message names
    the budget, its limit, what was spent and how to raise it)."""


class NotifyError(MainsailError):
    """A notification subscription is malformed (a URL that is not http or https, an unknown event), or
    names one this caller may not see or change."""
