"""A worker killed between a run's commit and the sending of its notification: the event was recorded in the
outbox by that commit, and another worker's reaper sweep delivers it, once (real Redis, real worker processes,
the real SDK against the fake Messages API, a local receiver).

The first worker runs with ``MAINSAIL_TEST_EXIT_AFTER_OUTBOX``: it leaves with ``os._exit`` right after a commit
that recorded notification events lands, before it sends anything (as a SIGKILL at that instant would).
"""

from __future__ import annotations

import json

from demo.scripted import Script, Turn
from tests.e2e.conftest import wait_for
from tests.e2e.test_notify_budget_e2e import Receiver
from tests.fakeapi import FakeMessagesServer
from workflows.notify.outbox import EXIT_AFTER_COMMIT
from workflows.notify.subscriptions import make_subscription
from workflows.store import keys


def test_a_notification_whose_worker_died_after_the_commit_is_delivered_once_by_the_sweep(cluster, workspace):
    receiver = Receiver()
    notify = cluster.store.notify()
    sub = notify.add(make_subscription(kind="generic", url=receiver.url + "/hook", token=None,
                                       workspace=str(workspace), private_ok=True))
    cluster.env.update({"MAINSAIL_AUTO_MEMORY": "false", "MAINSAIL_SESSION_MEMORY": "false",
                        "MAINSAIL_NOTIFY_OUTBOX_GRACE_SECONDS": "0.2"})
    try:
        with FakeMessagesServer(Script(turns=[Turn(text="Done.")])) as api:
            cluster.env["ANTHROPIC_BASE_URL"] = api.url
            doomed = cluster.start_worker(env={**cluster.env, EXIT_AFTER_COMMIT: "1"})
            run = cluster.mainsail("-p", "hello", cwd=workspace)
            assert run.returncode == 0 and "Done." in run.stdout, run.stderr
            assert doomed.wait(30) == 86  # it left right after the commit that ended the run
            sid = cluster.session_id()
            [event_id] = notify.outbox()  # recorded by that commit; nothing was sent
            assert receiver.got("/hook", status=None) == []

            cluster.start_worker()  # its reaper's sweep finds the event
            [post] = wait_for(lambda: receiver.got("/hook"), 30, 0.05, "the notification, sent by the sweep")
            wait_for(lambda: cluster.store.r.get(keys.notify_delivered(event_id, sub.id)) == b"done", 30, 0.05,
                     "the delivery recorded as done")
    finally:
        receiver.stop()
    body = json.loads(post["body"])
    assert (body["type"], body["session_id"], body["id"]) == ("finished", sid, event_id)
    assert notify.outbox() == {} and notify.queued(event_id) == set()  # nothing left to send it again
    assert len(receiver.got("/hook", status=None)) == 1
