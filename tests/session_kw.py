"""Tests' shorthand for a new session: ``create(engine, ws, model=..., hooks=..., home=...)`` sorts the
keywords into :class:`SessionOptions`, :class:`SessionSetup` and the facts :meth:`Engine.create_session`
takes, so a test helper can pass its ``**kw`` through."""

from __future__ import annotations

from workflows.models.options import SessionOptions, SessionSetup

FACTS = {"home", "tools_queue"}


def create(engine, workspace: str, **kw):
    """A new session in ``workspace`` (``sid`` and ``auto_memory`` are the old names of two options)."""
    if "sid" in kw:
        kw["session_id"] = kw.pop("sid")
    if "auto_memory" in kw:
        kw["no_memory"] = kw.pop("auto_memory") is False
    options = {k: kw.pop(k) for k in list(kw) if k in SessionOptions.model_fields}
    facts = {k: kw.pop(k) for k in list(kw) if k in FACTS}
    setup = {k: v for k, v in kw.items() if v is not None}  # (None: the default, as the old keywords took it)
    return engine.create_session(workspace, SessionOptions(**options), SessionSetup(**setup), **facts)
