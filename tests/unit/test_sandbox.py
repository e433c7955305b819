"""The sandbox's pure parts: environment scrubbing, exclusions, the bwrap argv, the seccomp filter,
the status check and the run/do-not-run decision (no command runs in bwrap here)."""

from __future__ import annotations

import errno
import logging
import os
import socket
import stat
import struct

import pytest

from workflows.exceptions import ConfigurationError, ToolError
from workflows.models import SandboxSettings
from workflows.permissions import sandbox
from workflows.permissions.sandbox import (
    SandboxStatus,
    command_environment,
    is_excluded,
)
from workflows.permissions.sandbox import launch as sandbox_launch
from workflows.permissions.sandbox import prepare, sandbox_env_enabled, scrub_environment
from workflows.permissions.sandbox.mounts import Placeholder, bwrap_argv
from workflows.permissions.sandbox.seccomp import unix_socket_filter

#: What every command's environment gets: git never opens a bare repository it only finds.
GIT_SAFE = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.bareRepository", "GIT_CONFIG_VALUE_0": "explicit"}


@pytest.fixture
def status(monkeypatch):
    """Set the cached sandbox status for one test; the real one comes back afterwards."""
    saved = sandbox._status

    def set_status(available: bool, detail: str = "detail") -> None:
        monkeypatch.setattr(sandbox, "_status", SandboxStatus(available, detail))

    yield set_status
    sandbox._status = saved


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


def argv_of(ws, settings=None, **kw) -> list[str]:
    plan = bwrap_argv("echo hi", workspace=str(ws), cwd=str(ws), home=str(ws.parent),
                      settings=settings or SandboxSettings(), tmp_dir="/run/private-tmp", **kw)
    plan.release()
    return plan.argv


def pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def singles(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


# =========================================================================== environment


@pytest.mark.parametrize("name", [
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MAINSAIL_REDIS_URL", "MAINSAIL_MODEL", "CLAUDE_CODE_OAUTH_TOKEN",
    "CELERY_BROKER_URL", "REDIS_URL", "BROKER_URL", "DATABASE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "OPENAI_API_KEY", "my_api_key", "STRIPE_SECRET",
    "CLIENT_SECRET_VALUE", "PGPASSWORD", "DB_PASSWORD_FILE", "LDAP_PASS", "MYSQL_PASSWD",
    "GOOGLE_APPLICATION_CREDENTIALS", "NPM_CONFIG__AUTH", "HF_TOKEN", "SSH_AUTH_SOCK", "GPG_AGENT_INFO",
    "KRB5CCNAME", "SIGNING_KEY", "Some_Token",
])
def test_secret_names_are_dropped(name):
    assert scrub_environment({name: "x", "PATH": "/bin"}) == {"PATH": "/bin"}


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "TERM", "PYTHONPATH", "KEYBOARD_LAYOUT", "VIRTUAL_ENV",
                                  "GOPATH", "SSL_CERT_FILE", "NODE_OPTIONS"])
def test_ordinary_names_are_kept(name):
    assert scrub_environment({name: "value"}) == {name: "value"}


def test_urls_with_passwords_are_dropped_whatever_the_name():
    env = {"UPSTREAM": "redis://:hunter2@10.0.0.5:6379/0", "PROXY_LIKE": "http://user:pw@proxy:3128",
           "PLAIN_URL": "https://example.com/path", "USER_ONLY": "https://user@example.com/"}
    assert scrub_environment(env) == {"PLAIN_URL": "https://example.com/path", "USER_ONLY": "https://user@example.com/"}


def test_unsandboxed_environment_is_only_scrubbed():
    env = command_environment({"PATH": "/bin", "TMPDIR": "/var/tmp", "GITHUB_TOKEN": "t"})
    assert env == {"PATH": "/bin", "TMPDIR": "/var/tmp", **GIT_SAFE}


def test_sandboxed_environment_points_temp_at_the_private_tmp():
    env = command_environment({"PATH": "/bin", "TMP": "/var/tmp"}, sandboxed=True)
    assert env == {"PATH": "/bin", "TMP": "/tmp", "TMPDIR": "/tmp", **GIT_SAFE}


