"""Real commands in bubblewrap through the Bash tool: what they can write, read, reach and leave behind.

Skipped where bwrap cannot create a sandbox. Nothing here reaches the internet: the "network"
is a local HTTP server, and the proxy's allowed host is ``localhost``.
"""

from __future__ import annotations

import http.server
import os
import random
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from tests.conftest import running
from workflows.models import SandboxSettings
from workflows.models.options import SessionOptions, SessionSetup
from workflows.permissions.sandbox import sandbox_status
from workflows.tools import ToolContext, run_tool

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sandbox_status().available, reason=f"no sandbox here: {sandbox_status().detail}"),
]


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


@pytest.fixture
def outside():
    """A directory outside the workspace and outside /tmp (the sandbox's /tmp is private)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else os.path.expanduser("~")
    d = tempfile.mkdtemp(prefix="mainsail-sandbox-test-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def bash(ws, command: str, settings: SandboxSettings | None = None, timeout: int = 20_000, git_writes: bool = False):
    ctx = ToolContext(workspace=ws, sandbox=settings or SandboxSettings(), git_writes=git_writes)
    return run_tool("Bash", {"command": command, "timeout": timeout}, ctx)



def marker(seconds: int = 30) -> str:
    """A sleep duration no other process has, to find a test's sleep among the machine's processes."""
    return f"{seconds}.{random.randint(10**8, 10**9)}"


# =========================================================================== the filesystem


def test_the_workspace_is_writable_and_the_rest_is_not(ws, outside):
    out = bash(ws, f"echo hi > made.txt && touch {outside}/escaped")
    assert out.is_error and "Read-only file system" in out.content
    assert "(The command ran in the OS sandbox: only the workspace and /tmp are writable" in out.content
    assert (ws / "made.txt").read_text() == "hi\n"
    assert not os.path.exists(f"{outside}/escaped")
    assert "Read-only file system" in bash(ws, "touch /etc/mainsail-sandbox-test").content


def test_tmp_is_private_and_removed_afterwards(ws, tmp_path, monkeypatch):
    # The private /tmp is made under the host's temp dir: point that at a folder of this test's
    # own, so other runs on the machine making and removing theirs in /tmp cannot race the check.
    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(host_tmp))
    made = []
    mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: made.append(mkdtemp(*a, **k)) or made[-1])
    name = f"mainsail-test-{random.randint(10**8, 10**9)}"
    out = bash(ws, f'echo "$TMPDIR"; echo x > /tmp/{name} && cat /tmp/{name}; mktemp')
    assert not out.is_error, out.content
    lines = out.content.splitlines()
    assert lines[:2] == ["/tmp", "x"] and lines[2].startswith("/tmp/tmp.")
    assert not os.path.exists(f"/tmp/{name}")  # the host's /tmp never saw it
    assert not os.path.exists(f"{host_tmp}/{name}")
    private = [d for d in made if os.path.basename(d).startswith("mainsail-sandbox-")]
    assert len(private) == 1 and private[0].startswith(str(host_tmp))
    assert not os.path.exists(private[0])  # the private one is gone


def git_init(ws):
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".claude").mkdir()
    (ws / ".mainsail").mkdir()


@pytest.mark.parametrize("command", [
    "echo '[core] hooksPath = /x' >> .git/config",
    "touch .git/hooks/pre-commit",
    "echo '{}' > .claude/settings.json",
    "touch .mainsail/settings.local.json",
    "mv .git .git-old",
    "mv .claude .claude-old",
    "rm -rf .git/hooks",
    "rmdir .mainsail",
    "echo '{}' > .mcp.json",
    "rm .mcp.json",
])
def test_existing_protected_paths_cannot_be_changed(ws, command):
    git_init(ws)
    (ws / ".mcp.json").write_text('{"mcpServers": {}}')
    config = (ws / ".git" / "config").read_text()
    out = bash(ws, command)
    assert out.is_error, out.content
    assert (ws / ".git" / "config").read_text() == config
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert sorted(os.listdir(ws / ".claude")) == [] and sorted(os.listdir(ws / ".mainsail")) == []
    assert (ws / ".git" / "hooks").is_dir() and not (ws / ".git-old").exists()
    assert (ws / ".mcp.json").read_text() == '{"mcpServers": {}}'  # it names programs Mainsail starts


def test_git_still_works_in_the_sandbox(ws):
    """A git-only line a rule or a person approved (``git_writes``) may write .git, but its config and hooks."""
    git_init(ws)
    (ws / "a.txt").write_text("a\n")
    out = bash(ws, "git add a.txt && git -c user.email=a@b.c -c user.name=n commit -qm first && git log --oneline",
               git_writes=True)
    assert not out.is_error, out.content
    assert "first" in out.content
    out = bash(ws, "echo '[core] fsmonitor = /x' >> .git/config; touch .git/hooks/pre-commit", git_writes=True)
    assert out.content.count("Read-only file system") == 2, out.content


@pytest.mark.parametrize("command", [
    "echo /elsewhere > .git/commondir",
    "echo 'gitdir: /elsewhere' > .git/x && mv .git/x .git/commondir",
    "touch .git/info/alternates-x",
    "rm .git/HEAD",
    "git -c user.email=a@b.c -c user.name=n commit -qm other --allow-empty",
    "echo x > sub/.git/commondir",
    "rm -rf sub/.git",
])
def test_all_of_dot_git_is_read_only_for_other_commands(ws, command):
    """Issue 25, cause 2: a command writing .git/commondir (or a nested repository's) named programs for git."""
    git_init(ws)
    (ws / "sub").mkdir()
    git_init(ws / "sub")
    before = {p: p.read_bytes() for p in (ws / ".git").rglob("*") if p.is_file()}
    out = bash(ws, command)
    assert out.is_error, out.content
    assert not (ws / ".git" / "commondir").exists() and not (ws / "sub" / ".git" / "commondir").exists()
    assert (ws / "sub" / ".git").is_dir()
    assert {p: p.read_bytes() for p in (ws / ".git").rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("command", [
    "mkdir -p .claude && echo '{}' > .claude/settings.json",
    "mkdir -p .mainsail && touch .mainsail/x",
    "mkdir -p .git && echo '[core]' > .git/config",
    "mkdir -p .git/hooks && touch .git/hooks/post-checkout",
    "git init -q .",
    "ln -s /tmp .claude",
    "echo '{\"mcpServers\": {}}' > .mcp.json",
    "echo {} > /tmp/x && mv /tmp/x .mcp.json",
])
def test_missing_protected_paths_cannot_be_created_and_leave_nothing_behind(ws, command):
    out = bash(ws, command)
    assert out.is_error, out.content
    assert os.listdir(ws) == []  # bwrap's mount points were removed after the command


def test_a_git_dir_without_config_gets_a_file_placeholder(ws):
    (ws / ".git").mkdir()
    out = bash(ws, "echo x > .git/config")
    assert out.is_error and ".git/config: Read-only file system" in out.content  # all of .git, for any command
    out = bash(ws, "echo x > .git/config", git_writes=True)
    assert out.is_error and ".git/config: Permission denied" in out.content  # /dev/null, read-only
    assert os.listdir(ws / ".git") == []  # no empty config, no hooks dir left on the host
    assert sorted(os.listdir(ws)) == [".git"]


def test_a_placeholder_outlives_the_first_of_two_commands(ws):
    """One command ending must not remove a mount point another still uses (that would unprotect it there)."""
    results = {}

    def run(name, command):
        results[name] = bash(ws, command)

    long = threading.Thread(target=run, args=("long", "sleep 1.5; mkdir .claude/x || echo blocked"))
    long.start()
    time.sleep(0.5)
    run("short", "true")
    long.join()
    assert "blocked" in results["long"].content and "Read-only file system" in results["long"].content
    assert os.listdir(ws) == []


def test_filesystem_settings(ws, outside):
    os.makedirs(f"{outside}/cache")
    os.makedirs(f"{outside}/secret-dir")
    with open(f"{outside}/secret-dir/key", "w") as fh:
        fh.write("dir-secret")
    with open(f"{outside}/token.txt", "w") as fh:
        fh.write("file-secret")
    (ws / "locked").mkdir()
    settings = SandboxSettings(allow_write=[f"{outside}/cache"], deny_write=[str(ws / "locked")],
                               deny_read=[f"{outside}/secret-dir", f"{outside}/token.txt"])
    out = bash(ws, f"touch {outside}/cache/ok && echo wrote; touch locked/x || echo locked; "
                   f"cat {outside}/token.txt; ls -A {outside}/secret-dir; cat {outside}/secret-dir/key", settings)
    assert "wrote" in out.content and "locked" in out.content
    assert "secret" not in out.content.replace("secret-dir", "")
    assert os.path.exists(f"{outside}/cache/ok") and not (ws / "locked" / "x").exists()


def test_data_dir_is_hidden(ws, outside, monkeypatch):
    from workflows.settings import get_settings

    data = os.path.join(outside, "data")
    os.makedirs(data)
    with open(os.path.join(data, "appendonly.aof"), "w") as fh:
        fh.write("AUTH hunter2")
    monkeypatch.setenv("MAINSAIL_DATA_DIR", data)
    get_settings.cache_clear()
    try:
        out = bash(ws, f"ls -A {data}; cat {data}/appendonly.aof; touch {data}/planted")
    finally:
        get_settings.cache_clear()
    assert "hunter2" not in out.content and "No such file" in out.content
    assert sorted(os.listdir(data)) == ["appendonly.aof"]


# =========================================================================== environment and processes


def test_no_secrets_in_the_environment(ws, monkeypatch):
    secrets = {"ANTHROPIC_API_KEY": "sk-ant-1", "MAINSAIL_REDIS_URL": "redis://:pw@h:6379/0",
               "CLAUDE_CODE_OAUTH_TOKEN": "oat", "GITHUB_TOKEN": "ghp", "AWS_SECRET_ACCESS_KEY": "aws",
               "DB_PASSWORD": "pw", "REDIS_URL": "redis://h", "CELERY_BROKER_URL": "redis://h/1",
               "UPSTREAM": "https://user:pass@example.test/"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    out = bash(ws, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
    assert "HARMLESS_SETTING=kept" in out.content
    for name, value in secrets.items():
        assert name not in out.content and value not in out.content


def test_the_worker_process_is_out_of_reach(ws, monkeypatch):
    monkeypatch.setenv("MAINSAIL_WORKER_SECRET", "s3cr3t-marker")
    out = bash(ws, f"cat /proc/{os.getpid()}/environ; kill -0 {os.getpid()}; grep -l s3cr3t-marker /proc/*/environ")
    assert "s3cr3t-marker" not in out.content
    assert f"/proc/{os.getpid()}/environ: No such file or directory" in out.content
    assert f"kill: ({os.getpid()}) - No such process" in out.content
    count = bash(ws, "ls /proc | grep -cE '^[0-9]+$'")
    assert int(count.content) < 10  # only the sandbox's own processes


# =========================================================================== network


@pytest.fixture
def origin():
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"hello from the host {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def fetch(url: str) -> str:
    """A command that fetches ``url`` through the environment's proxy (NO_PROXY cleared: localhost too)."""
    code = ("import urllib.request, urllib.error\n"
            "try:\n"
            f"    print(urllib.request.urlopen({url!r}, timeout=5).read().decode())\n"
            "except urllib.error.HTTPError as e:\n"
            "    print(e.code, e.read().decode())\n")
    return f"NO_PROXY= no_proxy= python3 -c {shlex.quote(code)}"


def test_no_network_by_default(ws, origin):
    out = bash(ws, f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {origin}), 2)'")
    assert out.is_error and "ConnectionRefusedError" in out.content


def test_star_shares_the_host_network(ws, origin):
    out = bash(ws, fetch(f"http://127.0.0.1:{origin}/all"), SandboxSettings(allowed_domains=["*"]))
    assert out.content == "hello from the host /all"


def test_allowed_domains_go_through_the_proxy(ws, origin):
    settings = SandboxSettings(allowed_domains=["localhost"])
    out = bash(ws, fetch(f"http://localhost:{origin}/allowed") + "; " + fetch(f"http://127.0.0.1:{origin}/refused")
               + "; env | grep ^HTTPS_PROXY=", settings)
    lines = out.content.splitlines()
    assert lines[0] == "hello from the host /allowed"
    assert lines[1].startswith("403 Mainsail sandbox: connections to 127.0.0.1 are not allowed. The allowed domains "
                               "are localhost (sandbox.network.allowedDomains).")
    assert lines[-1] == "HTTPS_PROXY=http://127.0.0.1:3128"
    direct = bash(ws, f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {origin}), 2)'", settings)
    assert direct.is_error and "ConnectionRefusedError" in direct.content  # only the proxy gets out


def test_https_tunnel_through_the_proxy(ws, origin):
    """CONNECT, as curl and pip do for https:// (plain bytes stand in for TLS here)."""
    code = ("import socket\n"
            "s = socket.create_connection((\"127.0.0.1\", 3128), 5)\n"
            f"s.sendall(b\"CONNECT localhost:{origin} HTTP/1.1\\r\\n\\r\\n\")\n"
            "print(s.recv(100).decode().splitlines()[0])\n"
            "s.sendall(b\"GET /tunnel HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n\")\n"
            "print(s.makefile(\"rb\").read().decode().splitlines()[-1])\n")
    out = bash(ws, f"python3 -c '{code}'", SandboxSettings(allowed_domains=["localhost"]))
    assert out.content.splitlines() == ["HTTP/1.1 200 Connection established", "hello from the host /tunnel"]


def test_unix_sockets_are_refused_unless_allowed(ws, outside):
    path = os.path.join(outside, "service.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    try:
        command = f"python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{path}\"); print(\"in\")'"
        refused = bash(ws, command)
        assert refused.is_error and "PermissionError: [Errno 1] Operation not permitted" in refused.content
        allowed = bash(ws, command, SandboxSettings(allow_unix_sockets=True))
        assert allowed.content == "in"
        pair = bash(ws, "python3 -c 'import socket; print(len(socket.socketpair()))'")
        assert pair.content == "2"  # pipes between the command's own processes still work
        # io_uring's IORING_OP_SOCKET makes a socket without socket(): no ring can be set up at all.
        ring = ("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); params = ctypes.create_string_buffer(120); "
                "r = libc.syscall(425, 4, params); print(r, os.strerror(ctypes.get_errno()))")
        assert bash(ws, f"python3 -c '{ring}'").content == "-1 Operation not permitted"
    finally:
        server.close()


# =========================================================================== killing


def test_timeout_kills_everything_the_command_started(ws):
    mark = marker()
    out = bash(ws, f"setsid sleep {mark} & (sleep {mark} &); nohup sleep {mark} >/dev/null 2>&1 & sleep {mark}",
               timeout=700)
    assert out.is_error and "timed out" in out.content
    assert running(mark) == []  # already when the tool returns: the sandbox's PID namespace is gone


def test_cancel_kills_everything_the_command_started(ws):
    mark = marker()
    ctx = ToolContext(workspace=ws, sandbox=SandboxSettings())

    def cancel_when_running():
        deadline = time.monotonic() + 10
        while len(running(mark)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        ctx.cancel.set()

    t = threading.Thread(target=cancel_when_running)
    t.start()
    out = run_tool("Bash", {"command": f"setsid sleep {mark} & sleep {mark}", "timeout": 20_000}, ctx)
    t.join()
    assert "interrupted" in out.content
    assert running(mark) == []


def test_a_background_child_ends_with_its_command(ws):
    mark = marker(600)  # waiting for the child would take 10 minutes: far from any slowness of a loaded machine
    start = time.monotonic()
    out = bash(ws, f"sleep {mark} & echo started")
    assert out.content == "started" and time.monotonic() - start < 300
    assert running(mark) == []


def test_excluded_commands_run_outside_the_sandbox_with_a_scrubbed_environment(ws, outside, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    settings = SandboxSettings(excluded_commands=["touch", "env"])
    bash(ws, f"touch {outside}/made-outside", settings)
    assert os.path.exists(f"{outside}/made-outside")
    out = bash(ws, "env", settings)
    assert "GITHUB_TOKEN" not in out.content and "PATH=" in out.content
    # Only the excluded command itself leaves the sandbox: anything joined to it runs inside.
    bash(ws, f"touch {outside}/second; touch {outside}/third", settings)
    assert not os.path.exists(f"{outside}/second") and not os.path.exists(f"{outside}/third")


@pytest.mark.parametrize("mode, rules, approved_by, commits", [
    ("default", ["Bash(git add:*)", "Bash(git commit:*)"], None, True),  # a rule allows the git-only line
    ("default", [], "ada", True),  # a person approved it
    ("bypassPermissions", [], None, False),  # a mode never lets a command write .git
])
def test_who_approved_a_git_line_decides_whether_it_can_write_dot_git(ws, fake_redis, settings, mode, rules,
                                                                      approved_by, commits):
    """Through the tools worker's own path (tool_step.execute_call): the fact reaches the launch."""
    import threading

    from workflows.engine import Engine
    from workflows.models import RuleSet, RuleSpec, ToolCall
    from workflows.steps.tool import execute_call
    from workflows.store.redis_store import Store
    from workflows.tools import get_tool

    git_init(ws)
    for key, value in (("user.email", "a@b.c"), ("user.name", "n")):
        subprocess.run(["git", "-C", str(ws), "config", key, value], check=True)
    (ws / "a.txt").write_text("a\n")
    engine = Engine(Store(fake_redis, lock_wait=1.0), settings)
    rec = engine.create_session(str(ws), SessionOptions(permission_mode=mode, no_memory=True), SessionSetup(rules=RuleSet(allow=[RuleSpec(rule=r) for r in rules])), home=str(ws.parent))
    call = ToolCall(tool_use_id="t1", name="Bash", approved_by=approved_by, input={
        "command": "git add a.txt && git commit -qm first"})
    done = execute_call(engine, rec, call, get_tool("Bash"), threading.Event(), None)
    head = subprocess.run(["git", "-C", str(ws), "log", "--oneline"], capture_output=True, text=True)
    assert ("first" in head.stdout) is commits, done.output.content
    if not commits:
        assert "Read-only file system" in done.output.content and "Bash(git commit:*)" in done.output.content
