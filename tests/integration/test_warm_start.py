"""Warm start (cli/warm/): a command the warm server runs prints what it prints without the server, byte for
byte, with the same exit status; it gets the client's environment, directory, stdin and signals; it dies
with its client; and the server refuses a client confined otherwise than itself (a sandbox), a stale server
leaves, an idle one too. The oracle of "it ran warm" is the server's log (one line per command it runs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import _STARTED_DIRS

pytestmark = pytest.mark.integration

MAINSAIL = shutil.which("mainsail")
if MAINSAIL is None:
    pytest.skip("the mainsail command is not installed (pip install -e .)", allow_module_level=True)


class Warm:
    """A warm directory of the test's own, the environment that uses it, and the server's log."""

    def __init__(self, directory: Path, env: dict) -> None:
        self.dir = directory
        self.env = env

    def log(self) -> str:
        return "".join(p.read_text(errors="replace") for p in self.dir.glob("*.log"))

    def ran(self) -> int:
        return self.log().count("] running ")

    def pid(self) -> int:
        pids = [int(p.read_text()) for p in self.dir.glob("*.pid")]
        return pids[0] if pids else 0

    def run(self, args: list[str], env: dict | None = None, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([MAINSAIL, *args], env=env or self.env, capture_output=True, text=True, timeout=120,
                              **{"cwd": self.dir.parent, **kw})

    def start(self) -> int:
        """Start the server (the first command starts it) and wait until it listens."""
        self.run(["sessions"])
        deadline = time.monotonic() + 120
        while not self.pid():
            assert time.monotonic() < deadline, f"the warm server did not start: {self.log()}"
            time.sleep(0.05)
        return self.pid()

    def both(self, args: list[str], **kw) -> subprocess.CompletedProcess:
        """Run ``args`` without the server, then with it; the two equal (output, errors, exit), and the
        server ran the second."""
        env, warm_env = kw.pop("env", self.env), kw.pop("warm_env", self.env)
        cold = self.run(args, env={**env, "MAINSAIL_WARM": "false"}, **kw)
        before = self.ran()
        warm = self.run(args, env=warm_env, **kw)
        assert self.ran() == before + 1, self.log()
        assert (warm.returncode, _timeless(warm.stdout), warm.stderr) == (cold.returncode, _timeless(cold.stdout),
                                                                          cold.stderr), args
        assert "Traceback" not in warm.stderr
        return warm


def _timeless(text: str) -> str:
    """``show``'s "last active 1s ago" may tick between the two runs."""
    return re.sub(r"\b\d+s ago\b", "Ns ago", text)


@pytest.fixture
def warm(redis_server, real_redis, tmp_path):
    directory = Path(tempfile.mkdtemp(prefix="msw-", dir="/tmp"))  # (short: AF_UNIX paths are 107 bytes at most)
    _STARTED_DIRS.append(str(directory))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
    env.update(MAINSAIL_REDIS_URL=redis_server.url, MAINSAIL_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path),
               MAINSAIL_WARM="true", MAINSAIL_WARM_DIR=str(directory / "w"), MAINSAIL_EMBEDDED_WORKER="false",
               ANTHROPIC_API_KEY="unused")
    w = Warm(directory / "w", env)
    yield w
    subprocess.run([MAINSAIL, "warm", "stop"], env=env, capture_output=True, timeout=60)
    shutil.rmtree(directory, ignore_errors=True)


def submit(w: Warm, prompt: str = "hello") -> str:
    made = w.run(["submit", prompt, "--model", "scripted:demo"], env={**w.env, "MAINSAIL_WARM": "false"})
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_commands_print_what_they_print_cold(warm):
    warm.start()
    sid = submit(warm)
    for args in (["sessions"], ["sessions", "--state", "idle"], ["show", sid, "--no-transcript"], ["show", sid],
                 ["pending"], ["show", "nope"], ["approve", sid], ["send", sid, "--clear"], ["sessions", "--json"]):
        warm.both(args)
    assert warm.both(["show", "nope"]).returncode == 1


