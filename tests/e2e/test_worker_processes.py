"""``mainsail worker --processes N``: N supervised worker processes, each registered, replaced when one
dies, all stopped by one SIGTERM; sessions run on them."""

from __future__ import annotations

import os
import signal
import time

from demo.scripted import Script, Turn
from tasks.supervisor import MIN_RUN_SECONDS
from tests.e2e.conftest import children, wait_for
from tests.fakeapi import FakeMessagesServer


def age(pid: int) -> float:
    """Seconds since process ``pid`` started (/proc: its start in clock ticks since boot)."""
    started = int(open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[19]) / os.sysconf("SC_CLK_TCK")
    return float(open("/proc/uptime").read().split()[0]) - started


def registered(cluster) -> set[int]:
    names = cluster.store.r.zrangebyscore("mainsail:workers", time.time(), "+inf")
    return {int(n.decode().partition("@")[0].removeprefix("mainsail-")) for n in names}


def test_supervised_processes_register_are_replaced_and_stop_together(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="answered")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        supervisor = cluster.start_worker("-Q", "model,tools,memory", "--processes", "2", "-c", "4")
        kids = wait_for(lambda: (lambda k: len(k) == 2 and set(k) <= registered(cluster) and k)(children(supervisor.pid)),
                        60, what="two registered children")
        assert supervisor.pid not in registered(cluster)  # the supervisor itself takes no step

        out = cluster.mainsail("-p", "hello", "--output-format", "text", cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "answered"

        # a child that dies after its first second is replaced at once (sooner is a start-up failing: a delay)
        wait_for(lambda: age(kids[0]) > MIN_RUN_SECONDS, 30, what="the child past its first second")
        os.kill(kids[0], signal.SIGKILL)  # a child dies: another takes its place
        wait_for(lambda: (lambda k: len(k) == 2 and kids[0] not in k and set(k) <= registered(cluster))(
            children(supervisor.pid)), 60, what="a replacement child")
        # the dead one is taken out (by the other child's reaper, or when its registration lapses): it could not
        # unregister itself, and stopping the others must not be what hides it
        wait_for(lambda: kids[0] not in registered(cluster), 60, what="the killed child out of the registry")
        log = (cluster.tmp / "worker-0.log").read_text()
        assert "process 1 of 2 exited with status -9; starting another now" in log  # killed: not a crash loop

        supervisor.send_signal(signal.SIGTERM)  # one signal stops them all, warm
        assert supervisor.wait(60) == 0
        assert children(supervisor.pid) == [] and registered(cluster) == set()
        assert "2 processes × concurrency 4" in (cluster.tmp / "worker-0.log").read_text()
