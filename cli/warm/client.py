"""The client half of warm start: hand the command to a warm server, or say it cannot (None).

Standard library only, and little of it: this runs in every ``mainsail`` before anything else is imported.
Which commands go warm is a fixed list (:data:`WARM`, and print mode ``-p``): those a user or a script runs
often and that need nothing a forked process lacks. Interactive mode, the long-running servers (worker,
beat, serve) and the commands that may start an editor run as before.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from cli.warm import place, protocol

#: Every command name of cli/main.py's COMMANDS (a unit test holds the two equal).
COMMANDS = frozenset({
    "approve", "beat", "budget", "cancel", "compact", "costs", "demo", "deny", "doctor", "export", "fsm", "gc",
    "import", "mcp", "memory", "notify", "pending", "reap", "rewind", "rm", "run", "schedule", "send", "serve",
    "sessions", "show", "submit", "token", "warm", "watch", "worker",
})
#: The commands that run warm.
WARM = frozenset({"approve", "cancel", "compact", "costs", "deny", "export", "pending", "run", "send", "sessions",
                  "show", "submit", "watch"})
#: The signals the client passes on to the command (SIGTSTP is handled apart: the command stops with it).
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGWINCH", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGCONT")


def eligible(args: list[str]) -> bool:
    """Whether ``mainsail ARGS`` may run warm: one of :data:`WARM`, or Claude Code's print mode (``-p``, or
    what implies it as cli/headless/command.py reads it: ``--input-format stream-json``, the Agent SDK's, or
    an ``--output-format`` other than text)."""
    if not args:
        return False
    if args[0] in COMMANDS:
        return args[0] in WARM
    words = args[: args.index("--")] if "--" in args else args
    if "-p" in words or "--print" in words:
        return True
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in ("--input-format", "--output-format"):
            value = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            if (name == "--input-format" and value == "stream-json") or (name == "--output-format"
                                                                         and value not in ("", "text")):
                return True
    return False


def run(argv: list[str]) -> int | None:
    """Run ``argv`` on a warm server and return its exit status; None when no server took it (then the
    caller runs the command itself, and a server is started for the next command where none listens)."""
    if not place.enabled() or not eligible(argv[1:]):
        return None
    directory = place.warm_dir()
    path = place.socket_path(directory)
    if path is None or not place.own_dir(directory, create=True):
        return None
    try:
        # A process that cannot read the warm directory (a confinement /proc does not show, as Landlock's)
        # has no key, and so no warm start.
        with open(place.beside(path, ".key")) as f:
            key = f.read().strip()
    except FileNotFoundError:
        spawn(path)  # (no server: the key is written as it starts listening)
        return None
    except OSError:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        spawn(path)
        return None
    except OSError:
        sock.close()
        return None
    try:
        return _served(sock, argv, path, key)
    finally:
        sock.close()


def _served(sock: socket.socket, argv: list[str], path: str, key: str) -> int | None:
    forwarder = _Forwarder(sock)
    replies = protocol.Replies(sock)
    sock.settimeout(protocol.PID_TIMEOUT)
    first = None
    try:
        # Nothing of the client's goes over before the server greets it: a server stopped or swamped would
        # otherwise hold the client's stdout (in flight, in its accept queue) and whoever reads it to its end.
        if replies.next() != protocol.HELLO:
            raise protocol.ProtocolError("no greeting")
        if (why := _not_ours(sock)) is not None:  # (a socket planted in a writable warm directory)
            raise protocol.ProtocolError(why)
        fds = _descriptors()
        if fds is None:
            raise protocol.ProtocolError("the current directory cannot be opened")
        mask = os.umask(0o022)
        os.umask(mask)
        try:
            ignored = [n for n in range(1, signal.NSIG) if _ignored(n)]
            protocol.send_request(sock, {"key": key, "argv": argv, "env": dict(os.environ), "umask": mask,
                                         "streams": fds[1], "ignored": ignored}, fds[0])
        finally:
            os.close(fds[0][0])  # (the directory: opened here for the request)
        first = replies.next()
        pid = int(first["pid"]) if first is not None and "refused" not in first else 0
        sock.settimeout(None)
        if pid:
            forwarder.start(pid)  # (from here a signal is the command's)
            # The command starts only on this byte: a client that gave up (no pid in time, a reply it cannot
            # read, a signal) closes instead and runs the command itself, so it can never run twice.
            sock.sendall(protocol.GO)
    except (protocol.ProtocolError, OSError, KeyError, ValueError, TypeError):
        pid = 0
    if not pid:
        forwarder.restore()
        if first is not None and first.get("stale"):
            spawn(path)  # (it is leaving: its code changed on disk)
        return None
    try:
        end = replies.next()
    except (protocol.ProtocolError, OSError) as exc:
        end = None
        print(f"mainsail: lost the warm server while process {pid} ran the command ({exc}).", file=sys.stderr)
    forwarder.restore()
    if end is None:
        print(f"mainsail: the warm server closed without the command's exit status (process {pid}); "
              f"its log is {place.beside(path, '.log')}. Set MAINSAIL_WARM=false to run commands without it.",
              file=sys.stderr)
        return 1
    if "signal" in end:
        return _die_by(int(end["signal"]))
    return int(end.get("exit", 1))


def _not_ours(sock: socket.socket) -> str | None:
    """Why the process listening is not a server this client may hand its environment and descriptors to:
    another user, or confined otherwise (a server some sandboxed process set up in a writable directory)."""
    from cli.warm import admission

    pid, uid, pidfd = admission.peer(sock)
    if uid != os.getuid() or pidfd is None:
        return "the server is another user's, or cannot be pinned"
    try:
        return admission.confined_otherwise(pid, pidfd)
    finally:
        os.close(pidfd)


def _ignored(number: int) -> bool:
    try:
        return signal.getsignal(number) == signal.SIG_IGN
    except (OSError, ValueError):
        return False


def _descriptors() -> tuple[list[int], list[bool]] | None:
    """The current directory (opened) and the standard streams that are open; None if the directory
    cannot be opened."""
    try:
        cwd = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    streams = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            streams.append(True)
        except OSError:
            streams.append(False)
    return [cwd, *(fd for fd, is_open in zip((0, 1, 2), streams) if is_open)], streams


class _Forwarder:
    """Passes the client's signals to the command's process. One that comes before the command runs ends
    the attempt instead: the connection is closed (the command then never starts) and the client receives
    the signal as the process it is (Ctrl-C while it starts is a Ctrl-C of a command not begun)."""

    def __init__(self, sock: socket.socket) -> None:
        self.pid = 0
        self._sock = sock
        self._saved: dict[int, object] = {}
        for name in (*FORWARDED, "SIGTSTP"):
            number = getattr(signal, name, None)
            if number is not None and not _ignored(number):  # (ignored stays ignored: nohup; the command too)
                self._saved[number] = signal.signal(number, self._on_signal)

    def start(self, pid: int) -> None:
        self.pid = pid

    def _on_signal(self, number: int, frame) -> None:
        if not self.pid:
            if number in (signal.SIGWINCH, signal.SIGCONT):
                return  # (nothing to resize or continue yet)
            self._sock.close()
            self.restore()
            os.kill(os.getpid(), number)  # (delivered again, to the handler the process had before)
            return
        try:
            if number == signal.SIGTSTP:
                # The command's process group is orphaned (it lives in the server's session), and the kernel
                # drops a terminal stop sent there: SIGSTOP is never dropped. Then the client stops too.
                os.kill(self.pid, signal.SIGSTOP)
                os.kill(os.getpid(), signal.SIGSTOP)
            else:
                os.kill(self.pid, number)
        except ProcessLookupError:
            pass

    def restore(self) -> None:
        for number, handler in self._saved.items():
            signal.signal(number, handler)
        self._saved = {}


def _die_by(number: int) -> int:
    """End the client as the command ended: killed by signal ``number`` (for the shell's $? and core)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    except (OSError, ValueError):
        pass
    return 128 + number  # (a signal whose default is not to end the process)


def spawn(path: str) -> None:
    """Start a warm server for ``path`` in the background (its own session, no terminal, nothing inherited),
    for the next command; this one runs without it."""
    import json
    import subprocess

    boot = ("import sys, json; sys.path[:] = json.loads(sys.argv[2]); "
            "from cli.warm.server import main; main(sys.argv[1])")
    argv = [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", boot, path, json.dumps(sys.path)]
    # Only what the interpreter reads at start (the fingerprint's) and what the server reads: it holds no
    # secret of the client's (an API key, a token) for its lifetime; each command brings its environment.
    keep = ("PATH", "HOME", "MAINSAIL_WARM_IDLE")
    env = {k: v for k, v in os.environ.items()
           if k in keep or k.startswith(place.STARTUP_PREFIXES) or k in place.STARTUP_NAMES}
    try:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         cwd="/", env=env, start_new_session=True, close_fds=True)
    except OSError:
        pass
