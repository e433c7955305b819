"""Models near or past their end of life, from the anthropic SDK's own deprecation list.

The installed SDK ships the dates (``anthropic._data.DEPRECATED_MODELS``: id -> "November 30th, 2026") and
warns with them from ``messages.create``, which Mainsail does not call (it posts the request itself,
workflows/model/client.py). So Mainsail says it: once on stderr when a command opens a session on such a
model (cli/run.py), once in the session's transcript at its first call of it (the engine's charge), and in
the error of a call that failed on a model past its end of life. A date the SDK writes in another form,
or an SDK without the list, means no note: never a failure.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.util
import re
import sys
from pathlib import Path

#: Where the SDK's list lives (a private module: read defensively).
SDK_TABLE = "anthropic._data.DEPRECATED_MODELS"


def _table() -> dict[str, str]:
    """The SDK's list, read from its file without importing the SDK (a second of a CLI's start-up)."""
    module = sys.modules.get("anthropic._data.deprecated_models") or _load_table_module()
    table = getattr(module, "DEPRECATED_MODELS", None)
    return dict(table) if isinstance(table, dict) else {}


@functools.lru_cache(maxsize=1)
def _load_table_module():
    try:
        spec = importlib.util.find_spec("anthropic")  # finds the package; does not import it
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))) / "_data" / "deprecated_models.py"
        table_spec = importlib.util.spec_from_file_location("_mainsail_sdk_deprecated_models", path)
        module = importlib.util.module_from_spec(table_spec)
        table_spec.loader.exec_module(module)
        return module
    except (ImportError, OSError, SyntaxError, AttributeError):
        return None


def end_of_life(model: str) -> dt.date | None:
    """The day ``model`` (an id as sent) reaches its end of life, per the installed SDK; None if not listed."""
    text = _table().get(model.strip())
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.strptime(re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text.strip()), "%B %d, %Y").date()
    except ValueError:
        return None


def lifecycle_note(model: str, today: dt.date | None = None) -> str | None:
    """A one-paragraph warning about ``model``'s end of life, or None when the SDK lists no date for it."""
    eol = end_of_life(model)
    if eol is None:
        return None
    today = today or dt.datetime.now(dt.timezone.utc).date()
    fix = "choose a current model with --model or MAINSAIL_MODEL (e.g. opus, sonnet, haiku)"
    if eol <= today:
        return (f"Model {model} reached its end of life on {eol.isoformat()} (the anthropic SDK's deprecation "
                f"list): the API no longer serves it, so its calls fail; {fix}.")
    return (f"Model {model} is deprecated and reaches its end of life on {eol.isoformat()} (the anthropic SDK's "
            f"deprecation list), after which its calls fail; {fix}.")


def retired(model: str, today: dt.date | None = None) -> bool:
    """Whether ``model`` is past its end of life."""
    eol = end_of_life(model)
    return eol is not None and eol <= (today or dt.datetime.now(dt.timezone.utc).date())
