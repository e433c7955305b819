"""Claude Code hooks: commands from settings files that run at the session's events.

- :mod:`~workflows.models.hooks`: the pydantic types (events, matchers, command hooks) and matching;
- :mod:`~workflows.hooks.settings`: parsing a settings file's ``hooks`` value;
- :mod:`~workflows.hooks.runner`: running command hooks, where the step runs, in the sandbox;
- :mod:`~workflows.models.hook_outcome`: what their exit codes and JSON output mean, per event;
- :mod:`~workflows.hooks.commits` and :mod:`~workflows.hooks.lifecycle`: the engine's part (verdicts committed
  before they are acted on);
- :mod:`~workflows.hooks.session_hooks`, :mod:`~workflows.hooks.tool_hooks`: what a hook step does.

This package's ``__init__`` imports only the pure types, so :mod:`workflows.models` can use them.
"""

from workflows.models.hooks import CommandHook, HookEvent, HookMatcher, HookSet, matches

__all__ = ["CommandHook", "HookEvent", "HookMatcher", "HookSet", "matches"]
