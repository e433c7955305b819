"""Reading Server-Sent Events: the HTML spec's event-stream parser, and a follower that reconnects.

:class:`SSEDecoder` applies the spec's rules (html.spec.whatwg.org, "Parsing an event stream") to
one line at a time: ``field: value`` lines build an event, a blank line dispatches it, a line
starting with ``:`` is a comment (the server's keep-alive pings), one space after the colon is
dropped, ``data`` lines join with newlines, and the last ``id`` seen stays the stream's last event
id until another replaces it (events without an id, like deltas, keep it), exactly as a browser's
``EventSource`` keeps it for ``Last-Event-ID``.

:func:`follow_events` opens ``GET /api/sessions/{id}/events`` and, when the connection drops
(the server restarting, a proxy timing out, a quiet stream with not even a ping for a while),
reconnects with ``Last-Event-ID`` after a growing pause: the server resumes right after that id, so
a watcher misses no entry and sees none twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import httpx

from cli.remote.client import Client, RemoteError, session_path


@dataclass(frozen=True)
class Event:
    """One dispatched event: its type (``message`` when the stream named none), data and id (the
    stream's last event id when it was dispatched; ``None`` if no id was ever sent)."""

    event: str
    data: str
    id: str | None = None


class SSEDecoder:
    """Turns an event stream's lines (without their line endings) into :class:`Event` objects."""

    def __init__(self, last_event_id: str | None = None) -> None:
        self.last_event_id = last_event_id
        self.retry_ms: int | None = None
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        """Take one line; return the event a blank line completes, else ``None``."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        elif field == "id":
            if "\0" not in value:
                self.last_event_id = value or None
        elif field == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None  # any other field is ignored, as the spec says

    def _dispatch(self) -> Event | None:
        data, event = self._data, self._event or "message"
        self._data, self._event = [], ""
        if not data:  # an event with no data is not dispatched (its id still counts)
            return None
        return Event(event, "\n".join(data), self.last_event_id)

    def events(self, lines: Iterable[str]) -> Iterator[Event]:
        """The events of ``lines``; an unfinished event at the end (no blank line) is dropped."""
        for line in lines:
            event = self.feed(line)
            if event is not None:
                yield event


#: Pauses between reconnection attempts grow from the first to the last (seconds).
BACKOFF = (0.2, 0.5, 1.0, 2.0, 5.0)
#: How long a stream may stay silent (the server pings every 15 s) before it is taken as dropped.
READ_TIMEOUT = 45.0


def follow_events(client: Client, sid: str, *, after: str | None = None, deltas: bool = True,
                  until_idle: bool = True, give_up_after: float = 300.0,
                  on_drop: Callable[[str], None] = lambda why: None,
                  on_reconnect: Callable[[], None] = lambda: None,
                  sleep: Callable[[float], None] = time.sleep) -> Iterator[Event]:
    """The events of session ``sid`` (a full id), from after ``after`` (an event id) or the start.

    Ends after an ``end`` event (``until_idle``); otherwise runs until the caller stops iterating.
    A dropped connection is retried with the last event id seen, pausing :data:`BACKOFF` between
    attempts; ``on_drop(reason)`` is told once per outage and ``on_reconnect()`` when it is over.

    Raises:
        RemoteError: the server refused the stream (token, session), or stayed unreachable for
            ``give_up_after`` seconds.
    """
    last, failures, down_since = after, 0, None
    params = {"deltas": str(deltas).lower(), "until_idle": str(until_idle).lower()}
    while True:
        decoder = SSEDecoder(last)
        try:
            with client.stream(session_path(sid, "events"), params=params,
                               headers={"Last-Event-ID": last} if last else {}, read_timeout=READ_TIMEOUT) as lines:
                if down_since is not None:
                    on_reconnect()
                failures, down_since = 0, None
                for event in decoder.events(lines):
                    last = decoder.last_event_id
                    yield event
                    if event.event == "end":
                        return
            reason = "the server closed the stream"
        except RemoteError as exc:
            if not exc.retry:
                raise
            reason = str(exc)
        except httpx.TransportError as exc:  # a read error or timeout mid-stream
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        now = time.monotonic()
        if down_since is None:
            down_since = now
            on_drop(reason)
        elif now - down_since > give_up_after:
            raise RemoteError(f"Lost the live stream of session {sid[:8]} and could not reconnect to "
                              f"{client.display_url} for {int(give_up_after)}s ({reason}). The session goes on: "
                              f"`mainsail watch {sid[:8]}` follows it again.")
        sleep(BACKOFF[min(failures, len(BACKOFF) - 1)])
        failures += 1


__all__ = ["BACKOFF", "READ_TIMEOUT", "Event", "SSEDecoder", "follow_events"]
