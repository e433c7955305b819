"""Following a session: replay its transcript from a given id, then tail the transcript and the live-delta
stream, one XREAD BLOCK per batch from the last ids seen, never ``$``, so nothing written between two reads
is lost (cli/feed.py).

Apart from the renderer (cli/render.py, rich): a command that follows without printing a transcript
(``mainsail -p``, the stream-json server) loads no renderer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from cli.feed import Feed, FeedThread
from workflows.models import ResultEntry
from workflows.store.entry_read import read_entry

if TYPE_CHECKING:
    from workflows.store.redis_store import Store


def follow(
    store: Store,
    sid: str,
    on_entry: Callable[[object], None],
    on_delta: Callable[[str, int, str], None] | None = None,
    *,
    after: str | None = None,
    live_after: str | None = None,
    stop: Callable[[object], bool] = lambda e: isinstance(e, ResultEntry),
    block_ms: int = 2000,
    timeout: float | None = None,
    poll: Callable[[], None] | None = None,
    on_silence: Callable[[float], None] | None = None,
    on_child: Callable[[str, object], None] | None = None,
    on_link: Callable[[str, str | None], None] | None = None,
    children_shown: set[str] | None = None,
    on_event: Callable[[dict], None] | None = None,
) -> object | None:
    """Replay then tail a session until ``stop(entry)`` is true; return that entry.

    One blocking read of both streams per batch of entries (cli/feed.py): an idle session
    costs one Redis command per ``block_ms``. Reconnects after a Redis hiccup and resumes
    from the last ids seen, so no entry is missed or repeated. ``poll`` (if given) runs
    after every batch and at least five times a second: the attached permission prompt and
    Esc read the terminal there, while a thread does the reads. ``on_silence`` gets the
    seconds since the last entry or delta after every batch (at least every ``block_ms``);
    by default it says, on stderr, what the session waits for after a few quiet seconds
    (cli/standby.py), and a command keeping a worker on standby also keeps this session's
    queues served. ``on_child`` (if given) gets ``(child session id, entry)`` for each entry of
    the session's sub-agents (Task calls), read in the same blocking reads; ``on_link`` (if given) gets
    ``(child session id, its Task call's id)`` when a sub-agent is first seen, before its entries.
    ``children_shown``: sub-agents a replay showed already (cli/replay.py); every other one is followed
    from its start, running or not (without it: those running now, and those started from now on).
    ``on_event`` (if given) gets the live entries that carry a raw event of a reply (their fields, the
    event's JSON in ``event``: published when the session asks for them); ``on_delta`` the other deltas,
    those after the live stream's id ``live_after`` (default: from now).
    """
    if on_silence is None:
        on_silence = _wait_notes(store, sid)
    feed = Feed(store, sid, after=after, deltas=on_delta is not None, children=on_child is not None,
                children_shown=children_shown, events=on_event is not None, live_after=live_after)
    if poll is not None:
        feed = FeedThread(feed)
        feed.start()
        block_ms = POLL_MS
    deadline = None if timeout is None else time.monotonic() + timeout
    heard = time.monotonic()
    try:
        while True:
            wait = block_ms if deadline is None else max(1, min(block_ms, int((deadline - time.monotonic()) * 1000)))
            batch = feed.next(wait)
            if batch is not None and (batch.entries or batch.deltas or batch.children or batch.links):
                heard = time.monotonic()
                for child, call in batch.links if on_link is not None else ():
                    on_link(child, call)
                for kind, item in batch.items:  # deltas, entries and sub-agents' entries in the order they happened
                    if kind == "child":
                        on_child(item[0], read_entry(item[0], item[1]))
                        continue
                    if kind == "delta":
                        if on_event is not None and "event" in item:
                            on_event(item)
                        elif on_delta is not None:
                            on_delta(item.get("step", ""), int(item.get("attempt", 0)), item.get("text", ""))
                        continue
                    entry = read_entry(sid, item[2], item[0], item[1])
                    on_entry(entry)
                    if stop(entry):
                        return entry
            if poll is not None:
                poll()
            on_silence(time.monotonic() - heard)
            if deadline is not None and time.monotonic() > deadline:
                return None
    finally:
        feed.close()


#: How often a follower with a ``poll`` looks at the terminal (its reads block in a thread meanwhile).
POLL_MS = 200


def _wait_notes(store: Store, sid: str) -> Callable[[float], None]:
    from cli import standby

    keeper = standby.current()
    if keeper is not None:
        keeper.watch(sid)
    notes = keeper.notes if keeper is not None else standby.WaitNotes(store, 2.0, lambda: False)
    return lambda quiet: notes.note(sid, quiet)
