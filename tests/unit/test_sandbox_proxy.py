"""The sandbox's allow-list proxy, against local servers only (nothing here reaches the internet).

The test plays the launcher's part: it makes the listener and hands it to the proxy over the
socketpair, as the launcher does from inside bwrap (the real path runs in tests/integration).
"""

from __future__ import annotations

import http.server
import os
import socket
import threading

import pytest

from workflows.permissions.sandbox.proxy import LAUNCHER, DomainProxy, host_allowed


@pytest.mark.parametrize("host, patterns, expected", [
    ("pypi.org", ["pypi.org"], True),
    ("PyPI.org.", ["pypi.org"], True),
    ("pypi.org", ["PYPI.ORG"], True),
    ("files.pypi.org", ["pypi.org"], False),
    ("files.pythonhosted.org", ["*.pythonhosted.org"], True),
    ("a.b.pythonhosted.org", ["*.pythonhosted.org"], True),
    ("pythonhosted.org", ["*.pythonhosted.org"], False),
    ("evilpythonhosted.org", ["*.pythonhosted.org"], False),
    ("anything.example", ["*"], True),
    ("[::1]", ["::1"], True),
    ("example.com", [], False),
])
def test_host_allowed(host, patterns, expected):
    assert host_allowed(host, patterns) is expected


def test_launcher_is_valid_python():
    compile(LAUNCHER, "<launcher>", "exec")


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"hello {self.path} host={self.headers['Host']} connection={self.headers['Connection']}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def origin():
    """A local HTTP server: the 'internet' of these tests."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy():
    """A proxy allowing ``localhost``, serving on a listener handed over like the launcher does; its port."""
    p = DomainProxy(["localhost", "*.example.test"], connect_timeout=2)
    theirs = socket.socket(fileno=os.dup(p.child_fd))
    p.start()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    socket.send_fds(theirs, [b"L"], [listener.fileno()])
    theirs.close()
    port = listener.getsockname()[1]
    listener.close()  # the proxy holds its own copy, as after the launcher's exec
    yield p, port
    p.close()


def ask(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_plain_http_to_an_allowed_host(proxy, origin):
    _p, port = proxy
    out = ask(port, f"GET http://localhost:{origin}/x?y=1 HTTP/1.1\r\nHost: localhost:{origin}\r\n"
                    "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.0 200") or out.startswith(b"HTTP/1.1 200")
    # origin-form target, proxy headers gone, one request per connection
    assert out.endswith(f"hello /x?y=1 host=localhost:{origin} connection=close".encode())


def test_connect_to_an_allowed_host(proxy, origin):
    _p, port = proxy
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"CONNECT localhost:{origin} HTTP/1.1\r\nHost: localhost:{origin}\r\n\r\n".encode())
        assert s.recv(1024) == b"HTTP/1.1 200 Connection established\r\n\r\n"
        s.sendall(b"GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")  # would be TLS for real
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    assert out.endswith(b"hello /tunnel host=x connection=close")


@pytest.mark.parametrize("request_line", ["GET http://127.0.0.1:{port}/ HTTP/1.1", "CONNECT evil.test:443 HTTP/1.1",
                                          "GET http://example.test/ HTTP/1.1"])
def test_other_hosts_get_a_403_that_says_how_to_allow_them(proxy, origin, request_line):
    _p, port = proxy
    line = request_line.format(port=origin)
    host = line.split()[1].split("//")[-1].split(":")[0].split("/")[0]
    out = ask(port, f"{line}\r\nHost: x\r\n\r\n".encode())
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403 Forbidden")
    assert body.decode() == (
        f"Mainsail sandbox: connections to {host} are not allowed. The allowed domains are localhost, "
        f"*.example.test (sandbox.network.allowedDomains). To allow it, add {host!r} to "
        "sandbox.network.allowedDomains in .claude/settings.json or .mainsail/settings.json.\n")


@pytest.mark.parametrize("request_text, phrase", [
    ("nonsense\r\n\r\n", b"malformed request line"),
    ("GET /relative HTTP/1.1\r\nHost: localhost\r\n\r\n", b"it forwards CONNECT host:port (HTTPS) and absolute"),
    ("GET ftp://localhost/ HTTP/1.1\r\n\r\n", b"cannot forward GET ftp://localhost/"),
])
def test_requests_it_cannot_forward_get_a_400(proxy, request_text, phrase):
    _p, port = proxy
    out = ask(port, request_text.encode())
    assert out.startswith(b"HTTP/1.1 400 Bad Request") and phrase in out


def test_an_allowed_host_that_does_not_answer_gets_a_502(proxy):
    _p, port = proxy
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # nothing listens once closed
    out = ask(port, f"CONNECT localhost:{dead} HTTP/1.1\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 502 Bad Gateway") and f"cannot connect to localhost:{dead}".encode() in out


def test_close_cuts_open_tunnels_and_stops_accepting(proxy, origin):
    p, port = proxy
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(f"CONNECT localhost:{origin} HTTP/1.1\r\n\r\n".encode())
    assert s.recv(1024).startswith(b"HTTP/1.1 200")
    p.close()
    assert s.recv(1024) == b""  # the tunnel was cut
    s.close()
    with pytest.raises(OSError):
        ask(port, b"CONNECT localhost:1 HTTP/1.1\r\n\r\n")


def test_a_sandbox_that_never_sends_its_listener_just_ends():
    p = DomainProxy(["localhost"])
    theirs = socket.socket(fileno=os.dup(p.child_fd))
    p.start()
    theirs.close()  # the sandbox exited before the launcher ran
    p._thread.join(2)
    assert not p._thread.is_alive()
    p.close()
