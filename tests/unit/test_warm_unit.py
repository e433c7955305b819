"""Warm start's pieces (cli/warm/): which commands go warm, the fingerprint, the directory, the request's
framing with its descriptors, the confinement facts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from cli.main import COMMANDS
from cli.warm import client, confinement, place, protocol


def test_the_client_knows_every_command():
    assert client.COMMANDS == set(COMMANDS)
    assert client.WARM <= client.COMMANDS


@pytest.mark.parametrize("args, warm", [
    (["sessions"], True), (["show", "abc"], True), (["approve", "abc"], True), (["-p", "hi"], True),
    (["--model", "m", "--print", "hi"], True), (["hi", "-p"], True), (["--model", "m", "-p"], True),
    ([], False),  # interactive mode
    (["fix the bug"], False),  # interactive, starting with a message
    (["--resume", "abc"], False),
    (["worker"], False), (["serve"], False), (["beat"], False), (["memory", "edit"], False),
    (["run", "-p"], True),  # (a subcommand decides by its name alone)
    (["worker", "-p"], False),
    (["hi", "--", "-p"], False),  # (after --, -p is a word of the prompt)
    # The Agent SDK's command lines: print mode without -p.
    (["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"], True),
    (["--input-format=stream-json"], True), (["--output-format", "json", "hi"], True),
    (["--output-format", "text", "hi"], False), (["--output-format=text"], False), (["--input-format", "text"], False),
])
def test_which_commands_go_warm(args, warm):
    assert client.eligible(args) is warm


def test_warm_start_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("MAINSAIL_WARM", "true")
    assert place.enabled() is (sys.platform == "linux")
    for off in ("0", "false", "No", "OFF"):
        monkeypatch.setenv("MAINSAIL_WARM", off)
        assert not place.enabled()
        assert client.run(["mainsail", "sessions"]) is None


def test_the_fingerprint_follows_what_the_interpreter_reads_at_start(monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    base = place.fingerprint()
    monkeypatch.setenv("MAINSAIL_REDIS_URL", "redis://elsewhere:1/0")
    monkeypatch.setenv("HOME", "/elsewhere")
    assert place.fingerprint() == base  # (these travel with each request)
    for name, value in (("PYTHONPATH", "/x"), ("LANG", "fr_FR.UTF-8"), ("LD_PRELOAD", "/lib/x.so"),
                        ("OPENSSL_CONF", "/x.cnf"), ("LC_CTYPE", "C")):
        monkeypatch.setenv(name, value)
        assert place.fingerprint() != base, name
        monkeypatch.undo()
        monkeypatch.delenv("LD_PRELOAD", raising=False)
        assert place.fingerprint() == base


def test_the_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("MAINSAIL_WARM_DIR", raising=False)
    monkeypatch.setenv("MAINSAIL_DATA_DIR", str(tmp_path / "data"))
    assert place.warm_dir() == str(tmp_path / "data" / "warm")
    monkeypatch.setenv("MAINSAIL_WARM_DIR", str(tmp_path / "w"))
    assert place.warm_dir() == str(tmp_path / "w")
    assert place.socket_path("/" + "x" * 120) is None  # (too long for AF_UNIX: no warm start, no error)


def test_only_a_private_directory_of_ones_own_is_used(tmp_path):
    mine = tmp_path / "mine"
    assert place.own_dir(str(mine), create=True)
    assert oct(mine.stat().st_mode & 0o777) == "0o700"
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o770)
    shared.chmod(0o770)
    assert not place.own_dir(str(shared), create=True)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert not place.own_dir(str(link), create=True)
    assert not place.own_dir(str(tmp_path / "absent"), create=False)
    if os.getuid() == 0:
        other = tmp_path / "other"
        other.mkdir(mode=0o700)
        os.chown(other, 12345, 12345)
        assert not place.own_dir(str(other), create=True)


def test_a_request_travels_with_its_descriptors(tmp_path):
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        (tmp_path / "f").write_text("through the socket")
        fd = os.open(tmp_path / "f", os.O_RDONLY)
        request = {"argv": ["mainsail", "caf\udce9"], "env": {"K": "v\udcff" * 50000}, "umask": 0o27,
                   "streams": [True, False, False]}
        with ThreadPoolExecutor(1) as pool:  # (the request is larger than the socket's buffer)
            receiving = pool.submit(protocol.recv_request, right, 30.0)
            protocol.send_request(left, request, [fd, fd])
            got, fds = receiving.result(timeout=60)
        os.close(fd)
        assert got == request and len(fds) == 2
        assert os.read(fds[0], 100) == b"through the socket"
        for received in fds:
            os.close(received)
        protocol.send_reply(right, {"pid": 42})
        protocol.send_reply(right, {"exit": 3})
        right.shutdown(socket.SHUT_WR)
        replies = protocol.Replies(left)
        assert [replies.next(), replies.next(), replies.next()] == [{"pid": 42}, {"exit": 3}, None]


def test_a_truncated_request_is_an_error_not_a_hang():
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        left.sendall(b"\x00\x00\x01\x00{")
        left.shutdown(socket.SHUT_WR)
        with pytest.raises(protocol.ProtocolError):
            protocol.recv_request(right, 30.0)


def test_confinement_compares_what_linux_says():
    if not os.path.isdir("/proc/self/ns"):
        pytest.skip("no /proc")
    own = confinement.facts("self")
    assert {"ns/mnt", "ns/pid", "ns/user", "root", "cgroup", "limits", "NoNewPrivs", "Seccomp", "CapEff"} <= set(own)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert confinement.difference(child.pid, own) is None
    finally:
        child.communicate(b"")
    assert "cannot be read" in confinement.difference(child.pid, own)  # (gone: refused, never allowed)
    limited = subprocess.Popen([sys.executable, "-c", "import resource, sys; resource.setrlimit("
                                "resource.RLIMIT_NOFILE, (64, 64)); print(1, flush=True); sys.stdin.read()"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        limited.stdout.readline()
        assert "limits" in confinement.difference(limited.pid, own)
    finally:
        limited.communicate(b"")


def test_doctor_says_whether_warm_start_is_on(monkeypatch, tmp_path):
    from cli import doctor

    monkeypatch.setenv("MAINSAIL_WARM", "false")
    assert "off" in doctor.check_warm().message
    monkeypatch.setenv("MAINSAIL_WARM", "true")
    monkeypatch.setenv("MAINSAIL_WARM_DIR", str(tmp_path / "w"))
    check = doctor.check_warm()
    assert check.status == doctor.OK and "no server runs now" in check.message
    (tmp_path / "w").mkdir(mode=0o755)
    (tmp_path / "w").chmod(0o755)
    check = doctor.check_warm()
    assert check.status == doctor.WARN and "mode 0700" in check.message
    monkeypatch.setenv("MAINSAIL_WARM_DIR", "/" + "d" * 110)
    assert "too long" in doctor.check_warm().message



def test_a_client_is_pinned_by_a_pidfd_and_a_gone_one_is_refused(tmp_path):
    """What /proc says of a pid is the client's only while the process that connected lives: a client that
    connected and left (its pid free for another process) is refused, never compared."""
    from cli.warm import admission

    if not os.path.isdir("/proc/self/ns") or not hasattr(os, "pidfd_open"):
        pytest.skip("no /proc or pidfds")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "s"))
    listener.listen(4)
    with listener:
        live = subprocess.Popen([sys.executable, "-c", "import socket, sys; s = socket.socket(socket.AF_UNIX); "
                                 f"s.connect({str(tmp_path / 's')!r}); sys.stdin.read()"], stdin=subprocess.PIPE)
        conn, _ = listener.accept()
        with conn:
            pid, uid, pidfd = admission.peer(conn)
            assert (pid, uid) == (live.pid, os.getuid()) and pidfd is not None
            assert admission.confined_otherwise(pid, pidfd) is None
            live.communicate(b"")
            assert admission.confined_otherwise(pid, pidfd) is not None  # (gone: refused)
            os.close(pidfd)
        gone = subprocess.run([sys.executable, "-c", "import socket; s = socket.socket(socket.AF_UNIX); "
                               f"s.connect({str(tmp_path / 's')!r})"])
        assert gone.returncode == 0
        conn, _ = listener.accept()
        with conn:
            pid, _, pidfd = admission.peer(conn)
            assert pidfd is None or admission.confined_otherwise(pid, pidfd) is not None
            if pidfd is not None:
                os.close(pidfd)