def test_the_environment_and_directory_are_the_clients(warm, redis_server, tmp_path):
    """One server serves two Redis databases and two directories: each command reads its own."""
    warm.start()
    sid = submit(warm)
    other = {**warm.env, "MAINSAIL_REDIS_URL": redis_server.url.rsplit("/", 1)[0] + "/1"}
    assert sid[:8] in warm.both(["sessions"]).stdout
    assert warm.both(["sessions"], env=other, warm_env=other).stdout.startswith("No sessions")
    (tmp_path / "elsewhere").mkdir()
    here = warm.both(["sessions", "--here"], cwd=tmp_path / "elsewhere").stdout
    assert sid[:8] not in here


def test_print_mode_reads_stdin_and_runs_a_worker_of_its_own(warm, tmp_path):
    """`-p` reads its prompt from the client's stdin (the descriptor itself) and, with no worker about, runs
    one in its own process (threads, Celery) as cold; a usage error exits 2 with click's text, as cold."""
    warm.start()
    assert warm.both(["-p", "--output-format", "nonsense"], input="").returncode == 2
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bench.txt").write_text("one\ntwo\n")
    env = {**warm.env, "MAINSAIL_EMBEDDED_WORKER": "true"}
    args = ["-p", "--model", "scripted:read_loop:2", "--permission-mode", "bypassPermissions", "--output-format",
            "json"]
    results = []
    for run_env in ({**env, "MAINSAIL_WARM": "false"}, env):
        before = warm.ran()
        out = warm.run(args, env=run_env, cwd=ws, input="Read bench.txt twice.")
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout.strip().splitlines()[-1])
        results.append((result["result"], result["num_turns"], result["is_error"], out.stderr))
    assert warm.ran() == before + 1
    assert results[0] == results[1]
    assert results[0][1] == 3 and not results[0][2]