def test_proxy_environment():
    env = command_environment({"ALL_PROXY": "socks5://x:1080", "HTTP_PROXY": "http://corp:3128"}, sandboxed=True,
                              proxy_port=3128)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert env[name] == "http://127.0.0.1:3128"
    assert env["NO_PROXY"] == env["no_proxy"] == "localhost,127.0.0.1,::1"
    assert "ALL_PROXY" not in env


# =========================================================================== MAINSAIL_SANDBOX and exclusions


@pytest.mark.parametrize("raw, expected", [(None, True), ("true", True), ("1", True), ("YES", True), ("on", True),
                                           ("false", False), ("0", False), ("No", False), ("off", False)])
def test_env_switch(raw, expected):
    assert sandbox_env_enabled({} if raw is None else {"MAINSAIL_SANDBOX": raw}) is expected


def test_env_switch_rejects_other_words():
    with pytest.raises(ConfigurationError) as info:
        sandbox_env_enabled({"MAINSAIL_SANDBOX": "maybe"})
    assert str(info.value) == ("MAINSAIL_SANDBOX is 'maybe', which is not a boolean: set it to true (sandbox commands "
                               "where bubblewrap works, the default) or false.")


@pytest.mark.parametrize("command, excluded, expected", [
    ("docker ps", ["docker"], True),
    ("  docker   compose up", ["docker compose"], True),
    ("docker ps", ["docker compose"], False),
    ("dockerd", ["docker"], False),
    ("make && docker ps", ["docker"], False),
    ("docker", ["docker"], True),
    ("ls", [], False),
    # An excluded prefix carries nothing else out of the sandbox.
    ("docker ps; rm -rf ~", ["docker"], False),
    ("docker ps\ntouch /outside/x", ["docker"], False),
    ("docker $(touch /outside/x)", ["docker"], False),
    ("docker ps > /outside/x", ["docker"], False),
    ("X=1 docker ps", ["docker"], False),
    ("docker ps | sh", ["docker"], False),
    ("'docker' ps", ["docker"], True),
    # issue 25: bash removes backslash-newline first, so the # is mid-word and touch runs (unsandboxed, if
    # the line were excluded); the checker's parse and shfmt's must agree before anything is excluded.
    ("docker ps\\\n#;touch PWNED", ["docker"], False),
    ("docker\\\n#;touch PWNED", ["docker"], False),
    ("docker ps\\\n#&&touch PWNED", ["docker"], False),
    ("docker ps\\\n#|touch PWNED", ["docker"], False),
    ("d\\\nocker ps", ["docker"], True),  # one word, docker: bash runs docker ps
    ("docker ps \\\n#;touch PWNED", ["docker"], True),  # a blank before it: a real comment
])
def test_excluded_commands_match_leading_words(command, excluded, expected):
    assert is_excluded(command, excluded) is expected


# =========================================================================== the decision


def test_no_settings_runs_a_plain_shell(ws, status):
    status(True)
    launch = prepare("echo hi", workspace=str(ws), cwd=str(ws), home="/h", settings=None,
                     environ={"PATH": "/bin", "ANTHROPIC_API_KEY": "k"})
    assert launch.argv[1:] == ["-c", "echo hi"] and not launch.sandboxed
    assert launch.env == {"PATH": "/bin", **GIT_SAFE}
    launch.close()


@pytest.mark.parametrize("settings, environ", [
    (SandboxSettings(enabled=False), {}),
    (SandboxSettings(), {"MAINSAIL_SANDBOX": "false"}),
    (SandboxSettings(excluded_commands=["docker"]), {}),
])
def test_off_or_excluded_runs_a_plain_shell(ws, status, settings, environ):
    status(True)
    launch = prepare("docker ps", workspace=str(ws), cwd=str(ws), home="/h", settings=settings,
                     environ={"PATH": "/bin", "MAINSAIL_REDIS_URL": "redis://x", **environ})
    assert not launch.sandboxed and launch.argv[-2:] == ["-c", "docker ps"]
    assert launch.env == {"PATH": "/bin", **GIT_SAFE}  # scrubbed all the same
    launch.close()


@pytest.mark.parametrize("command", ["ls\\\n#;touch PWNED", "docker ps\\\n#;touch PWNED"])
def test_a_command_hidden_behind_a_line_continuation_is_never_excluded(ws, status, monkeypatch, command):
    """Issue 25: bash runs `ls#` then `touch PWNED`; the excluded `ls` must not carry touch out of the sandbox."""
    status(True)
    monkeypatch.setattr(sandbox, "sandboxed_launch", lambda command, **kw: sandbox.Launch(["bwrap", command], {}, True))
    launch = prepare(command, workspace=str(ws), cwd=str(ws), home="/h",
                     settings=SandboxSettings(excluded_commands=["ls", "docker"]), environ={"PATH": "/bin"})
    assert launch.sandboxed
    launch.close()


