"""When the client of a print-mode run goes away, the run's turn is interrupted, as in Claude Code.

Claude Code 2.1.332 (``-p``, measured against the fake Messages API during a tool call):

- SIGTERM or SIGHUP: the tool is stopped, no further model call is made, no ``result`` line is written,
  and the process exits with 128 + the signal's number (143, 129);
- SIGINT: the turn is interrupted and ends with its ``result`` (``error_during_execution``);
- the end of stdin is not a departure: the turns already given run to their results (a program that
  writes its prompt and closes stdin gets its answer). The Agent SDK's client, when its context exits,
  closes stdin, waits 5 seconds, then sends SIGTERM.

:func:`interrupt_on_leave` does the same for ``mainsail -p``, whose session otherwise goes on in the
workers: SIGTERM and SIGHUP stop the session's turn (``SessionService.stop``, the queued messages
dropped: nobody is left to read their answers) and exit with 128 + the signal; SIGINT stops the turn and
the run follows it to its interrupted result (a second SIGINT leaves at once, exit 130). A session
started detached (``submit``, ``run --background``) has no such process: it goes on.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

#: The signals that mean the client went away (Claude Code exits on them without a result line).
LEAVING = (signal.SIGTERM, signal.SIGHUP)
#: Why the transcript says the turn stopped.
LEFT_REASON = "Interrupted: the client went away"
INTERRUPT_REASON = "Interrupted by the user"


class ClientLeft(BaseException):
    """A signal said the client went away (a BaseException: no ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def interrupt_on_leave(sid: str, stop: Callable[[str], None]) -> Iterator[None]:
    """While the block runs (following session ``sid``), a leaving signal calls ``stop(reason)`` and exits
    with 128 + the signal's number; SIGINT calls ``stop`` (in a thread: a Redis call must not run inside a
    signal handler, which may have interrupted one) and lets the block go on to the interrupted result.
    Outside the main thread (where no signal handler can be set) the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = threading.Event()

    def on_leave(signum, frame) -> None:
        raise ClientLeft(signum)

    def on_interrupt(signum, frame) -> None:
        if interrupted.is_set():
            raise ClientLeft(signum)
        interrupted.set()
        threading.Thread(target=_stop, args=(sid, stop, INTERRUPT_REASON), name="mainsail-interrupt",
                         daemon=True).start()

    previous = {s: signal.signal(s, on_leave) for s in LEAVING}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    except ClientLeft as left:
        for s in previous:  # a second signal while the turn is being stopped changes nothing
            signal.signal(s, signal.SIG_IGN)
        _stop(sid, stop, LEFT_REASON)
        try:
            sys.stdout.flush()
        except (OSError, ValueError):  # the client closed its end
            pass
        raise SystemExit(128 + left.signum) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop(sid: str, stop: Callable[[str], None], reason: str) -> None:
    try:
        stop(reason)
    except Exception as exc:  # noqa: BLE001 - leaving anyway; say what was not done
        print(f"mainsail: could not interrupt the turn of session {sid[:8]} ({type(exc).__name__}: {exc}); it "
              f"may go on: stop it with `mainsail cancel {sid[:8]}`.", file=sys.stderr)


__all__ = ["ClientLeft", "INTERRUPT_REASON", "LEAVING", "LEFT_REASON", "interrupt_on_leave"]
