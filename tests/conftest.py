"""Shared fixtures.

Real-Redis tests never touch a server they did not start: the suite starts a
private ``redis-server`` on a free port (no persistence) and flushes only it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

import demo  # noqa: F401  (registers the scripted models, as the CLI and the workers do)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# A machine's own managed settings (/etc/claude-code) must not change what the suite sees; the commands
# the tests start inherit this. Tests of managed settings point it at a folder of their own.
os.environ["MAINSAIL_MANAGED_SETTINGS_DIR"] = "/nonexistent/mainsail-tests/managed-settings"
# Nor may the suite's sessions leave Claude Code transcript copies in the home of whoever runs it: the tests
# of that copy (tests/e2e/test_claude_transcripts.py) turn it on with a home of their own.
os.environ["MAINSAIL_CLAUDE_TRANSCRIPTS"] = "false"
# Nor may every `mainsail` a test runs leave a warm server behind (cli/warm/: one per data dir, each ~160 MB):
# the warm start's own tests (tests/integration/test_warm_start.py) turn it on with a directory of their own.
os.environ["MAINSAIL_WARM"] = "false"


def running(mark: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds ``mark`` (this process excepted): a pid from
    inside a sandbox means nothing on the host, so tests find their commands by a unique mark."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if mark in cmdline and state not in ("Z", "X") and int(pid) != os.getpid():
            found.append(int(pid))
    return found


#: Directories this run's private redis-servers live in (outside the pytest basetemp).
_STARTED_DIRS: list[str] = []


def _proc_text(pid: str, name: str) -> str:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1:
        out.add(pid)
        stat = _proc_text(str(pid), "stat")
        try:
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (IndexError, ValueError):
            break
    return out


def processes_under(roots: list[str]) -> list[tuple[int, str]]:
    """Live processes (this one and its ancestors excepted) whose working directory, command line or
    environment names a path under one of ``roots``: what a test started and did not stop."""
    import re

    # A root followed by a separator: pytest-10 must not match pytest-100 (another run's basetemp).
    marks = re.compile("|".join(re.escape(r.rstrip("/")) + r"(?=[/\s\"':;=]|$)" for r in roots if r) or r"(?!)")
    mine = _ancestors()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in mine:
            continue
        stat = _proc_text(pid, "stat")
        if not stat or stat.rsplit(")", 1)[-1].split()[:1] in (["Z"], ["X"]):
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd") + "/"
        except OSError:
            cwd = ""
        text = f"{cwd}\n{_proc_text(pid, 'cmdline')}\n{_proc_text(pid, 'environ')}"
        if marks.search(text):
            found.append((int(pid), _proc_text(pid, "cmdline").strip()[:120]))
    return found


def stop_processes(pids: list[int], wait: float = 3.0) -> None:
    """SIGTERM, then SIGKILL what is still there after ``wait`` seconds."""
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") and
                                              "Z" not in _proc_text(str(p), "stat").rsplit(")", 1)[-1][:3]
                                              for p in pids):
        time.sleep(0.05)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def pytest_sessionfinish(session, exitstatus):
    """After every fixture is torn down: nothing this run started may still run (a redis-server, a
    worker, a CLI, a sandboxed command). Leftovers are stopped, and the run fails naming them."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    roots = list(_STARTED_DIRS)
    if factory is not None:
        try:
            roots.append(str(factory.getbasetemp()))
        except (OSError, ValueError):
            pass
    left = processes_under(roots)
    if not left:
        return
    stop_processes([pid for pid, _ in left])
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"{len(left)} process(es) started by the tests were still running after the session; stopped:"]
    lines += [f"  pid {pid}: {cmd}" for pid, cmd in left]
    if reporter is not None:
        reporter.write_sep("=", "processes left behind", red=True)
        reporter.write_line("\n".join(lines), red=True)
    else:
        print("\n".join(lines), file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class TlsFiles:
    """A test CA and a server certificate it signed (for 127.0.0.1 and localhost), as PEM files."""

    ca: str
    cert: str
    key: str


def make_tls_files(directory: str) -> TlsFiles:
    """Generate a throwaway CA and server certificate with the openssl command."""
    openssl = shutil.which("openssl")
    if not openssl:
        pytest.skip("the openssl command is not installed")
    d = Path(directory)
    (d / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    steps = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
         "-subj", "/CN=mainsail-test-ca"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
         "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.crt", "-days", "2", "-extfile", "san.ext"],
    ]
    for step in steps:
        subprocess.run([openssl, *step], cwd=d, check=True, capture_output=True)
    return TlsFiles(ca=str(d / "ca.crt"), cert=str(d / "server.crt"), key=str(d / "server.key"))


