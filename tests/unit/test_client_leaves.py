"""A print-mode client leaving (SIGTERM, SIGHUP) stops the session's turn and exits 128 + the signal, as Claude
Code does; SIGINT stops the turn and lets the run go on to its result (cli/headless/leave.py)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from cli.headless.leave import INTERRUPT_REASON, LEFT_REASON, interrupt_on_leave


@pytest.fixture(autouse=True)
def main_thread():
    """Signal handlers are set only in the main thread: elsewhere the signals sent here would kill the runner."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers need the main thread")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_leaving_signal_stops_the_turn_and_exits_with_its_code(sig):
    before = signal.getsignal(sig)
    stopped: list[str] = []
    with pytest.raises(SystemExit) as exit_:
        with interrupt_on_leave("s1", stopped.append):
            os.kill(os.getpid(), sig)
            threading.Event().wait(5)  # the handler raises here, at once
    assert exit_.value.code == 128 + sig and stopped == [LEFT_REASON]
    assert signal.getsignal(sig) is before, "the handlers are put back"


def test_sigint_stops_the_turn_and_the_run_goes_on_until_its_result():
    stopped = threading.Event()
    reasons: list[str] = []

    def stop(reason: str) -> None:
        reasons.append(reason)
        stopped.set()

    with interrupt_on_leave("s1", stop):
        os.kill(os.getpid(), signal.SIGINT)
        assert stopped.wait(5)  # (no KeyboardInterrupt: the block goes on)
    assert reasons == [INTERRUPT_REASON]


def test_a_stop_that_fails_is_reported_and_the_process_still_leaves(capsys):
    def stop(reason: str) -> None:
        raise ConnectionError("Redis is down")

    with pytest.raises(SystemExit) as exit_:
        with interrupt_on_leave("1a2b3c4d5e", stop):
            os.kill(os.getpid(), signal.SIGTERM)
            threading.Event().wait(5)
    assert exit_.value.code == 143
    err = capsys.readouterr().err
    assert "session 1a2b3c4d" in err and "mainsail cancel 1a2b3c4d" in err and "Redis is down" in err
