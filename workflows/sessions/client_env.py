"""The environment of the process that opened a session (Claude Code's own environment), kept for its workers.

Claude Code runs its tools and makes its model calls in its own process, so what a client puts in that
process's environment (the Agent SDK's ``ClaudeAgentOptions.env``, a shell's exports) reaches both: Bash sees
the variables, ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_CUSTOM_HEADERS`` steer the calls. Mainsail runs both in
workers, which have environments of their own; the front door that stands for Claude Code's command line
(``mainsail -p``, the SDK's door) records the client's with the session (:func:`client_env`) and every worker
applies it to that session alone:

* for its tool processes (Bash, hooks, MCP servers started for it): the client's variables, scrubbed as a
  worker's own are (:func:`workflows.permissions.sandbox.env.scrub_environment`: no ``ANTHROPIC_*``,
  ``MAINSAIL_*``, ``CLAUDE_*``, nothing named like a token, key, secret or password: so nothing secret is
  stored in Redis), and without what names the client's machine rather than the session (``PATH``, ``HOME``,
  ``SHELL``, ``PWD``...: a worker on another host keeps its own). The settings files' ``env`` goes over them,
  as in Claude Code.
* for its model calls: :data:`MODEL_NAMES` (the endpoint and extra headers; ``ANTHROPIC_MODEL`` and the
  alias variables are read when the session starts: :mod:`workflows.models.model_names`). The API key stays
  the workers' and is never stored. A settings file's ``env`` never sets these (:mod:`workflows.settings.reserved`):
  a repository cannot send the workers' key elsewhere; only the person's own process can choose the endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping

from workflows.permissions.sandbox.env import scrub_environment

__all__ = ["MACHINE_NAMES", "MODEL_NAMES", "client_env", "model_env"]

#: What a session's model calls take from the client's environment.
MODEL_NAMES = ("ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS")
#: Variables that describe the client's machine, login or terminal, not the session: never recorded.
MACHINE_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "SHLVL", "_", "TMPDIR", "TMP", "TEMP", "HOSTNAME",
    "XDG_RUNTIME_DIR", "XDG_SESSION_ID", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "SSH_CONNECTION",
    "SSH_CLIENT", "SSH_TTY", "TERM", "COLORTERM", "TERM_PROGRAM", "COLUMNS", "LINES", "LS_COLORS", "MAIL",
})


def client_env(environ: Mapping[str, str]) -> dict[str, str]:
    """What a session's tool processes get of the client's environment ``environ`` (see the module docstring)."""
    return {k: v for k, v in scrub_environment(environ).items() if k.upper() not in MACHINE_NAMES}


def model_env(environ: Mapping[str, str]) -> dict[str, str]:
    """What a session's model calls take of the client's environment: the :data:`MODEL_NAMES` set there."""
    return {k: environ[k] for k in MODEL_NAMES if environ.get(k)}
