"""Prices per million tokens, per model. Update the table when prices change.

A model id has a price when it is a key of :data:`PRICES`, optionally followed
by a release date (``claude-sonnet-4-5-20250929``) or ``-latest``; a model of a
registered provider (workflows/model/providers.py) has the provider's. Anything
else has **no** price: :func:`cost_usd` returns None and every figure it goes
into shows as unknown (``?`` for people, ``null`` in JSON) rather than a guess.

Figures are read from Claude Code 2.1.330's own model catalog (its pricing
tiers), which agrees with the public price list for the models both name.
Haiku 5.5's higher rate past 100,000 prompt tokens is not modelled.
"""

from __future__ import annotations

import re

from workflows.model.providers import provider_for
from workflows.models import Usage

# (input, output, cache write 5m, cache read) in USD per million tokens.
_OPUS_4 = (15.0, 75.0, 18.75, 1.50)
_OPUS_45 = (5.0, 25.0, 6.25, 0.50)
_SONNET_4 = (3.0, 15.0, 3.75, 0.30)
PRICES: dict[str, tuple[float, float, float, float]] = {
    "claude-opus-5-5": (4.0, 20.0, 5.0, 0.20),
    "claude-opus-5": _OPUS_45,
    "claude-opus-4-8": _OPUS_45,
    "claude-opus-4-7": _OPUS_45,
    "claude-opus-4-6": _OPUS_45,
    "claude-opus-4-5": _OPUS_45,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-sonnet-5-5": (2.0, 10.0, 2.5, 0.10),
    "claude-sonnet-5": (2.0, 10.0, 2.5, 0.20),
    "claude-sonnet-4-6": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-sonnet-4": _SONNET_4,
    "claude-3-7-sonnet": _SONNET_4,
    "claude-3-5-sonnet": _SONNET_4,
    "claude-haiku-5-5": (0.10, 0.50, 0.125, 0.01),
    "claude-haiku-4-5": (1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": (0.80, 4.0, 1.0, 0.08),
    "claude-fable-5": (10.0, 50.0, 12.5, 1.0),
    "claude-fable-5-1": (10.0, 50.0, 12.5, 0.25),
    "claude-fable-5-2": (8.0, 40.0, 10.0, 0.20),
}
_DATED = re.compile(r"(.+?)(-\d{8})?(-latest)?")


def price_for(model: str) -> tuple[float, float, float, float] | None:
    """The prices of ``model``, or None when none is known (never a guess)."""
    provider = provider_for(model)
    if provider is not None:  # (a model of a provider's: its own prices, or none)
        return provider.prices
    m = _DATED.fullmatch(model)
    return PRICES.get(m.group(1)) if m else None


def known_price(model: str) -> bool:
    return price_for(model) is not None


def cost_usd(model: str, usage: Usage) -> float | None:
    """What ``usage`` of ``model`` costs, cache reads and writes included; None: no price is known."""
    prices = price_for(model)
    if prices is None:
        return None
    inp, out, cw, cr = prices
    return (
        usage.input_tokens * inp
        + usage.output_tokens * out
        + usage.cache_creation_input_tokens * cw
        + usage.cache_read_input_tokens * cr
    ) / 1_000_000


def add_cost(total: float | None, cost: float | None) -> float | None:
    """``total + cost``, unknown (None) as soon as either is: a sum with an unknown part is unknown."""
    return None if total is None or cost is None else total + cost


def unknown_price_note(model: str) -> str:
    """What the session and the CLI say, once, about a model without a price."""
    return (f"No price is known for model {model!r}: its cost shows as unknown (?) in show, sessions and the "
            "closing line, and as null in JSON results. Check the name (aliases: opus, sonnet, haiku, opusplan) "
            "if it is a typo.")


__all__ = ["PRICES", "price_for", "known_price", "cost_usd", "add_cost", "unknown_price_note"]
