"""Token accounting: how full a session's context is, against its model's window.

The context size is the last response's reported input (plus cache) and
output tokens, plus an estimate (characters / 4) for what was added since.
The effective window reserves room for output: ``W = window - min(max
output, 20,000)``. Thresholds from W: warning and error at W - 20,000,
auto-compact at W - 13,000 (or a configured percentage of W), blocking at
W - 3,000.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from workflows.model.providers import provider_for

# (context window, max output tokens), by model-name prefix; longest prefix wins.
MODELS: dict[str, tuple[int, int]] = {
    # Claude Code 2.1.330's catalog: the 4.7+ and 5.x models have a 1M-token window.
    "claude-opus-5": (1_000_000, 64_000),
    "claude-opus-5-5": (1_000_000, 128_000),
    "claude-opus-4-8": (1_000_000, 64_000),
    "claude-opus-4-7": (1_000_000, 64_000),
    "claude-opus-4-6": (200_000, 64_000),
    "claude-sonnet-5": (1_000_000, 64_000),
    "claude-sonnet-5-5": (1_000_000, 128_000),
    "claude-sonnet-4-6": (200_000, 64_000),
    "claude-haiku-5-5": (1_000_000, 128_000),
    "claude-opus-4-5": (200_000, 64_000),
    "claude-opus-4-1": (200_000, 32_000),
    "claude-opus-4": (200_000, 32_000),
    "claude-sonnet-4-5": (200_000, 64_000),
    "claude-sonnet-4": (200_000, 64_000),
    "claude-3-7-sonnet": (200_000, 64_000),
    "claude-haiku-4-5": (200_000, 64_000),
    "claude-3-5-haiku": (200_000, 8_192),
}
DEFAULT_MODEL = (200_000, 32_000)
OUTPUT_RESERVE_CAP = 20_000


def model_limits(model: str) -> tuple[int, int]:
    provider = provider_for(model)
    if provider is not None and provider.limits is not None:
        return provider.limits
    for prefix in sorted(MODELS, key=len, reverse=True):
        if model.startswith(prefix):
            return MODELS[prefix]
    return DEFAULT_MODEL


def effective_window(model: str) -> int:
    window, max_output = model_limits(model)
    return window - min(max_output, OUTPUT_RESERVE_CAP)


@dataclass(frozen=True)
class Thresholds:
    window: int  # the effective window W
    warning: int
    error: int
    auto_compact: int
    blocking: int


def thresholds(model: str, autocompact_pct: float | None = None) -> Thresholds:
    w = effective_window(model)
    auto = int(w * autocompact_pct / 100) if autocompact_pct else w - 13_000
    return Thresholds(window=w, warning=w - 20_000, error=w - 20_000, auto_compact=auto, blocking=w - 3_000)


def estimate_tokens(obj) -> int:
    """A rough count for text not yet measured by the API: four characters a token (an image or a PDF
    in a JSON-like ``obj`` counts as :func:`media_tokens` says, not as its base64)."""
    if isinstance(obj, str):
        return (len(obj) + 3) // 4
    media: list[dict] = []
    text = json.dumps(_without_media(obj, media), default=str)
    return (len(text) + 3) // 4 + media_tokens(media)


def _without_media(obj, media: list[dict]):
    if isinstance(obj, dict):
        if obj.get("type") in ("image", "document") and isinstance(obj.get("source"), dict):
            media.append(obj)
            return None
        return {k: _without_media(v, media) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_without_media(v, media) for v in obj]
    return obj


#: What an image costs at most (Claude Code's limit for a 2000x2000 image), and a PDF's page, about.
IMAGE_TOKENS = 1_600
PDF_TOKENS_PER_KB = 30


def media_tokens(blocks: list[dict] | None) -> int:
    """A rough count for a tool result's images and PDFs (``ToolOutput.blocks``): their base64 is not text."""
    total = 0
    for b in blocks or ():
        if b.get("type") == "image":
            total += IMAGE_TOKENS
        elif b.get("type") == "document":
            total += max(IMAGE_TOKENS, len(b["source"].get("data", "")) * 3 // 4 // 1024 * PDF_TOKENS_PER_KB)
        else:
            total += estimate_tokens(b.get("text", ""))
    return total


def describe_usage(tokens: int, model: str, autocompact_pct: float | None = None) -> str:
    """One line for `/status` and `mainsail show`: used of window, and what is next."""
    t = thresholds(model, autocompact_pct)
    pct = 100 * tokens / t.window if t.window else 0
    note = ""
    if tokens >= t.blocking:
        note = " · over the blocking limit: /compact before the next prompt"
    elif tokens >= t.auto_compact:
        note = " · auto-compact will run before the next model call"
    elif tokens >= t.warning:
        note = f" · {t.auto_compact - tokens:,} tokens until auto-compact"
    return f"{tokens:,} of {t.window:,} tokens ({pct:.0f}%){note}"
