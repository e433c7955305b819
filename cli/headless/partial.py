"""``--include-partial-messages``: every raw event of every reply as a ``stream_event`` line, as Claude Code
writes them.

The model step publishes each event of the reply it streams on the session's live stream (when the
session asks for them: ``SessionRecord.stream_events``, workflows/steps/model_call.py); the follower
hands each such live entry to :meth:`StreamEvents.line`, which wraps the event as Claude Code does::

    {"type": "stream_event", "event": {...the Messages API event, as sent...}, "session_id": ...,
     "parent_tool_use_id": null, "uuid": ..., "api_message_id": "msg_..."}

``message_start``'s line also carries ``ttft_ms`` (the time from the call's start to that event) and
``thinking_display``; ``api_message_id`` is the id of the message the event belongs to.
"""

from __future__ import annotations

import json

from workflows.models import new_id

#: What Claude Code puts in ``thinking_display`` on a ``message_start`` line (its default display of thinking).
THINKING_DISPLAY = "updates"


class StreamEvents:
    """Turns the live entries of a session's raw reply events into ``stream_event`` lines (one reply after
    the other: the message id comes from each reply's ``message_start``)."""

    def __init__(self) -> None:
        self.message_id: str | None = None

    def line(self, sid: str, fields: dict) -> dict:
        """The ``stream_event`` line of one live entry (``fields``: its ``event`` JSON, ``ttft_ms`` on a
        ``message_start``) of session ``sid``."""
        event = json.loads(fields["event"])
        obj = {"type": "stream_event", "event": event, "session_id": sid, "parent_tool_use_id": None,
               "uuid": new_id()}
        if event.get("type") == "message_start":
            self.message_id = (event.get("message") or {}).get("id")
            obj["ttft_ms"] = int(fields.get("ttft_ms") or 0)
            obj["thinking_display"] = THINKING_DISPLAY
        obj["api_message_id"] = self.message_id
        return obj


__all__ = ["StreamEvents"]