class RedisServer:
    """A private redis-server process for this test run.

    Args:
        appendonly: AOF on.
        password: the default user's password (``requirepass``, given on stdin); in :attr:`url`.
        tls: serve TLS only (``rediss://`` in :attr:`url`); skips the test when this
            redis-server was built without TLS.
        extra: more of its command-line options (``--appendfsync always``...).
        binary: another server program (a valkey-server); default the redis-server on the PATH.
    """

    def __init__(self, appendonly: bool = False, password: str | None = None, tls: TlsFiles | None = None,
                 extra: tuple[str, ...] = (), binary: str | None = None) -> None:
        binary = binary or shutil.which("redis-server")
        if not binary:
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        self.dir = tempfile.mkdtemp(prefix="mainsail-test-redis-")
        _STARTED_DIRS.append(self.dir)
        self.port = free_port()
        self.password = password
        self.tls = tls
        auth = f":{password}@" if password else ""
        self.url = f"{'rediss' if tls else 'redis'}://{auth}127.0.0.1:{self.port}/0"
        ports = ["--port", str(self.port)]
        if tls:
            ports = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", tls.cert, "--tls-key-file",
                     tls.key, "--tls-ca-cert-file", tls.ca, "--tls-auth-clients", "no"]
        log = open(os.path.join(self.dir, "stderr"), "wb")
        self.proc = subprocess.Popen(
            [binary, *ports, "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
             "--appendonly", "yes" if appendonly else "no", "--daemonize", "no", *extra, "-"],
            stdin=subprocess.PIPE, stdout=log, stderr=log,
        )
        self.proc.stdin.write(f"requirepass {password}\n".encode() if password else b"")
        self.proc.stdin.close()
        self._wait_ready()

    def _wait_ready(self) -> None:
        client = self.client()
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if self.proc.poll() is not None:
                    output = Path(self.dir, "stderr").read_text(errors="replace")
                    if self.tls and "tls" in output.lower():
                        pytest.skip(f"this redis-server cannot serve TLS: {output.strip()[-200:]}")
                    raise RuntimeError(f"private redis-server exited: {output}")
                if time.monotonic() > deadline:
                    raise RuntimeError("private redis-server did not start")
                time.sleep(0.05)
        client.close()

    def client(self) -> redis.Redis:
        if self.tls:
            return redis.Redis.from_url(self.url, ssl_ca_certs=self.tls.ca)
        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture
def real_redis(redis_server):
    """A client of the private server, flushed before and after the test."""
    client = redis_server.client()
    client.flushall()
    yield client
    client.flushall()
    client.close()


@pytest.fixture
def fake_redis():
    import fakeredis

    client = fakeredis.FakeRedis()
    yield client
    client.flushall()


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """Settings with no credentials and a private data dir. No title steps: engine tests follow a session's
    steps one by one; the title step after a first turn is tested on its own (tests/unit/test_titles.py)."""
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MAINSAIL_REDIS_URL", "MAINSAIL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    from workflows.settings import load_settings

    return load_settings(data_dir=tmp_path / "data", lease_seconds=2.0, pickup_timeout_seconds=5.0,
                         session_titles=False)


@pytest.fixture
def ws(tmp_path):
    """A workspace holding the demo's files."""
    from demo.scripted import DEMO_FILES

    d = tmp_path / "ws"
    d.mkdir()
    for name, content in DEMO_FILES.items():
        (d / name).write_text(content)
    return d


#: A team member's ACL (README, "Giving a team member access"): Mainsail's and Celery's keys
#: only, no pub/sub channels (neither uses any), no admin or dangerous commands (FLUSHALL,
#: KEYS, CONFIG, ...) except INFO, which `mainsail doctor` reads.
TEAM_ACL = ["on", "~mainsail:*", "~mainsail-celery:*", "resetchannels", "+@all", "-@dangerous", "+info"]


@pytest.fixture(scope="session")
def auth_redis_server():
    """A private redis-server that requires a password, with an ACL user ``alice`` (TEAM_ACL)."""
    server = RedisServer(password="s3cret-Pw_1")
    client = server.client()
    client.execute_command("ACL", "SETUSER", "alice", "reset", ">alice-pw", *TEAM_ACL)
    client.close()
    server.alice_url = f"redis://alice:alice-pw@127.0.0.1:{server.port}/0"
    yield server
    server.stop()


@pytest.fixture
def auth_redis(auth_redis_server):
    """A client (default user) of the password-protected server, flushed before and after the test."""
    client = auth_redis_server.client()
    client.flushall()
    yield client
    client.flushall()
    client.close()


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    return make_tls_files(str(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="session")
def tls_redis_server(tls_files):
    """A private redis-server speaking TLS only (certificate signed by ``tls_files.ca``), with a password."""
    server = RedisServer(password="tls-Pw_2", tls=tls_files)
    yield server
    server.stop()


@pytest.fixture
def tls_redis(tls_redis_server):
    """A client of the TLS server, flushed before and after the test."""
    client = tls_redis_server.client()
    client.flushall()
    yield client
    client.flushall()
    client.close()


#: Files that take minutes, started first: with ``--dist loadfile`` each runs on one process while the
#: others work through the rest, instead of being the last file left running alone.
SLOW_FIRST = ("e2e/test_schedules_e2e.py", "integration/test_permissions_bwrap.py", "e2e/test_mcp_e2e.py")


def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        path = str(item.fspath)
        return next((i for i, name in enumerate(SLOW_FIRST) if path.endswith(name)), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: the rest keep their order
