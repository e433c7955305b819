"""Model providers: who answers a model's calls, looked up by the start of the model's name.

Every model goes to the Anthropic Messages API through the official SDK (workflows/model/client.py),
unless a provider registered here claims its name's prefix. A provider makes the SDK client its models'
calls go through (an in-process API, for instance), and says what the rest of Mainsail asks of a model
that is not the API's: whether it runs locally (no credentials; a session's side calls, such as its
title, use the session's own model), its context window and its prices.

Providers are registered by the program's composition roots (the CLI, the worker start-up); the
domain never imports them. This module imports nothing of Mainsail's, so that settings, pricing and
token counts can ask it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

#: (input, output, cache write, cache read) in USD per million tokens, as in workflows/model/pricing.py.
Prices = tuple[float, float, float, float]


@dataclass(frozen=True)
class ModelProvider:
    """The models whose names start with ``prefix``, and how to call them."""

    prefix: str
    #: (model name, settings) -> the ``anthropic.Anthropic``-compatible client its calls go through.
    make_client: Callable[[str, Any], Any]
    #: The model runs in this process: it needs no credentials, and a session's side calls use it too.
    local: bool = False
    #: (context window, max output tokens); None: as an unknown Claude model.
    limits: tuple[int, int] | None = None
    #: Its prices; None: no price is known.
    prices: Prices | None = None


_providers: dict[str, ModelProvider] = {}
_lock = threading.Lock()


def register(provider: ModelProvider) -> None:
    """Make ``provider`` answer the models whose names start with its prefix (again: replaces it)."""
    with _lock:
        _providers[provider.prefix] = provider


def provider_for(model: str) -> ModelProvider | None:
    """The provider of ``model`` (the longest matching prefix), or None: the Anthropic Messages API."""
    best = None
    for prefix, provider in list(_providers.items()):
        if model.startswith(prefix) and (best is None or len(prefix) > len(best.prefix)):
            best = provider
    return best


def is_local_model(model: str) -> bool:
    """Whether ``model`` runs in this process (no credentials, no API)."""
    provider = provider_for(model)
    return provider is not None and provider.local


__all__ = ["ModelProvider", "Prices", "register", "provider_for", "is_local_model"]
