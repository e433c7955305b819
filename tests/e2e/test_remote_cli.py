"""The installed `mainsail` against a real `mainsail serve`: a teammate with only MAINSAIL_SERVER and
MAINSAIL_TOKEN (no Redis URL, a private HOME and data dir, so no Redis can be found or started) runs
sessions on real workers through the HTTP API, and a watch survives the server's restart."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models import PermissionDecisionEntry

pytestmark = pytest.mark.e2e

COMMAND = "echo approved > approved.txt"


def ask(text: str = "Now the command.") -> Turn:
    return Turn(text=text, tool_uses=[ToolUse(name="Bash", input={"command": COMMAND})])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mainsail serve --no-worker` on a fixed port (restartable), and the teammate's CLI."""

    def __init__(self, cluster, tmp: Path) -> None:
        self.cluster, self.tmp = cluster, tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = self.create_token("teammate")
        self.proc: subprocess.Popen | None = None

    def create_token(self, name: str, *flags: str) -> str:
        out = self.cluster.mainsail("token", "create", "--name", name, *flags, cwd=self.tmp)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()[0]

    def start(self) -> None:
        with open(self.tmp / "serve.log", "ab") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen([MAINSAIL, "serve", "--port", str(self.port), "--no-worker"],
                                         env=self.cluster.env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.cluster.procs.append(self.proc)

        def answers() -> bool:
            assert self.proc.poll() is None, (self.tmp / "serve.log").read_text()
            try:
                return httpx.get(f"{self.url}/api/sessions", headers={"Authorization": f"Bearer {self.token}"},
                                 timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(answers, 90, interval=0.2, what="mainsail serve to answer")

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def env(self, token: str | None = None, url: str | None = None) -> dict:
        home = self.tmp / "teammate"
        (home / "home").mkdir(parents=True, exist_ok=True)
        return {"PATH": os.environ["PATH"], "HOME": str(home / "home"), "MAINSAIL_DATA_DIR": str(home / "data"),
                "MAINSAIL_SERVER": url or self.url, "MAINSAIL_TOKEN": token or self.token,
                "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "MAINSAIL_WARM": "false"}

    def mainsail(self, *args: str, token: str | None = None, url: str | None = None):
        return subprocess.run([MAINSAIL, *args], env=self.env(token, url), cwd=self.tmp, capture_output=True,
                              text=True, timeout=120, check=False)

    def watch(self, sid: str, name: str = "watch") -> tuple[subprocess.Popen, Path, Path]:
        out, err = self.tmp / f"{name}.out", self.tmp / f"{name}.err"
        proc = subprocess.Popen([MAINSAIL, "watch", sid], env=self.env(), cwd=self.tmp, stdout=out.open("wb"),
                                stderr=err.open("wb"))
        self.cluster.procs.append(proc)
        return proc, out, err


@pytest.fixture
def server(cluster, tmp_path):
    s = Server(cluster, tmp_path)
    s.start()
    return s


def state(cluster, sid: str) -> str:
    return cluster.store.get_session(sid).state.value


def submit(server, workspace, prompt: str = "Run the command") -> str:
    out = server.mainsail("submit", "--cwd", str(workspace), prompt)
    assert out.returncode == 0, out.stderr
    sid = out.stdout.strip()
    assert f"Watch it with: mainsail watch {sid[:8]}" in out.stderr
    return sid


def test_a_teammate_submits_watches_approves_and_sends_through_the_server(cluster, server, workspace):
    with FakeMessagesServer(Script(turns=[ask(), Turn(text="Finished."), Turn(text="Second reply.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        sid = submit(server, workspace)
        watch, out, err = server.watch(sid[:8])
        wait_for(lambda: state(cluster, sid) == "awaiting_permission", 60, what="the session to ask")
        listed = server.mainsail("sessions")
        assert listed.returncode == 0 and sid[:8] in listed.stdout and "awaiting_permission" in listed.stdout
        assert str(workspace) in listed.stdout
        pending = server.mainsail("pending")
        (req,) = cluster.store.get_session(sid).pending_requests()
        assert pending.returncode == 0 and req.id in pending.stdout and COMMAND in pending.stdout
        assert f"mainsail approve {sid[:8]} {req.id}" in pending.stdout
        assert not (workspace / "approved.txt").exists()
        approved = server.mainsail("approve", sid[:8])
        assert approved.returncode == 0, approved.stderr
        assert f"Approved Bash: {COMMAND} (session {sid[:8]}, request {req.id})." in approved.stdout
        assert watch.wait(90) == 0, err.read_text()
        shown = out.read_text()
        assert "> Run the command" in shown and "⏺ Bash(echo approved > approved.txt)" in shown
        assert f"waiting for approval (request {req.id})" in shown and "Finished." in shown
        assert f"✓ session {sid[:8]}" in shown
        assert (workspace / "approved.txt").read_text() == "approved\n"
        (decision,) = [e for e in cluster.store.entries(sid) if isinstance(e, PermissionDecisionEntry)]
        assert (decision.decision, decision.decider) == ("allow", "token:teammate")
        assert "approved by token:teammate" in shown
        assert cluster.store.get_session(sid).permission_requests[0].decided_by == "token:teammate"
        wait_for(lambda: state(cluster, sid) == "idle", 60, what="the session to be idle")

        shown = server.mainsail("show", sid[:8])
        assert shown.returncode == 0, shown.stderr
        assert f"session     {sid}" in shown.stdout and "state       idle" in shown.stdout
        assert f"workspace   {workspace}" in shown.stdout and "Finished." in shown.stdout

        sent = server.mainsail("send", sid[:8], "And again")
        assert sent.returncode == 0 and f"Session {sid[:8]}:" in sent.stdout, sent.stderr
        again = server.mainsail("watch", sid[:8])
        assert again.returncode == 0 and "> And again" in again.stdout and "Second reply." in again.stdout
        assert again.stdout.count("> Run the command") == 1


def test_deny_with_a_message_and_cancel_through_the_server(cluster, server, workspace):
    with FakeMessagesServer(Script(turns=[ask(), Turn(text="Not running it, then."), ask("Trying again.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        sid = submit(server, workspace)
        wait_for(lambda: state(cluster, sid) == "awaiting_permission", 60, what="the session to ask")
        denied = server.mainsail("deny", sid[:8], "-m", "not on this machine")
        assert denied.returncode == 0 and denied.stdout.startswith(f"Denied Bash: {COMMAND}"), denied.stderr
        wait_for(lambda: state(cluster, sid) in ("idle", "extracting"), 60, what="the session to answer")
        assert any("not on this machine" in str(r["messages"][-1]) for r in api.requests)
        assert not (workspace / "approved.txt").exists()

        server.mainsail("send", sid[:8], "Try once more")
        wait_for(lambda: state(cluster, sid) == "awaiting_permission", 60, what="the session to ask again")
        cancelled = server.mainsail("cancel", sid[:8])
        assert cancelled.returncode == 0 and sid[:8] in cancelled.stdout, cancelled.stderr
        wait_for(lambda: state(cluster, sid) == "idle", 60, what="the session to be idle after cancel")
        assert not (workspace / "approved.txt").exists()
        nothing = server.mainsail("pending")
        assert nothing.stdout.strip() == "No pending permission requests."


def test_export_and_compact_through_the_server(cluster, server, workspace):
    from workflows.compaction.run import SUMMARY_SYSTEM

    def model(body: dict) -> Turn:
        if body["system"][0]["text"] == SUMMARY_SYSTEM:
            return Turn(text="<summary>REMOTE SUMMARY</summary>")
        return Turn(text="Hello there.")

    with FakeMessagesServer(model) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        sid = submit(server, workspace, "Say hello")
        wait_for(lambda: state(cluster, sid) == "idle" and cluster.store.get_session(sid).turns == 1, 60,
                 what="the session to answer")
        out = server.mainsail("export", sid[:8])
        assert out.returncode == 0, out.stderr
        lines = [line for line in out.stdout.splitlines() if line]
        assert lines and all(f'"sessionId":"{sid}"' in line for line in lines) and "Hello there." in out.stdout
        target = server.tmp / "exported.jsonl"
        saved = server.mainsail("export", sid[:8], "-o", str(target))
        assert saved.returncode == 0 and target.read_text() == out.stdout, saved.stderr
        assert f"of session {sid[:8]} to {target}" in saved.stderr
        compacted = server.mainsail("compact", sid[:8])
        assert compacted.returncode == 0, compacted.stderr
        assert compacted.stdout.strip() and "Error" not in compacted.stdout
        assert any(body["system"][0]["text"] == SUMMARY_SYSTEM for body in api.requests)


def test_refusals_are_clear_messages(cluster, server, workspace):
    wrong = server.mainsail("sessions", token="mst_not-a-real-token")
    assert wrong.returncode == 1 and wrong.stderr.startswith("Error: The server refused MAINSAIL_TOKEN:")
    assert "mst_not-a-real-token" not in wrong.stderr and "Traceback" not in wrong.stderr
    down = server.mainsail("sessions", url=f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 1 and "Cannot reach the Mainsail server at http://127.0.0.1:" in down.stderr
    assert "check MAINSAIL_SERVER" in down.stderr and "Traceback" not in down.stderr
    reader = server.create_token("reader", "--read-only")
    ro = server.mainsail("submit", "--cwd", str(workspace), "hi", token=reader)
    assert ro.returncode == 1 and "read-only" in ro.stderr
    missing = server.mainsail("show", "nosuchsession")
    assert missing.returncode == 1 and "No session 'nosuchsession'" in missing.stderr
    local = server.mainsail("run", "hi")  # needs Redis: said, not an embedded Redis started here
    assert local.returncode == 1 and "needs direct access to Redis" in local.stderr
    assert not (server.tmp / "teammate" / "data").exists()


def test_a_watch_survives_a_server_restart_and_shows_nothing_twice(cluster, server, workspace):
    with FakeMessagesServer(Script(turns=[ask("Before the restart."), Turn(text="After the restart.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        sid = submit(server, workspace)
        watch, out, err = server.watch(sid)
        wait_for(lambda: "waiting for approval" in out.read_text(), 90, what="the watch to show the request")
        server.kill()
        wait_for(lambda: "reconnecting" in err.read_text(), 60, what="the watch to notice the drop")
        assert watch.poll() is None
        server.start()
        approved = server.mainsail("approve", sid[:8])
        assert approved.returncode == 0, approved.stderr
        assert watch.wait(120) == 0, err.read_text()
        shown = out.read_text()
        for once in ("> Run the command", "Before the restart.", "waiting for approval", "After the restart.",
                     f"✓ session {sid[:8]}"):
            assert shown.count(once) == 1, (once, shown)
        assert shown.index("waiting for approval") < shown.index("After the restart.")
        assert "(reconnected)" in err.read_text()


def test_schedules_through_the_server(cluster, server, workspace):
    """`mainsail schedule add/list/show/run/disable/enable/rm` as a teammate: the same output as locally,
    the schedule in the server's Redis, a run by hand a real session; read-only and other-workspace
    tokens refused."""
    from workflows.store.schedules import ScheduleStore

    with FakeMessagesServer(Script(turns=[Turn(text="Nightly report.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        relative = server.mainsail("schedule", "add", "0 3 * * *", "--cwd", "repo", "Report")
        assert relative.returncode == 2 and "give an absolute path on the server's machine" in relative.stderr
        added = server.mainsail("schedule", "add", "0 3 * * *", "--cwd", str(workspace), "--name", "nightly",
                                "--permission-mode", "acceptEdits", "--max-turns", "4", "Write the report")
        assert added.returncode == 0, added.stderr
        sid = added.stdout.strip()
        assert f"Schedule {sid[:8]} (nightly): '0 3 * * *' in {workspace}, next run" in added.stderr
        (stored,) = ScheduleStore(cluster.store.r).all()
        assert (stored.id, stored.options.permission_mode, stored.options.max_turns) == (sid, "acceptEdits", 4)
        assert stored.created_by == "token:teammate"
        bad = server.mainsail("schedule", "add", "61 3 * * *", "--cwd", str(workspace), "x")
        assert bad.returncode == 1 and "Invalid cron expression '61 3 * * *'" in bad.stderr

        listed = server.mainsail("schedule", "list")
        assert listed.returncode == 0 and f"{sid[:8]}  nightly" in listed.stdout and str(workspace) in listed.stdout
        ran = server.mainsail("schedule", "run", "nightly")
        assert ran.returncode == 0, ran.stderr
        session = ran.stdout.strip()
        wait_for(lambda: state(cluster, session) == "idle" and cluster.store.get_session(session).turns == 1, 60,
                 what="the scheduled session to answer")
        assert cluster.store.get_session(session).permission_mode.value == "acceptEdits"
        disabled = server.mainsail("schedule", "disable", sid[:8])
        assert disabled.stdout.strip() == f"Schedule {sid[:8]} (nightly) disabled: it fires no more until enabled."
        shown = server.mainsail("schedule", "show", sid[:8])
        assert shown.returncode == 0 and "enabled    no" in shown.stdout and "next run   -" in shown.stdout
        assert f"by hand: session {session[:8]}" in shown.stdout and "max_turns=4" in shown.stdout
        enabled = server.mainsail("schedule", "enable", sid[:8])
        assert enabled.stdout.startswith(f"Schedule {sid[:8]} (nightly) enabled: next run ")

        reader = server.create_token("reader", "--read-only")
        ro = server.mainsail("schedule", "rm", sid[:8], token=reader)
        assert ro.returncode == 1 and "read-only" in ro.stderr and "change schedules" in ro.stderr
        (server.tmp / "other-repo").mkdir()
        elsewhere = server.create_token("elsewhere", "--workspace", str(server.tmp / "other-repo"))
        hidden = server.mainsail("schedule", "show", sid[:8], token=elsewhere)
        assert hidden.returncode == 1 and f"No schedule '{sid[:8]}' visible to token 'elsewhere'" in hidden.stderr
        removed = server.mainsail("schedule", "rm", sid[:8])
        assert removed.stdout.strip() == f"Removed schedule {sid[:8]} (nightly)."
        assert ScheduleStore(cluster.store.r).all() == []
        assert not (server.tmp / "teammate" / "data").exists()
