"""Where a warm server listens, and which clients it can serve (standard library only: the client loads it).

A server suits a client when both would be the same interpreter: same Python, ``sys.path``, interpreter
flags, user and groups, and the same values of the variables read only at interpreter start (``PYTHON*``,
the locale's, the dynamic loader's, the allocator's and
OpenSSL's). These go into a fingerprint, and the fingerprint
into the socket's name, so a client only ever finds a server that suits it. Everything else in the
environment travels with each request.

The socket lives in ``MAINSAIL_WARM_DIR``, else in ``warm/`` under Mainsail's data directory (which the
Bash sandbox hides): a directory of the user's own, mode 0700, or no warm start at all.
"""

from __future__ import annotations

import os
import sys

from cli.warm.protocol import VERSION

#: ``MAINSAIL_WARM`` set to one of these turns warm start off.
OFF = ("0", "false", "no", "off")
#: Variables read at interpreter start or when a library loads (the dynamic loader, the C library's allocator
#: and locale, OpenSSL), by prefix and by name: a server is started with the client's.
STARTUP_PREFIXES = ("PYTHON", "LC_", "LD_", "MALLOC_", "OPENSSL_")
STARTUP_NAMES = ("LANG", "LANGUAGE", "LOCPATH", "GCONV_PATH", "NLSPATH", "GLIBC_TUNABLES")
#: AF_UNIX's limit on a socket's path (108 bytes with its terminating NUL).
MAX_PATH = 107


def enabled() -> bool:
    return os.environ.get("MAINSAIL_WARM", "").strip().lower() not in OFF and sys.platform == "linux"


def fingerprint() -> str:
    """What makes this interpreter this interpreter, hashed (16 hex digits)."""
    import json
    import zlib

    env = sorted((k, v) for k, v in os.environ.items()
                 if k.startswith(STARTUP_PREFIXES) or k in STARTUP_NAMES)
    facts = json.dumps([VERSION, sys.executable, sys.version, sys.path, list(sys.flags), os.getuid(), os.getgid(),
                        sorted(os.getgroups()), env])
    data = facts.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def warm_dir() -> str:
    """The directory of the sockets (not checked: see :func:`own_dir`)."""
    chosen = os.environ.get("MAINSAIL_WARM_DIR")
    if chosen:
        return chosen
    data = os.environ.get("MAINSAIL_DATA_DIR")  # (workflows/settings/env.py's data_dir and its default)
    if not data:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        data = os.path.join(base, "mainsail")
    return os.path.join(data, "warm")


def socket_path(directory: str | None = None, print_: str | None = None) -> str | None:
    """The socket of the server that suits this interpreter; None where it cannot have one (a path too long
    for AF_UNIX)."""
    path = os.path.join(directory or warm_dir(), f"{print_ or fingerprint()}.sock")
    return path if len(os.fsencode(path)) <= MAX_PATH else None


def beside(socket: str, suffix: str) -> str:
    """A server's other file (``.log``, ``.lock``, ``.pid``, ``.key``): the socket's path, another suffix."""
    return socket.removesuffix(".sock") + suffix


def own_dir(directory: str, create: bool) -> bool:
    """True when ``directory`` is a real directory of this user that nobody else may enter (created so with
    ``create``). Anything else (a symlink, another owner, group or world access) means no warm start."""
    import stat

    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.makedirs(os.path.dirname(directory), exist_ok=True)
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return False
        try:
            st = os.lstat(directory)
        except OSError:
            return False
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
