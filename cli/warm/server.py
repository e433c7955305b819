"""The warm server: import the engine once, then fork a process per command (see cli/warm/__init__.py).

The **server** (``main``) imports (preload.py) and then waits, single-threaded, on its socket, on the
connections of the clients whose commands run, and on those commands' processes (pidfds). For a new client
it reads the request, checks the client (same user, same confinement: confinement.py) and that its own code
is unchanged on disk, and forks: the **command** process takes the client's descriptors, directory, umask,
environment and argv, drops what it inherited from the server, and returns out of :func:`serve` into
:func:`main`, which runs ``cli.main.main`` as the console script would. The server tells the client the
command's pid, then how it ended; if the client goes away first (killed), the server kills the command, as
the command would have died with the client.

It leaves after ``MAINSAIL_WARM_IDLE`` seconds without a command (default 1800), on SIGTERM, or once its
code changed on disk; then it stops listening at once (a new server may start) and leaves when the commands
it runs have ended.
"""

from __future__ import annotations

import fcntl
import hmac
import os
import select
import signal
import socket
import sys
import time

from cli.warm import admission, confinement, place, protocol

#: Seconds without a command after which the server leaves (``MAINSAIL_WARM_IDLE``).
IDLE = 1800.0
#: How long a new server waits for the lock of one that is leaving.
LOCK_WAIT = 10.0
#: The log is emptied when it grows past this many bytes.
LOG_LIMIT = 1 << 20
#: How long a client has to send its request once connected.
REQUEST_TIMEOUT = 2.0


class Running:
    """A command in progress: the client's connection and the command's process."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.client_gone = False


class Server:
    """The server's state: its socket, lock, log, its code as loaded, and what runs."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.log_fd = -1
        self.lock_fd = -1
        self.listener: socket.socket | None = None
        self.files: dict[str, tuple[int, int]] = {}
        self.running: dict[int, Running] = {}  # (pidfd -> command)
        self.signals: dict[int, object] = {}  # (the handlers after the preload: a command's to start with)
        self.leaving = ""
        self.key = ""  # (what a client must present: it could read this server's files)

    def log(self, text: str) -> None:
        if self.log_fd < 0:
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        if os.lseek(self.log_fd, 0, os.SEEK_END) > LOG_LIMIT:  # (a long-lived server: keep the log small)
            os.ftruncate(self.log_fd, 0)
            os.lseek(self.log_fd, 0, os.SEEK_SET)
            os.write(self.log_fd, f"{stamp} [{os.getpid()}] (the log was emptied at {LOG_LIMIT} bytes)\n".encode())
        os.write(self.log_fd, f"{stamp} [{os.getpid()}] {text}\n".encode("utf-8", "replace"))


def main(path: str) -> None:
    """Run a server for ``path`` (started by client.spawn). Returns in a command's process only, which then
    runs the command and leaves (:func:`finish`)."""
    if serve(path) is None:
        os._exit(0)
    from cli.main import main as command

    try:
        command()
        code = 0
    except SystemExit as exc:
        code = exc.code
    finish(code)


def finish(code: int | str | None) -> None:
    """Leave the command's process as the interpreter would, without tearing ~4,000 modules down one by
    one (over 0.1 s): non-daemon threads are waited for, exit handlers run, the streams are flushed."""
    import atexit
    import threading

    if isinstance(code, str) or (code is not None and not isinstance(code, int)):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            code = code or 120  # (as Py_FinalizeEx: a flush that fails at exit)
    os._exit(code or 0)


def serve(path: str) -> dict | None:
    """Preload, then serve until leaving (None); a command's process returns its request."""
    server = Server(path)
    directory = os.path.dirname(path)
    if place.socket_path(directory) != path or not place.own_dir(directory, create=False):
        return None  # (this interpreter is not the one the client asked for: leave it be)
    server.log_fd = os.open(place.beside(path, ".log"), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                            0o600)
    if not _lock(server):
        server.log("another server holds the lock; leaving")
        return None
    os.ftruncate(server.log_fd, 0)  # (a log of this server's own: the lock is held)
    from cli.warm import preload

    started = time.monotonic()
    gc_was = preload.begin()
    loaded, skipped = preload.load()
    server.files = preload.snapshot()
    server.signals = preload.dispositions()
    try:
        confinement.facts("self")
        os.close(os.pidfd_open(os.getpid()))
    except (OSError, AttributeError) as exc:  # (no /proc, or a kernel before 5.3: no warm start)
        server.log(f"cannot compare confinements or watch processes here ({exc}); leaving")
        return None
    if (threads := preload.threads()) != 1:
        server.log(f"{threads} threads after the preload: a fork would copy a half-held lock; leaving")
        return None
    preload.end(gc_was)
    server.log(f"preloaded {loaded} modules in {time.monotonic() - started:.2f}s"
               + (f"; not preloaded: {', '.join(skipped)}" if skipped else ""))
    _listen(server)
    return _loop(server)