def test_unavailable_runs_a_plain_shell(ws, status):
    status(False, "bubblewrap (bwrap) is not installed")
    launch = prepare("ls", workspace=str(ws), cwd=str(ws), home="/h", settings=SandboxSettings(), environ={})
    assert not launch.sandboxed
    launch.close()


def test_unavailable_with_fail_if_unavailable_is_an_error(ws, status):
    status(False, "bubblewrap (bwrap) is not installed: install bubblewrap: apt-get install bubblewrap.")
    with pytest.raises(ToolError) as info:
        prepare("ls", workspace=str(ws), cwd=str(ws), home="/h", settings=SandboxSettings(fail_if_unavailable=True),
                environ={})
    assert str(info.value) == (
        "Cannot run the command: the sandbox is required (sandbox.failIfUnavailable is true) but unavailable: "
        "bubblewrap (bwrap) is not installed: install bubblewrap: apt-get install bubblewrap.")


def test_bad_env_switch_is_an_error_not_a_silent_plain_shell(ws, status):
    status(True)
    with pytest.raises(ToolError) as info:
        prepare("ls", workspace=str(ws), cwd=str(ws), home="/h", settings=SandboxSettings(),
                environ={"MAINSAIL_SANDBOX": "perhaps"})
    assert str(info.value).startswith("Cannot run the command: MAINSAIL_SANDBOX is 'perhaps'")


# =========================================================================== status


def fake_bwrap(tmp_path, script: str) -> str:
    path = tmp_path / "bin" / "bwrap"
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path.parent)


def test_status_names_the_install_when_bwrap_is_missing(tmp_path, monkeypatch, status):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    s = sandbox.sandbox_status(refresh=True)
    assert s == SandboxStatus(False, "bubblewrap (bwrap) is not installed: install bubblewrap: apt-get install "
                                     "bubblewrap (Debian/Ubuntu) or dnf install bubblewrap (Fedora).")


def test_status_reports_a_bwrap_that_cannot_create_namespaces(tmp_path, monkeypatch, status):
    bindir = fake_bwrap(tmp_path, 'case "$1" in --version) echo "bubblewrap 0.9.9";; *) '
                                  'echo "bwrap: Creating new namespace failed: Operation not permitted" >&2; exit 1;; esac\n')
    monkeypatch.setenv("PATH", bindir)
    s = sandbox.sandbox_status(refresh=True)
    assert not s.available
    assert s.detail.startswith(f"bubblewrap 0.9.9 at {bindir}/bwrap cannot create a sandbox here: bwrap: Creating new "
                               "namespace failed: Operation not permitted. Allow unprivileged user namespaces")
    assert "--security-opt seccomp=unconfined" in s.detail


def test_status_is_checked_once_per_process(tmp_path, monkeypatch, status):
    bindir = fake_bwrap(tmp_path, 'echo "$@" >> "${0%/*}/calls"\n')  # PATH holds nothing else
    monkeypatch.setenv("PATH", bindir)
    first = sandbox.sandbox_status(refresh=True)
    assert first.available and first.detail.endswith("in their own PID namespace.")
    calls = (tmp_path / "bin" / "calls").read_text().splitlines()
    assert sandbox.sandbox_status() is first
    assert (tmp_path / "bin" / "calls").read_text().splitlines() == calls  # no second probe
    probe = calls[-1].split()
    assert "--unshare-net" in probe and "--unshare-pid" in probe and probe[-3:] == ["/bin/bash", "-c", "true"]


def test_one_warning_at_worker_start_when_unavailable(status, caplog, monkeypatch):
    from tasks import worker

    status(False, "bubblewrap (bwrap) is not installed: install bubblewrap: apt-get install bubblewrap.")
    monkeypatch.setattr(worker, "_sandbox_checked", type(worker._sandbox_checked)())
    monkeypatch.delenv("MAINSAIL_SANDBOX", raising=False)
    with caplog.at_level(logging.WARNING):
        worker.check_sandbox()
        worker.check_sandbox()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["The OS sandbox is unavailable, so Bash commands will run unsandboxed: bubblewrap (bwrap) is "
                        "not installed: install bubblewrap: apt-get install bubblewrap. (Set MAINSAIL_SANDBOX=false "
                        "to run them unsandboxed without this warning.)"]


