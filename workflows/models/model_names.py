"""Model names as Claude Code accepts them: aliases, the ids they stand for, and which ids have a price.

A session keeps the name the user asked for (``opus``, ``opusplan``, a full id);
each model call sends :func:`resolve_model` of it, so ``opusplan`` follows the
session's permission mode call by call and an alias follows the overrides the
session captured when it started.

What the aliases stand for is what Claude Code 2.1.330 sends for a first-party
API key, probed through its bundled CLI against a local fake Messages API
(``claude -p hi --model ALIAS``, an empty HOME): ``opus`` and ``default`` and
``best`` send ``claude-opus-5-5``, ``sonnet`` ``claude-sonnet-5-5``, ``haiku``
``claude-haiku-5-5``; ``opusplan`` sends the opus id in plan mode and the sonnet
id otherwise. ``ANTHROPIC_DEFAULT_OPUS_MODEL``, ``..._SONNET_MODEL`` and
``..._HAIKU_MODEL`` replace what an alias stands for (``opusplan`` included),
and ``ANTHROPIC_MODEL`` names the model when nothing more specific does: both as
in Claude Code. A full id is sent as written.
"""

from __future__ import annotations

import re
from typing import Mapping

__all__ = ["ALIASES", "ALIAS_ENV", "MODEL_ENV", "describe_model", "is_alias", "model_overrides", "resolve_model",
           "session_model", "valid_name"]

#: Family alias -> the id Claude Code 2.1.330 sends for it (first-party API).
ALIASES: dict[str, str] = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
}
#: Names that stand for a family alias (``default`` is opus for API-key users, as in Claude Code).
SYNONYMS: dict[str, str] = {"default": "opus", "best": "opus"}
#: The environment variables that replace what a family alias stands for.
ALIAS_ENV: dict[str, str] = {
    "opus": "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "sonnet": "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "haiku": "ANTHROPIC_DEFAULT_HAIKU_MODEL",
}
#: The model of a session when no flag, MAINSAIL_MODEL or settings ``model`` names one.
MODEL_ENV = "ANTHROPIC_MODEL"

_VALID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@\[\]-]{0,199}")


def _family(name: str, plan: bool) -> str | None:
    low = name.strip().lower()
    if low == "opusplan":
        return "opus" if plan else "sonnet"
    low = SYNONYMS.get(low, low)
    return low if low in ALIASES else None


def is_alias(name: str) -> bool:
    """Whether ``name`` is an alias (``opus``, ``opusplan``, ``default``...) rather than a model id."""
    return _family(name, False) is not None


def resolve_model(name: str, *, plan: bool = False, overrides: Mapping[str, str] | None = None) -> str:
    """The model id a call sends for ``name``.

    Args:
        name: what the user asked for: an alias or a full id.
        plan: the session is in plan mode (``opusplan`` then means opus).
        overrides: ``ANTHROPIC_DEFAULT_*_MODEL`` values captured for the session.
    """
    family = _family(name, plan)
    if family is None:
        return name.strip()
    return (overrides or {}).get(ALIAS_ENV[family]) or ALIASES[family]


def model_overrides(*sources: Mapping[str, str]) -> dict[str, str]:
    """The ``ANTHROPIC_DEFAULT_*_MODEL`` values of ``sources``, a later source winning."""
    out: dict[str, str] = {}
    for source in sources:
        for env in ALIAS_ENV.values():
            value = (source.get(env) or "").strip()
            if value:
                out[env] = value
    return out


def session_model(explicit: str | None, environ: Mapping[str, str], settings_model: str | None,
                  settings_env: Mapping[str, str], default: str) -> str:
    """The model a new session asks for, most specific first: ``explicit`` (``--model`` or
    ``MAINSAIL_MODEL``), ``ANTHROPIC_MODEL`` (the settings files' ``env`` over the process's, as
    Claude Code applies its settings env to its own environment), the settings ``model`` key, ``default``."""
    return (explicit or (settings_env.get(MODEL_ENV) or environ.get(MODEL_ENV) or "").strip() or settings_model
            or default)


def valid_name(name: str) -> bool:
    """A model name worth sending: no spaces, no control characters, at most 200 characters."""
    return bool(_VALID.fullmatch(name or ""))


def describe_model(name: str, sent: str) -> str:
    """``opus (sends claude-opus-5-5)``, or just the id when nothing was resolved."""
    return name if name == sent else f"{name} (sends {sent})"
