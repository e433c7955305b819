"""``mainsail warm``: see and stop the warm servers that run this user's commands (cli/warm/)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import click

from cli.warm import place


def servers() -> list[tuple[Path, int]]:
    """Each server's socket in the warm directory and its pid (0: none answers for it)."""
    directory = Path(place.warm_dir())
    found = []
    for sock in sorted(directory.glob("*.sock")) if directory.is_dir() else ():
        found.append((sock, _pid(sock)))
    return found


def _pid(sock: Path) -> int:
    """The server's pid, if that process is a warm server still (a pid file may outlive a crash)."""
    try:
        pid = int(sock.with_suffix(".pid").read_text())
    except (OSError, ValueError):
        return 0
    return pid if _is_server(pid) else 0


def _is_server(pid: int) -> bool:
    """Process ``pid`` is a warm server, alive."""
    try:
        return b"cli.warm.server" in Path(f"/proc/{pid}/cmdline").read_bytes() and _alive(pid)
    except OSError:
        return False


def _alive(pid: int) -> bool:
    """Process ``pid`` has not ended (a zombie has; a process ending has an empty command line already)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


@click.group("warm")
def warm() -> None:
    """Warm start: a server that has Mainsail loaded runs your commands in a fork (docs/warm-start.md)."""


@warm.command("status")
def status() -> None:
    """List the warm servers of this user (MAINSAIL_WARM_DIR, else warm/ in the data dir)."""
    where = place.warm_dir()
    found = servers()
    state = "on" if place.enabled() else "off (MAINSAIL_WARM)"
    click.echo(f"warm start: {state}; servers in {where}")
    if not found:
        click.echo("  none running: the next `mainsail -p`, `sessions`, `show`, ... starts one.")
    for sock, pid in found:
        if not pid:
            click.echo(f"  {sock.name}: no server answers (left without cleaning up)")
            continue
        click.echo(f"  {sock.name}: pid {pid}, {_rss(pid)}, {_served(sock)}")


def _rss(pid: int) -> str:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return f"{int(line.split()[1]) // 1024} MiB resident"
    except (OSError, ValueError):
        pass
    return "memory unknown"


def _served(sock: Path) -> str:
    try:
        lines = sock.with_suffix(".log").read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    ran = sum(1 for line in lines if "] running " in line)
    return f"{ran} command{'s' if ran != 1 else ''} run since it started (log: {sock.with_suffix('.log')})"


@warm.command("stop")
def stop() -> None:
    """Stop the warm servers (commands they run finish first); the next command starts a fresh one."""
    stopped = 0
    for sock, pid in servers():
        if pid:
            os.kill(pid, signal.SIGTERM)
            stopped += 1
            deadline = time.monotonic() + 5  # (it stops listening at once; it leaves once its commands end)
            while _alive(pid):
                if time.monotonic() > deadline:
                    click.echo(f"warm server {pid} stopped listening; it leaves once the commands it runs end")
                    break
                time.sleep(0.02)
    click.echo(f"stopped {stopped} warm server{'s' if stopped != 1 else ''}" if stopped else "no warm server runs")


__all__ = ["warm"]