def test_no_warning_when_turned_off(status, caplog, monkeypatch):
    status(False)
    monkeypatch.setenv("MAINSAIL_SANDBOX", "false")
    with caplog.at_level(logging.WARNING):
        sandbox.warn_if_unavailable()
    assert not caplog.records


# =========================================================================== the bwrap argv


def test_flags_and_command(ws):
    argv = argv_of(ws, seccomp_fd=7)
    head = argv[: argv.index("--ro-bind")]
    for flag in ("--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc",
                 "--unshare-net"):
        assert flag in head
    assert singles(argv, "--cap-drop") == ["ALL"]
    assert argv[-4:] == ["--", "/bin/bash", "-c", "echo hi"]
    assert singles(argv, "--chdir") == [str(ws)] and singles(argv, "--seccomp") == ["7"]
    assert singles(argv, "--proc") == ["/proc"] and singles(argv, "--dev") == ["/dev"]


def test_root_read_only_then_private_tmp_then_workspace(ws):
    argv = argv_of(ws)
    binds = pairs(argv, "--bind")
    assert pairs(argv, "--ro-bind")[0] == ("/", "/")
    assert binds[:2] == [("/run/private-tmp", "/tmp"), (str(ws), str(ws))]


def test_network_settings(ws):
    assert "--unshare-net" in argv_of(ws, SandboxSettings(allowed_domains=["pypi.org"]))  # through the proxy only
    assert "--unshare-net" not in argv_of(ws, SandboxSettings(allowed_domains=["*"]))


def test_launcher_goes_before_bash(ws):
    argv = argv_of(ws, launcher=["/usr/bin/python3", "-c", "x"])
    assert argv[argv.index("--") + 1:] == ["/usr/bin/python3", "-c", "x", "/bin/bash", "-c", "echo hi"]


def test_existing_protected_paths_are_read_only_and_their_parents_pinned(ws):
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".claude").mkdir()
    (ws / ".mainsail").mkdir()
    argv = argv_of(ws, git_writable=True)  # a git-only line a rule or a person approved
    assert (str(ws / ".git"), str(ws / ".git")) in pairs(argv, "--bind")  # a mount point: cannot be renamed
    ro = pairs(argv, "--ro-bind")
    for rel in (".git/hooks", ".git/config", ".claude", ".mainsail"):
        assert (str(ws / rel), str(ws / rel)) in ro
    assert not singles(argv, "--tmpfs")


def test_all_of_dot_git_and_nested_ones_are_read_only_for_other_commands(ws):
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "sub" / "deep").mkdir(parents=True)
    (ws / "sub" / "deep" / ".git").mkdir()
    (ws / "wt").mkdir()
    (ws / "wt" / ".git").write_text("gitdir: ../.git/worktrees/wt\n")
    (ws / "link").symlink_to(ws / "sub")  # not followed: its .git is the same one
    argv = argv_of(ws)
    ro = pairs(argv, "--ro-bind")
    for rel in (".git", "sub/deep/.git", "wt/.git"):
        assert (str(ws / rel), str(ws / rel)) in ro
    assert (str(ws / ".git"), str(ws / ".git")) not in pairs(argv, "--bind")
    assert all(str(ws / ".git") + "/" not in a for a in argv)  # no mount point inside a read-only .git
    assert (str(ws / "sub"), str(ws / "sub")) in pairs(argv, "--bind")  # pinned: cannot be renamed away


def test_missing_protected_paths_get_placeholders(ws):
    (ws / ".git").mkdir()
    plan = bwrap_argv("true", workspace=str(ws), cwd=str(ws), home="/h", settings=SandboxSettings(), tmp_dir="/t",
                      git_writable=True)
    try:
        assert sorted(p.path for p in plan.placeholders) == sorted(
            str(ws / rel) for rel in (".git/hooks", ".git/config", ".claude", ".mainsail", ".mcp.json"))
        assert ("/dev/null", str(ws / ".git" / "config")) in pairs(plan.argv, "--ro-bind")
        assert ("/dev/null", str(ws / ".mcp.json")) in pairs(plan.argv, "--ro-bind")  # names programs we start
        tmpfs = singles(plan.argv, "--tmpfs")
        assert tmpfs == [str(ws / ".claude"), str(ws / ".mainsail"), str(ws / ".git" / "hooks")]
        assert singles(plan.argv, "--remount-ro") == tmpfs  # read-only once everything is mounted
        assert all(Placeholder.known(p.path) for p in plan.placeholders)
    finally:
        plan.release()
    assert not any(Placeholder.known(str(ws / rel)) for rel in (".git/hooks", ".claude"))


