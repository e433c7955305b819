"""What the warm server loads before it serves, and what a command resets after the fork.

The server imports every module of Mainsail's packages (PACKAGES) and the libraries they load on first use
(LIBRARIES), then builds the record models' schemas. An import must not read the environment, the current
directory or the streams into module state, since the command forked later has the client's: a test
(tests/integration/test_warm_preload.py) imports all of them under two different environments and
directories and compares every module's state, and it holds the compiled extensions loaded to a list that
was read for what they do at load (UNSAFE names those that read the environment then: they are not
preloaded, so a command loads them itself, fresh).
"""

from __future__ import annotations

import gc
import os
import sys
import threading

#: Mainsail's packages: each of their modules is preloaded (but those of SKIPPED).
PACKAGES = ("statemachines", "workflows", "tasks", "cli", "demo")
#: Modules not preloaded: those that do their work on import (Flower's app reads its settings and may exit).
SKIPPED = ("tasks.flower_app",)
#: Libraries our modules import inside functions (on first use), preloaded too.
LIBRARIES = ("anthropic", "httpx", "celery", "celery.app.task", "celery.canvas", "kombu.transport.redis",
             "redis", "yaml", "rich.console", "rich.markdown", "rich.syntax", "pydantic_settings")
#: Libraries that read the environment when loaded, into state a command would inherit: libgit2 computes
#: its global and system config search paths from $HOME and $XDG_CONFIG_HOME at initialisation. A module
#: that imports one at load is not preloaded.
UNSAFE = ("pygit2",)


class _Refuse:
    """A meta path finder that keeps :data:`UNSAFE` out of the server while it preloads."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in UNSAFE:
            raise ImportError(f"{name} is not preloaded (it reads the environment when loaded)")
        return None


def begin() -> bool:
    """Before the preload: no collection while ~1,000 modules load (it is all kept anyway)."""
    was = gc.isenabled()
    gc.disable()
    return was


def load() -> tuple[int, list[str]]:
    """Import everything; returns how many modules are loaded, and those that could not be (and why)."""
    import importlib
    import pkgutil

    refuse = _Refuse()
    sys.meta_path.insert(0, refuse)
    skipped: list[str] = []
    try:
        for package in PACKAGES:
            module = importlib.import_module(package)
            for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}.", onerror=skipped.append):
                if info.name in SKIPPED or info.name.startswith("cli.warm.") or info.name.endswith(".__main__"):
                    continue
                _try(info.name, skipped)
        for name in LIBRARIES:
            _try(name, skipped)
        from workflows.models import build_schemas

        build_schemas()
    finally:
        sys.meta_path.remove(refuse)
    return len(sys.modules), skipped


def _try(name: str, skipped: list[str]) -> None:
    import importlib

    try:
        importlib.import_module(name)
    except (Exception, SystemExit) as exc:  # (a module that cannot load here loads, or fails, in the command)
        skipped.append(f"{name} ({type(exc).__name__}: {exc})")


def dispositions() -> dict[int, object]:
    """Each signal's handler now, after the preload: a command's process starts from these (the server
    then sets its own), as a process that imported the same modules would have them."""
    import signal

    out = {}
    for number in range(1, signal.NSIG):
        try:
            handler = signal.getsignal(number)
        except (OSError, ValueError):
            continue
        if handler is not None:  # (None: set from outside Python; left as it is)
            out[number] = handler
    return out


def restore_dispositions(saved: dict[int, object]) -> None:
    import signal

    for number, handler in saved.items():
        try:
            signal.signal(number, handler)
        except (OSError, ValueError):
            pass


def threads() -> int:
    """The process's threads, as the kernel counts them (a library's native threads included)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def end(gc_was: bool) -> None:
    """After the preload: what is loaded is frozen out of the collector, so that no collection in a
    command touches (and copies) the server's pages."""
    gc.freeze()
    if gc_was:
        gc.enable()


def snapshot() -> dict[str, tuple[int, int]]:
    """What the server's code is, to tell when it changed on disk: each file of Mainsail's own modules (an
    editable install is edited in place), and each directory of ``sys.path`` (installing, upgrading or
    removing a library adds or removes entries there)."""
    import importlib

    roots = tuple(os.path.dirname(importlib.import_module(p).__file__) + os.sep for p in PACKAGES)
    paths = [m.__file__ for m in list(sys.modules.values())
             if isinstance(getattr(m, "__file__", None), str) and m.__file__.startswith(roots)]
    files: dict[str, tuple[int, int]] = {}
    for path in [*paths, *(p for p in sys.path if p and os.path.isdir(p))]:
        try:
            st = os.stat(path)
        except OSError:
            continue
        files[path] = (st.st_mtime_ns, st.st_size)
    return files


def changed(files: dict[str, tuple[int, int]]) -> str | None:
    """The first file of :func:`snapshot` that is no longer what was loaded; None if none."""
    for path, seen in files.items():
        try:
            st = os.stat(path)
        except OSError:
            return f"{path} is gone"
        if (st.st_mtime_ns, st.st_size) != seen:
            return f"{path} was modified"
    return None


def reopen_streams(streams: list[bool]) -> None:
    """sys.stdin, stdout and stderr on the client's descriptors, made as the interpreter makes them at start
    (CPython's create_stdio: the encoding and errors of the server's own, which has the same locale and
    PYTHON* variables: place.py; line buffered on a terminal, stderr always; unbuffered under -u)."""
    import io

    unbuffered = bool(getattr(sys.__stdout__, "write_through", False))
    for fd, name, is_open in zip((0, 1, 2), ("stdin", "stdout", "stderr"), streams):
        template = getattr(sys, f"__{name}__") or getattr(sys, name)
        stream = None
        if is_open:
            raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
            raw.name = f"<{name}>"
            binary = raw if (unbuffered and fd) else (io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw))
            line = not unbuffered and (fd == 2 or raw.isatty())
            stream = io.TextIOWrapper(binary, encoding=template.encoding, errors=template.errors, newline="\n",
                                      line_buffering=line, write_through=unbuffered and fd != 0)
            stream.mode = "r" if fd == 0 else "w"
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def after_fork() -> None:
    """In the command's process, once it has the client's environment and directory: what a library computed
    at import from the server's (tests/integration/test_warm_preload.py finds them), and per-process
    secrets, computed again as a process of its own would have them."""
    import time

    gc.enable()
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None  # (the client's directory was deleted: as in a process started there)
    for name in ("multiprocessing.process", "billiard.process"):  # (both: the directory the process started in)
        module = sys.modules.get(name)
        if module is not None:
            if cwd is not None:
                module.ORIGINAL_DIR = cwd
            module.current_process().authkey = os.urandom(32)  # (a secret of each process's own)
    if (rich := sys.modules.get("rich")) is not None and cwd is not None:
        rich._IMPORT_CWD = cwd
    if (term := sys.modules.get("celery.utils.term")) is not None:
        term.TERM = os.environ.get("TERM")
        term.TERM_IS_SCREEN = bool(term.TERM and term.TERM.startswith("screen"))
    if (site := sys.modules.get("site")) is not None:
        site.USER_BASE = site.USER_SITE = None
        site.getusersitepackages()
    if (logging := sys.modules.get("logging")) is not None:
        logging._startTime = time.time()
