"""What every stored model shares: the base class, ids and timestamps."""

from __future__ import annotations

import time
import uuid as _uuid
from datetime import datetime, timezone

from pydantic import ConfigDict

from workflows.models import valid_text


def now() -> float:
    return time.time()


def iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    return str(_uuid.uuid4())


class _Model(valid_text.ValidJson):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, defer_build=True)