def test_a_missing_git_dir_is_one_placeholder(ws):
    argv = argv_of(ws)
    assert singles(argv, "--tmpfs").count(str(ws / ".git")) == 1


def test_placeholders_are_removed_by_the_last_holder_only(ws):
    first = Placeholder.hold(str(ws / ".claude"))
    second = Placeholder.hold(str(ws / ".claude"))
    (ws / ".claude").mkdir()  # what bwrap leaves behind
    first.release()
    assert (ws / ".claude").is_dir()  # the second command still has it mounted
    second.release()
    assert not (ws / ".claude").exists() and not Placeholder.known(str(ws / ".claude"))


def test_a_placeholder_that_got_content_is_kept(ws):
    ph = Placeholder.hold(str(ws / ".claude"))
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text("{}")  # written on the host meanwhile
    ph.release()
    assert (ws / ".claude" / "settings.json").exists() and not Placeholder.known(str(ws / ".claude"))


def test_a_symlinked_protected_path_is_refused(ws, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (ws / ".claude").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ToolError) as info:
        argv_of(ws)
    assert str(info.value) == (
        f"Cannot run the command in the sandbox: {ws}/.claude is a symbolic link, so a command could replace it "
        f"and write {ws}/.claude after all. Replace the link with the directory or file itself, or list the command "
        "in sandbox.excludedCommands.")
    assert not Placeholder.known(str(ws / ".git"))  # the placeholders taken before the refusal were released


def test_filesystem_settings(ws, tmp_path):
    cache, secret_dir, secret_file = tmp_path / "cache", tmp_path / "secrets", tmp_path / "token.txt"
    cache.mkdir()
    secret_dir.mkdir()
    secret_file.write_text("t")
    (ws / "dist").mkdir()
    settings = SandboxSettings(allow_write=[str(cache), str(tmp_path / "missing")], deny_write=[str(ws / "dist")],
                               deny_read=[str(secret_dir), str(secret_file), str(tmp_path / "nothing")])
    argv = argv_of(ws, settings)
    assert (str(cache), str(cache)) in pairs(argv, "--bind")
    assert all(str(tmp_path / "missing") not in a for a in argv)  # nothing to bind
    assert (str(ws / "dist"), str(ws / "dist")) in pairs(argv, "--ro-bind")
    assert str(secret_dir) in singles(argv, "--tmpfs") and str(secret_dir) in singles(argv, "--remount-ro")
    assert ("/dev/null", str(secret_file)) in pairs(argv, "--ro-bind")
    assert all(str(tmp_path / "nothing") not in a for a in argv)


