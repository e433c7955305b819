"""Prices per million tokens, per model family. Update the table when prices change.

Keys are matched as prefixes of the model name, longest first, so
``claude-sonnet-4-5-20250929`` finds ``claude-sonnet-4-5``.
"""

from __future__ import annotations

from workflows.models import Usage

# (input, output, cache write 5m, cache read) in USD per million tokens.
PRICES: dict[str, tuple[float, float, float, float]] = {
    "claude-opus-4-1": (15.0, 75.0, 18.75, 1.50),
    "claude-opus-4": (15.0, 75.0, 18.75, 1.50),
    "claude-opus-4-5": (5.0, 25.0, 6.25, 0.50),
    "claude-sonnet-4-5": (3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4": (3.0, 15.0, 3.75, 0.30),
    "claude-3-7-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4-5": (1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": (0.80, 4.0, 1.0, 0.08),
    "scripted:": (0.0, 0.0, 0.0, 0.0),
}
DEFAULT = PRICES["claude-sonnet-4-5"]


def price_for(model: str) -> tuple[float, float, float, float]:
    for prefix in sorted(PRICES, key=len, reverse=True):
        if model.startswith(prefix):
            return PRICES[prefix]
    return DEFAULT


def cost_usd(model: str, usage: Usage) -> float:
    """What ``usage`` of ``model`` costs, cache reads and writes included."""
    inp, out, cw, cr = price_for(model)
    return (
        usage.input_tokens * inp
        + usage.output_tokens * out
        + usage.cache_creation_input_tokens * cw
        + usage.cache_read_input_tokens * cr
    ) / 1_000_000
