"""Permissions: every tool call of every caller passes :func:`decide` before it runs.

Modules:

* :mod:`~workflows.permissions.decide`: the one decision point for a session's calls (and forks');
* :mod:`~workflows.permissions.evaluate`: the order of deny, bypass, ask, plan, allow, mode;
* :mod:`~workflows.permissions.shell.bash_parse`: commands parsed with the tree-sitter bash grammar;
* :mod:`~workflows.permissions.shell.bash_check`: a Bash call decided, fail closed;
* :mod:`~workflows.permissions.shell.commands`: wrappers, read-only commands, acceptEdits' file commands;
* :mod:`~workflows.permissions.rules.paths`: the one path resolver, shared with the tools;
* :mod:`~workflows.permissions.rules.rules`: the rule language (``Tool(specifier)``) and the results;
* :mod:`~workflows.permissions.rules.mcp_rules`: the rule forms of MCP tools (``mcp__server``, ``mcp__server__tool``, ``*``);
* :mod:`~workflows.permissions.prompt`: what a person is shown, and what "(a)lways" adds;
* :mod:`~workflows.sessions.settings_files`: rules, modes and sandbox settings from settings files and flags;
* :mod:`~workflows.permissions.protected_writes`: whether a pending call may write a protected path (an
  API token needs the admin scope to approve it);
* :mod:`~workflows.permissions.token_reach`: what a workspace-scoped API token's approval may reach;
* :mod:`~workflows.permissions.sandbox` (and ``sandbox_*``): the OS sandbox every Bash command runs in
  (bubblewrap: mounts, a scrubbed environment, the network allow-list proxy, the unix-socket filter).
"""

from workflows.permissions.decide import decide, read_denied_for
from workflows.permissions.evaluate import evaluate
from workflows.permissions.prompt import always_offered, always_rules, answer_choices, prompt_text, summary
from workflows.permissions.rules.results import Decision, PermissionResult

__all__ = ["Decision", "PermissionResult", "always_offered", "always_rules", "answer_choices", "decide", "evaluate",
           "prompt_text", "read_denied_for", "summary"]