def test_data_dir_is_hidden(ws, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    argv = argv_of(ws, data_dir=str(data))
    assert str(data) in singles(argv, "--tmpfs") and str(data) in singles(argv, "--remount-ro")


def test_mounts_go_parents_first(ws, tmp_path):
    """A denyRead of a directory holding the workspace hides the rest, not the workspace itself."""
    argv = argv_of(ws, SandboxSettings(deny_read=[str(tmp_path)]))
    assert argv.index(str(tmp_path)) < argv.index(str(ws))


def test_deny_write_inside_allow_write_wins(ws, tmp_path):
    cache = tmp_path / "cache"
    (cache / "locked").mkdir(parents=True)
    argv = argv_of(ws, SandboxSettings(allow_write=[str(cache)], deny_write=[str(cache / "locked")]))
    locked, cache = str(cache / "locked"), str(cache)
    triples = [tuple(argv[i:i + 3]) for i in range(len(argv) - 2)]
    assert triples.index(("--bind", cache, cache)) < triples.index(("--ro-bind", locked, locked))


# =========================================================================== the seccomp filter


def run_bpf(program: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """A classic-BPF interpreter for the few opcodes the filter uses."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    ops = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35):
            hit = acc == k if code == 0x15 else acc >= k
            pc += 1 + (jt if hit else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


ALLOW, DENY = 0x7FFF0000, 0x00050000 | errno.EPERM
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028


@pytest.mark.parametrize("machine, arch, nr, arg0, expected", [
    ("x86_64", X86_64, 41, socket.AF_UNIX, DENY),
    ("x86_64", X86_64, 41, socket.AF_INET, ALLOW),
    ("x86_64", X86_64, 41, socket.AF_INET6, ALLOW),
    ("x86_64", X86_64, 53, socket.AF_UNIX, ALLOW),  # socketpair: pipes between the command's own processes
    ("x86_64", X86_64, 0, 0, ALLOW),  # read
    ("x86_64", X86_64, 0x40000000 + 41, socket.AF_UNIX, DENY),  # x32 ABI
    ("x86_64", I386, 102, 0, DENY),  # socketcall cannot be inspected
    ("x86_64", I386, 359, socket.AF_UNIX, DENY),
    ("x86_64", I386, 359, socket.AF_INET, ALLOW),
    ("x86_64", I386, 3, 0, ALLOW),
    ("x86_64", 0x12345678, 3, 0, DENY),  # an ABI the filter does not know
    ("aarch64", AARCH64, 198, socket.AF_UNIX, DENY),
    ("aarch64", AARCH64, 198, socket.AF_INET, ALLOW),
    ("aarch64", ARM, 281, socket.AF_UNIX, DENY),
    ("aarch64", ARM, 281, socket.AF_INET, ALLOW),
])
def test_seccomp_filter(machine, arch, nr, arg0, expected):
    assert run_bpf(unix_socket_filter(machine), arch, nr, arg0) == expected


def test_seccomp_filter_unknown_machine():
    assert unix_socket_filter("riscv64") is None


def test_private_tmp_is_removed_even_when_read_only(tmp_path):
    d = tmp_path / "priv"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "f").write_text("x")
    os.chmod(d / "sub", 0o500)
    sandbox_launch._remove_tree(str(d))
    assert not d.exists()


def test_git_opens_no_bare_repository_it_only_finds_and_the_count_always_matches_the_keys():
    env = command_environment({"PATH": "/bin", "GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "user.name",
                               "GIT_CONFIG_VALUE_0": "Ada", "GIT_CONFIG_VALUE_1": "x"})
    assert env == {"PATH": "/bin", **GIT_SAFE}


def test_added_directories_are_writable_with_their_protected_paths_read_only(tmp_path):
    ws, shared = tmp_path / "ws", tmp_path / "shared"
    (ws).mkdir()
    (shared / ".git" / "hooks").mkdir(parents=True)
    (shared / ".git" / "config").write_text("")
    for git_writable, read_only in ((True, (".git/config", ".git/hooks")), (False, (".git",))):
        plan = bwrap_argv("true", workspace=str(ws), cwd=str(ws), home="/h", settings=SandboxSettings(),
                          tmp_dir="/t", added_dirs=(str(shared), "/"), git_writable=git_writable)
        argv = plan.argv
        binds = [argv[i + 2] for i, a in enumerate(argv) if a == "--bind"]
        ro = [argv[i + 2] for i, a in enumerate(argv) if a == "--ro-bind"]
        assert str(shared) in binds and "/" not in binds
        assert all(str(shared / rel) in ro for rel in read_only)
        plan.release()


def test_settings_env_reaches_commands_but_never_a_reserved_name():
    env = command_environment({"PATH": "/bin", "GITHUB_TOKEN": "worker"}, sandboxed=True, proxy_port=3128,
                              settings_env={"NPM_TOKEN": "mine", "MAINSAIL_REDIS_URL": "x", "ANTHROPIC_API_KEY": "k",
                                            "TMPDIR": "/var/x", "HTTP_PROXY": "http://evil", "GIT_CONFIG_COUNT": "0"})
    assert env["NPM_TOKEN"] == "mine" and "GITHUB_TOKEN" not in env
    assert "MAINSAIL_REDIS_URL" not in env and "ANTHROPIC_API_KEY" not in env
    assert env["TMPDIR"] == "/tmp" and env["HTTP_PROXY"] == "http://127.0.0.1:3128"
    assert env["GIT_CONFIG_COUNT"] == "1"
