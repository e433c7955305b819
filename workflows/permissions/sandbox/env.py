"""The environment of a Bash command: the worker's, without what holds secrets or reaches Mainsail.

Every command, sandboxed or not, gets a scrubbed copy of the worker's
environment (a secret there would be one ``env`` away from the model).
Dropped (names compared case-insensitively):

* names starting with ``ANTHROPIC_``, ``MAINSAIL_`` (``MAINSAIL_REDIS_URL``), ``CLAUDE_``,
  ``CELERY_``, ``AWS_``;
* ``REDIS_URL``, ``BROKER_URL``, ``DATABASE_URL``, ``SSH_AUTH_SOCK``, ``GPG_AGENT_INFO``, ``KRB5CCNAME``;
* names with a ``_``-separated word ``TOKEN``, ``KEY``, ``APIKEY``, ``SECRET``, ``PASS``,
  ``PASSWD``, ``PASSWORD``, ``CREDENTIAL(S)`` or ``AUTH`` (``GITHUB_TOKEN``, ``OPENAI_API_KEY``,
  ``NPM_CONFIG__AUTH``, ``GOOGLE_APPLICATION_CREDENTIALS``), and names containing
  ``PASSWORD``, ``SECRET`` or ``TOKEN`` anywhere (``PGPASSWORD``);
* any variable whose value is a URL with a password in it (``scheme://user:pw@host``).

A sandboxed command also gets ``TMPDIR=/tmp`` (its private /tmp) and, with named
``allowedDomains``, the proxy variables (``HTTP_PROXY``, ``HTTPS_PROXY`` and their
lowercase forms; ``NO_PROXY`` for the sandbox's own loopback).
"""

from __future__ import annotations

import re
from typing import Mapping

from workflows.settings.reserved import reserved_env_name

__all__ = ["command_environment", "scrub_environment"]

SCRUB_PREFIXES = ("ANTHROPIC_", "MAINSAIL_", "CLAUDE_", "CELERY_", "AWS_")
SCRUB_NAMES = frozenset({"REDIS_URL", "BROKER_URL", "DATABASE_URL", "SSH_AUTH_SOCK", "GPG_AGENT_INFO",
                         "KRB5CCNAME"})
SCRUB_WORDS = frozenset({"TOKEN", "TOKENS", "KEY", "KEYS", "APIKEY", "SECRET", "SECRETS", "PASS", "PASSWD",
                         "PASSWORD", "CREDENTIAL", "CREDENTIALS", "AUTH"})
SCRUB_SUBSTRINGS = ("PASSWORD", "SECRET", "TOKEN")
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s@:]*:[^/\s@]+@")


def _secret_name(name: str) -> bool:
    upper = name.upper()
    if upper.startswith(SCRUB_PREFIXES) or upper in SCRUB_NAMES:
        return True
    if any(s in upper for s in SCRUB_SUBSTRINGS):
        return True
    return any(word in SCRUB_WORDS for word in upper.split("_"))


def scrub_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the variables that hold secrets or reach Mainsail's own services."""
    return {k: v for k, v in environ.items() if not _secret_name(k) and not _URL_WITH_PASSWORD.search(v)}


def command_environment(environ: Mapping[str, str], *, sandboxed: bool = False,
                        proxy_port: int | None = None, settings_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of one command: scrubbed; in the sandbox, TMPDIR=/tmp and the proxy if any.

    Args:
        environ: the worker's environment.
        sandboxed: the command runs in bwrap (its /tmp is private).
        proxy_port: the sandbox's proxy port on 127.0.0.1, or None when there is no proxy.
        settings_env: the settings files' ``env``: the user's own choice, so set after the scrub (a
            ``NPM_TOKEN`` there reaches the command), but never a reserved name (``MAINSAIL_*``,
            ``ANTHROPIC_*``..., see :mod:`workflows.settings.reserved`), and never over the values set below.
    """
    env = scrub_environment(environ)
    env.update({k: v for k, v in (settings_env or {}).items() if not reserved_env_name(k)})
    # Git never opens a bare repository it merely finds (one planted in the workspace could name
    # programs in its config: diff.external, core.fsmonitor); an explicit --git-dir still works.
    # The worker's own GIT_CONFIG_COUNT/KEY_n/VALUE_n settings are dropped (the *_KEY_n are scrubbed
    # as secrets anyway, and a count without its keys makes git fail).
    for name in [k for k in env if k == "GIT_CONFIG_COUNT" or k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
        del env[name]
    env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.bareRepository", "GIT_CONFIG_VALUE_0": "explicit"})
    if sandboxed:
        for name in ("TMPDIR", "TMP", "TEMP", "TEMPDIR"):
            if name == "TMPDIR" or name in env:
                env[name] = "/tmp"
    if proxy_port is not None:
        url = f"http://127.0.0.1:{proxy_port}"
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            env[name] = url
        for name in ("NO_PROXY", "no_proxy"):
            env[name] = "localhost,127.0.0.1,::1"
        for name in ("ALL_PROXY", "all_proxy"):  # a SOCKS proxy would not get through
            env.pop(name, None)
    return env