def _lock(server: Server) -> bool:
    server.lock_fd = os.open(place.beside(server.path, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                             0o600)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(server.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def _listen(server: Server) -> None:
    server.key = os.urandom(32).hex()
    _write_private(place.beside(server.path, ".key"), server.key)
    try:
        os.unlink(server.path)  # (a dead server's: the lock says none lives)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(server.path)
    finally:
        os.umask(old)
    listener.listen(64)
    server.listener = listener
    _write_private(place.beside(server.path, ".pid"), str(os.getpid()))
    signal.signal(signal.SIGTERM, lambda *_: _stop(server, "asked to (SIGTERM)"))


def _write_private(path: str, text: str) -> None:
    """A file only this user may read (the pid, for `mainsail warm`; the key clients present), written whole
    and then renamed into place."""
    part = f"{path}.{os.getpid()}"
    try:
        os.unlink(part)  # (a leftover of a crash, or planted: never written through)
    except FileNotFoundError:
        pass
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.write(fd, f"{text}\n".encode())
    os.close(fd)
    os.replace(part, path)


def _stop(server: Server, why: str) -> None:
    """Stop listening (a new server may start at once); the commands running are still tended."""
    if server.leaving:
        return
    server.leaving = why
    server.log(f"leaving: {why}")
    for path in (server.path, place.beside(server.path, ".pid"), place.beside(server.path, ".key")):
        try:
            os.unlink(path)
        except OSError:
            pass
    server.listener.close()
    os.close(server.lock_fd)
    server.lock_fd = -1


def _loop(server: Server) -> dict | None:
    """Wait on the socket, the clients and the commands (poll: no descriptor of its own to leak into a fork,
    and no limit of 1,024 descriptors)."""
    idle = _idle_seconds()
    last = time.monotonic()
    listening = server.listener.fileno()
    while not (server.leaving and not server.running):
        if not server.leaving and not server.running and time.monotonic() - last >= idle:
            _stop(server, f"idle for {idle:g}s")
            continue
        poller = select.poll()
        if not server.leaving:
            poller.register(listening, select.POLLIN)
        conns: dict[int, Running] = {}
        for pidfd, run in server.running.items():
            poller.register(pidfd, select.POLLIN)
            if not run.client_gone:
                conns[run.conn.fileno()] = run
                poller.register(run.conn.fileno(), select.POLLRDHUP)  # (its GO byte is the command's to read)
        try:
            ready = poller.poll(1000)
        except InterruptedError:
            continue
        for fd, _ in ready:
            if fd == listening and not server.leaving:
                last = time.monotonic()
                try:
                    request = _accept(server)
                except Exception as exc:  # (one client's trouble must not end the server)
                    server.log(f"a connection failed: {type(exc).__name__}: {exc}")
                    continue
                if request is not None:
                    return request  # (in the command's process)
            elif fd in server.running:
                _ended(server, server.running.pop(fd))
                last = time.monotonic()
            elif fd in conns and not conns[fd].client_gone:
                _client_left(server, conns[fd])
    server.log("left")
    return None


def _idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get("MAINSAIL_WARM_IDLE", IDLE)))
    except ValueError:
        return IDLE