def test_a_signal_reaches_the_command_and_its_end_is_the_clients(warm):
    """Ctrl-C (SIGINT to the client) reaches the command: `watch` detaches and says so, as cold."""
    warm.start()
    sid = submit(warm)
    outs = []
    for env in ({**warm.env, "MAINSAIL_WARM": "false"}, warm.env):
        before = warm.ran()
        proc = subprocess.Popen([MAINSAIL, "watch", sid], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        first = proc.stdout.readline()  # (it is following once the replay is printed,
        note = proc.stderr.readline()  # and it has said that no worker serves the session)
        assert "no live worker" in note
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        outs.append((proc.returncode, first + out, note + err))
        if env is warm.env:
            assert warm.ran() == before + 1
    assert outs[0] == outs[1]


def test_a_killed_client_takes_its_command_along(warm):
    warm.start()
    sid = submit(warm)
    proc = subprocess.Popen([MAINSAIL, "watch", sid], env=warm.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    command = int(warm.log().rsplit("as process ", 1)[1].split()[0])
    assert Path(f"/proc/{command}").exists()
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while _alive(command):
        assert time.monotonic() < deadline, "the command outlived its killed client"
        time.sleep(0.02)
    assert "left; killed the command" in warm.log()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_the_server_holds_nothing_a_command_could_inherit(warm):
    """One thread (a fork copies only the calling one), and no descriptor but its own three and the null
    device: what a command inherits is the client's."""
    pid = warm.start()
    assert len(os.listdir(f"/proc/{pid}/task")) == 1
    targets = sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    assert targets.count("/dev/null") == 3
    others = [t for t in targets if t != "/dev/null"]
    assert len(others) == 3, targets  # (its log, its lock, its listening socket)
    assert sum(t.startswith("socket:") for t in others) == 1
    assert sorted(Path(t).suffix for t in others if not t.startswith("socket:")) == [".lock", ".log"]


def test_the_server_keeps_none_of_its_first_clients_secrets(warm):
    """It lives for long: started with what the interpreter reads at start, PATH and HOME only (each command
    brings its own environment)."""
    warm.env.update(ANTHROPIC_API_KEY="sk-first-client", MAINSAIL_TOKEN="tok-first-client", LC_TIME="C")
    pid = warm.start()
    names = {entry.split(b"=", 1)[0].decode() for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
             if entry}
    assert "ANTHROPIC_API_KEY" not in names and "MAINSAIL_TOKEN" not in names and "MAINSAIL_REDIS_URL" not in names
    assert {"PATH", "HOME", "LC_TIME"} <= names


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_sandboxed_client_is_refused(warm):
    """A client in other namespaces (here bwrap's PID namespace, as the Bash sandbox runs commands) would have
    its command run outside of them: refused, and it runs the command itself, as it would have."""
    warm.start()
    probe = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "true"],
                           capture_output=True)
    if probe.returncode:
        pytest.skip(f"bwrap cannot make a PID namespace here: {probe.stderr.decode()[:200]}")
    before = warm.ran()
    cold = warm.run(["sessions"], env={**warm.env, "MAINSAIL_WARM": "false"})
    boxed = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", MAINSAIL, "sessions"],
                           env=warm.env, capture_output=True, text=True, timeout=120, cwd=warm.dir.parent)
    assert (boxed.returncode, boxed.stdout, boxed.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.ran() == before
    assert _refused_either_side(warm.log(), "ns/pid")


@pytest.mark.parametrize("wrapper, differs", [
    (["prlimit", "--nofile=256:256"], "limits"), (["setpriv", "--no-new-privs"], "NoNewPrivs"),
    (["nice", "-n", "5"], "nice"), (["taskset", "-c", "0"], "Cpus_allowed_list"),
])
def test_a_client_with_other_limits_or_privileges_is_refused(warm, wrapper, differs):
    if shutil.which(wrapper[0]) is None:
        pytest.skip(f"{wrapper[0]} is not installed")
    if wrapper[0] == "taskset" and (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: no narrower affinity to set")
    warm.start()
    before = warm.ran()
    out = subprocess.run([*wrapper, MAINSAIL, "sessions"], env=warm.env, capture_output=True, text=True,
                         timeout=120, cwd=warm.dir.parent)
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert warm.ran() == before
    assert _refused_either_side(warm.log(), differs)


def test_changed_code_retires_the_server(warm, tmp_path):
    """A directory on sys.path that changes (a library installed, upgraded or removed) makes the server
    refuse and leave; the command runs cold, and the next one starts a fresh server."""
    extra = tmp_path / "site"
    extra.mkdir()
    warm.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra), warm.env.get("PYTHONPATH")]))
    first = warm.start()
    time.sleep(0.01)  # (the directory's mtime must move: filesystems stamp in ns, some in coarser ticks)
    (extra / "new_library.py").write_text("")
    os.utime(extra, ns=(time.time_ns(), time.time_ns() + 10**9))
    out = warm.run(["sessions"])
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert "the code changed on disk" in warm.log() or warm.pid() != first
    deadline = time.monotonic() + 120
    while warm.pid() in (0, first):
        assert time.monotonic() < deadline, "no fresh server started"
        time.sleep(0.05)
    assert not _alive(first)


def test_an_idle_server_leaves(warm):
    warm.env["MAINSAIL_WARM_IDLE"] = "1"
    pid = warm.start()
    deadline = time.monotonic() + 60
    while _alive(pid):
        assert time.monotonic() < deadline, "the idle server did not leave"
        time.sleep(0.05)
    assert not list(warm.dir.glob("*.sock"))
    assert "idle for 1s" in warm.log()


def test_status_and_stop(warm):
    assert "none running" in warm.run(["warm", "status"]).stdout
    pid = warm.start()
    status = warm.run(["warm", "status"]).stdout
    assert f"pid {pid}" in status and "MiB resident" in status
    assert warm.run(["warm", "stop"]).stdout.strip() == "stopped 1 warm server"
    assert not _alive(pid)
    assert "none running" in warm.run(["warm", "status", ], env={**warm.env, "MAINSAIL_WARM": "false"}).stdout


