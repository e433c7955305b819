"""``mainsail watch`` runs a worker as ``run`` does, and ``watch``/``show``/``sessions`` say when a
working session has no live worker consuming its queue (issue 26, item 12), with real processes."""

from __future__ import annotations

import select
import time

import pytest

from demo.scripted import Script, Turn
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e


def read_until(stream, text: str, timeout: float = 60) -> str:
    """What ``stream`` (a pipe) gave until ``text`` appeared in it."""
    seen, deadline = "", time.monotonic() + timeout
    while text not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{text!r} never came; got: {seen!r}"
        ready, _, _ = select.select([stream], [], [], left)
        if ready:
            line = stream.readline()
            assert line, f"the stream ended before {text!r}; got: {seen!r}"
            seen += line
    return seen


def test_a_session_nobody_serves_is_said_and_watch_runs_a_worker(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="Answered while watched.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        submitted = cluster.mainsail("submit", "Say something", cwd=workspace)  # no worker anywhere
        assert submitted.returncode == 0, submitted.stderr
        sid = cluster.wait_state("querying")
        note = (f"Session {sid[:8]} is querying but no live worker consumes its queue model: nothing happens "
                f"until one runs. Start one: `mainsail worker`")
        shown = cluster.mainsail("show", sid[:8], "--no-transcript", cwd=workspace)
        assert f"{note} (or `mainsail watch {sid[:8]}`, which runs one while it watches)." in shown.stdout, shown.stdout
        listed = cluster.mainsail("sessions", cwd=workspace)
        assert note in listed.stdout, listed.stdout

        # Opted out (the cluster's MAINSAIL_EMBEDDED_WORKER=false): watch runs none, and says why nothing moves.
        opted_out = cluster.mainsail("watch", sid[:8], cwd=workspace, background=True)
        read_until(opted_out.stderr, f"{note} (MAINSAIL_EMBEDDED_WORKER=false, so this watch runs none).")
        opted_out.terminate()
        opted_out.wait(30)
        assert cluster.store.get_session(sid).state.value == "querying"

        # As run does: no live worker serves the session, so watch runs one and follows it to the answer.
        cluster.env["MAINSAIL_EMBEDDED_WORKER"] = "true"
        watched = cluster.mainsail("watch", sid[:8], cwd=workspace, timeout=120)
        assert watched.returncode == 0, watched.stdout + watched.stderr
        assert "Answered while watched." in watched.stdout
        assert "No worker is listening; running one in this process." in watched.stderr
        assert cluster.store.get_session(sid).state.value == "idle"
        after = cluster.mainsail("show", sid[:8], "--no-transcript", cwd=workspace)
        assert "no live worker" not in after.stdout
