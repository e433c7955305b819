"""The settings ``env`` names that never reach a command: Mainsail's own and the workers' endpoint.

``MAINSAIL_*``, ``ANTHROPIC_*`` (the API key and endpoint belong to the workers: a project's settings
file must not be able to send the workers' key to another host), ``CLAUDE_*``, ``CELERY_*``,
``REDIS_URL``, ``BROKER_URL`` (they reach Mainsail's own services) and ``GIT_CONFIG_*`` (Mainsail pins
``safe.bareRepository``). :mod:`workflows.sessions.session_keys` warns about them when it reads a
settings file; :mod:`workflows.permissions.sandbox.env` leaves them out of a command's environment.
"""

from __future__ import annotations

__all__ = ["reserved_env_name"]

_RESERVED_PREFIXES = ("MAINSAIL_", "ANTHROPIC_", "CLAUDE_", "CELERY_", "GIT_CONFIG_")
_RESERVED_NAMES = frozenset({"REDIS_URL", "BROKER_URL", "GIT_CONFIG_COUNT"})


def reserved_env_name(name: str) -> bool:
    """Whether a settings ``env`` variable may never be set for a command (see the module docstring)."""
    upper = name.upper()
    return upper.startswith(_RESERVED_PREFIXES) or upper in _RESERVED_NAMES
