"""Permissions: every tool call of every caller passes :func:`decide` before it runs.

Modules:

* :mod:`~workflows.permissions.rules`: the rule language (``Tool(specifier)``) and the modes;
* :mod:`~workflows.permissions.decide`: the one decision point for a session's calls;
* :mod:`~workflows.permissions.settings_files`: rules and modes from settings files and flags.
"""

from workflows.permissions.decide import decide
from workflows.permissions.rules import Decision, PermissionResult, always_rules, evaluate, summary

__all__ = ["Decision", "PermissionResult", "always_rules", "decide", "evaluate", "summary"]
