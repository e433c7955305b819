"""The settings keys that shape a session beyond its rules: ``model``, ``env``, ``permissions.additionalDirectories``.

Read from the same six files as the rules (:mod:`workflows.sessions.settings_files`),
with the same rule for single values: a later file wins. ``env`` is merged
name by name (a later file wins per name); ``additionalDirectories`` from every
file are combined, and the ``--add-dir`` flags join them.

``env`` is the user's own configuration, so its variables reach the session's
tool processes even when their names look like secrets (``NPM_TOKEN``): the
scrub of the *worker's* environment (``sandbox_env``) is about what the user
did not choose to give a command. Three kinds of name are treated apart:

* ``ANTHROPIC_MODEL`` and ``ANTHROPIC_DEFAULT_{OPUS,SONNET,HAIKU}_MODEL`` choose
  the model, as in Claude Code; they are not given to commands.
* Reserved names (:mod:`workflows.settings.reserved`) never apply, with a warning: ``MAINSAIL_*``, ``ANTHROPIC_*``
  (the API key and endpoint belong to the workers: a project's settings file
  must not be able to send the workers' key to another host), ``CLAUDE_*``,
  ``CELERY_*``, ``REDIS_URL``, ``BROKER_URL`` (they reach Mainsail's own
  services) and ``GIT_CONFIG_*`` (Mainsail pins ``safe.bareRepository``).
* Everything else is set for Bash commands, after the worker's environment
  was scrubbed and before Mainsail's own values (``TMPDIR``, the proxy) are set.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from workflows.models.model_names import ALIAS_ENV, MODEL_ENV, valid_name
from workflows.permissions.rules import paths
from workflows.settings.errors import SettingsError, describe, strings
from workflows.settings.reserved import reserved_env_name

__all__ = ["MODEL_ENV_NAMES", "apply_session_keys", "resolve_added_dir"]

MODEL_ENV_NAMES = frozenset({MODEL_ENV, *ALIAS_ENV.values()})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def apply_session_keys(out, data: dict, where, workspace: str, home: str) -> None:
    """Layer one settings file's ``model``, ``outputStyle``, ``env`` and ``permissions.additionalDirectories`` onto ``out``.

    ``out`` is a :class:`~workflows.sessions.settings_files.PermissionSettings`; ``where`` names the
    file and finds a key's line for messages.

    Raises:
        SettingsError: a value of the wrong type, an invalid variable name, a model name that cannot be
            sent, or a directory that does not exist.
    """
    model = data.get("model")
    if model is not None:
        if not isinstance(model, str) or not valid_name(model.strip()):
            raise SettingsError(f"{where.key('model')}: 'model' must be a model name like \"sonnet\", \"opus\" or "
                                f"\"claude-opus-5-5\", not a {describe(model)}. "
                                "Fix it or remove the key.")
        out.model = model.strip()
    style = data.get("outputStyle")
    if style is not None:
        if not isinstance(style, str) or not style.strip():
            raise SettingsError(f"{where.key('outputStyle')}: 'outputStyle' must be the name of an output style like "
                                f"\"Explanatory\" or \"default\", not a {describe(style)}. Fix it or remove the key.")
        out.output_style = style.strip()
    _apply_env(out, data.get("env"), where)
    perms = data.get("permissions") if isinstance(data.get("permissions"), dict) else {}
    name = "permissions.additionalDirectories"
    for n, raw in enumerate(strings(perms.get("additionalDirectories"), name, where), 1):
        try:
            path = resolve_added_dir(raw, cwd=workspace, home=home)
        except ValueError as exc:
            raise SettingsError(f"{where.key(name)}: '{name}' item {n}: {exc}. Fix the path or remove it.") from None
        if path not in out.additional_directories:
            out.additional_directories.append(path)


def _apply_env(out, env: Any, where) -> None:
    if env is None:
        return
    if not isinstance(env, dict):
        raise SettingsError(f"{where.key('env')}: 'env' must be an object of variables like "
                            f'{{"NODE_ENV": "test"}}, not a {describe(env)}.')
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise SettingsError(f"{where.key('env')}: 'env' holds {json.dumps(name)}, which is not a variable name "
                                "(letters, digits and _, not starting with a digit). Fix or remove it.")
        if not isinstance(value, str) or "\0" in value:
            raise SettingsError(f"{where.key('env')}: 'env.{name}' must be a string like \"1\", not "
                                f"{'a string with a NUL byte' if isinstance(value, str) else 'a ' + describe(value)}. "
                                "Quote it.")
        if name in MODEL_ENV_NAMES:
            out.model_env[name] = value
        elif reserved_env_name(name):
            out.warnings.append(f"{where.key('env')}: 'env.{name}' is ignored: Mainsail never takes MAINSAIL_*, "
                                "ANTHROPIC_* (the API key and endpoint), CLAUDE_*, CELERY_*, REDIS_URL, BROKER_URL or "
                                "GIT_CONFIG_* from a settings file. Set it in the environment of the workers (and of "
                                "this command) instead, or remove it.")
        else:
            out.env[name] = value


def resolve_added_dir(raw: str, *, cwd: str, home: str) -> str:
    """The physical path of a directory to add to the working area (``--add-dir``, ``additionalDirectories``).

    Resolved by the one path resolver (``~``, ``~user``, ``..``, symlinks), as the workspace is.

    Raises:
        ValueError: it cannot be resolved, does not exist, is not a directory, or is ``/``.
    """
    try:
        path = paths.resolve(raw, cwd=cwd, home=home)
    except paths.Unresolvable as exc:
        raise ValueError(f"{raw!r} cannot be resolved ({exc})") from None
    if not os.path.isdir(path):
        raise ValueError(f"{raw!r} ({path}) is not an existing directory")
    if path == "/":
        raise ValueError(f"{raw!r} is the root directory: adding it would put every file in the working area")
    return path