def _accept(server: Server) -> dict | None:
    try:
        conn, _ = server.listener.accept()
    except OSError:
        return None
    try:
        conn.settimeout(REQUEST_TIMEOUT)
        peer = admission.peer(conn)  # (before the greeting: the pidfd pins the process that connected)
        try:
            protocol.send_reply(conn, protocol.HELLO)
            request, fds = _admit(server, conn, peer)
        finally:
            if peer[2] is not None:
                os.close(peer[2])
    except OSError as exc:
        server.log(f"a client left before its request was read: {exc}")
        conn.close()
        return None
    if request is None:
        conn.close()
        return None
    pid = os.fork()
    if pid == 0:
        try:
            _become(server, conn, request, fds)
        except BaseException as exc:  # (never back into the server's loop: this process is not the server)
            try:
                server.log(f"process {os.getpid()} could not take the command: {type(exc).__name__}: {exc}")
            finally:
                os._exit(1)
        return request
    for fd in fds:
        os.close(fd)
    run = Running(conn, pid)
    server.running[run.pidfd] = run
    conn.settimeout(None)
    try:
        protocol.send_reply(conn, {"pid": pid})
    except OSError:
        _client_left(server, run)
    server.log(f"running {' '.join(request['argv'][1:3])!r} as process {pid}")
    return None


def _admit(server: Server, conn: socket.socket, peer: tuple[int, int, int | None]) -> tuple[dict | None, list[int]]:
    """The request, or None after refusing it (the client then runs the command itself)."""
    pid, uid, pidfd = peer
    try:
        request, fds = protocol.recv_request(conn, REQUEST_TIMEOUT)
    except (protocol.ProtocolError, ValueError) as exc:
        server.log(f"an unreadable request: {exc}")
        return None, []
    why = stale = None
    if not admission.well_formed(request, fds):
        why = "the request is malformed"
    elif not hmac.compare_digest(request["key"], server.key):  # (first: nothing more is said to a stranger)
        why = "it did not present this server's key (it cannot read the warm directory)"
    elif uid != os.getuid():
        why = f"the client runs as uid {uid}"
    elif pidfd is None:
        why = "the process that connected cannot be pinned (no SO_PEERPIDFD: Linux 6.5 or later)"
    elif (why := admission.confined_otherwise(pid, pidfd)) is None:
        from cli.warm import preload

        if stale := preload.changed(server.files):
            why = f"the code changed on disk ({stale})"
    if why is not None:
        server.log(f"refused client {pid}: {why}")
        for fd in fds:
            os.close(fd)
        protocol.send_reply(conn, {"refused": "stale" if stale else "refused", "stale": bool(stale)})
        if stale:
            _stop(server, why)
        return None, []
    return request, fds


def _client_left(server: Server, run: Running) -> None:
    """The client closed its connection (it never shuts it down otherwise): it is gone (killed); so goes its
    command, as it would have."""
    try:
        os.kill(run.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    run.client_gone = True
    server.log(f"the client of process {run.pid} left; killed the command")


def _ended(server: Server, run: Running) -> None:
    _, status = os.waitpid(run.pid, 0)
    os.close(run.pidfd)
    reply = ({"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status)
             else {"exit": os.waitstatus_to_exitcode(status)})
    try:
        protocol.send_reply(run.conn, reply)
    except OSError:
        pass
    run.conn.close()


def _become(server: Server, conn: socket.socket, request: dict, fds: list[int]) -> None:
    """Make this process the client's command: its descriptors, directory, environment, argv, signals; then
    wait for the client's GO (none: the client runs the command itself, so this process must not)."""
    server.listener.close()
    os.close(server.lock_fd)
    for pidfd, run in server.running.items():  # (other clients' commands are not this one's business)
        os.close(pidfd)
        run.conn.close()
    from cli.warm import preload

    preload.restore_dispositions(server.signals)
    for number in request.get("ignored", []):  # (as the client had them ignored: nohup, trap '' HUP)
        try:
            signal.signal(number, signal.SIG_IGN)
        except (OSError, ValueError):
            pass
    os.umask(request["umask"])
    cwd, streams = fds[0], iter(fds[1:])
    os.fchdir(cwd)
    os.close(cwd)
    for target, is_open in zip((0, 1, 2), request["streams"]):
        if is_open:
            fd = next(streams)
            os.dup2(fd, target)
            os.close(fd)
        else:
            os.close(target)
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    sys.argv = list(request["argv"])
    preload.reopen_streams(request["streams"])
    preload.after_fork()
    os.close(server.log_fd)
    server.log_fd = -1
    conn.settimeout(None)
    go = conn.recv(1)
    os.close(conn.detach())
    if go != protocol.GO:
        os._exit(0)