def test_a_client_that_gives_up_on_a_stopped_server_runs_once(warm, real_redis):
    """A server that does not answer (here SIGSTOPped) is given up after the greeting's timeout: the client
    sends the message itself, and returns (its stdout is not held in flight by the stopped server: the
    client hands nothing over before the greeting). The server, continued, finds the client gone and runs
    nothing. The oracle is the session's inbox: one message."""
    from workflows.store import keys

    pid = warm.start()
    sid = submit(warm)
    os.kill(pid, signal.SIGSTOP)
    try:
        out = warm.run(["send", sid, "only once"])
    finally:
        os.kill(pid, signal.SIGCONT)
    assert out.returncode == 0, out.stderr
    deadline = time.monotonic() + 60
    while "a client left before its request was read" not in warm.log():
        assert time.monotonic() < deadline, warm.log()
        time.sleep(0.05)
    assert "running 'send" not in warm.log()
    assert sum(b"only once" in m for m in real_redis.lrange(keys.inbox(sid), 0, -1)) == 1


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM)])
def test_a_signal_before_the_command_began_ends_the_client_and_nothing_runs(warm, real_redis, sig, code):
    """Ctrl-C (or a SIGTERM) while the client waits for a server (stopped here) ends the client as it would
    have ended a command that had not begun; the server, continued, runs nothing."""
    from workflows.store import keys

    pid = warm.start()
    sid = submit(warm)
    os.kill(pid, signal.SIGSTOP)
    try:
        proc = subprocess.Popen([MAINSAIL, "send", sid, "never"], env=warm.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not _connected(proc.pid):  # (it waits for the greeting)
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.01)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert proc.returncode == code, err
    assert "Traceback" not in err and ("Interrupted." in err if sig == signal.SIGINT else True)
    assert warm.run(["sessions"]).returncode == 0
    assert "running 'send" not in warm.log()
    assert not any(b"never" in m for m in real_redis.lrange(keys.inbox(sid), 0, -1))


def _connected(pid: int) -> bool:
    """Process ``pid`` holds a Unix socket (the client's connection to the server)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:") for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def test_a_client_without_the_servers_key_is_refused(warm, tmp_path):
    """A process that cannot read the warm directory (a confinement /proc does not show, as Landlock's) has
    no key: refused, whatever else it sends."""
    import socket as socket_

    from cli.warm import protocol

    warm.start()
    before = warm.ran()
    sock_path = next(warm.dir.glob("*.sock"))
    assert oct(sock_path.with_suffix(".key").stat().st_mode & 0o777) == "0o600"
    with socket_.socket(socket_.AF_UNIX, socket_.SOCK_STREAM) as sock:
        sock.connect(str(sock_path))
        replies = protocol.Replies(sock)
        assert replies.next() == protocol.HELLO
        cwd = os.open(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
        protocol.send_request(sock, {"key": "0" * 64, "argv": ["mainsail", "sessions"], "env": {}, "umask": 0o22,
                                     "streams": [False, False, False]}, [cwd])
        os.close(cwd)
        reply = replies.next()
    assert reply == {"refused": "refused", "stale": False}  # (a stranger is told nothing more)
    assert "did not present this server's key" in warm.log() and warm.ran() == before


def test_an_ignored_hangup_stays_ignored(warm):
    """`nohup mainsail ...`: the client leaves an ignored signal alone and the command ignores it too, as a
    process of its own would (here `watch`, which a SIGHUP would otherwise end)."""
    warm.start()
    sid = submit(warm)
    before = warm.ran()
    proc = subprocess.Popen(["nohup", MAINSAIL, "watch", sid], env=warm.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()
        assert warm.ran() == before + 1
        proc.send_signal(signal.SIGHUP)
        proc.send_signal(signal.SIGINT)  # (what does end it: the HUP before it was ignored, else -1 here)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Detached" in out + err


def _refused_either_side(log: str, field: str) -> bool:
    """The client saw the server confined otherwise and left before it sent anything (its own check), or
    the server refused it naming ``field`` (the server's check: what holds against a client that does not
    look)."""
    return "left before its request" in log or (field in log and "refused client" in log)
