"""The CLI against a team server: with ``MAINSAIL_SERVER`` (and ``MAINSAIL_TOKEN``) set, the session
commands go through the server's HTTP API instead of Redis, so a teammate needs no Redis access.

The dispatch is here and only here: :func:`route` is given each command as the root group looks it
up (``MainsailGroup.get_command``) and, when ``MAINSAIL_SERVER`` is set, returns

- for the commands in :data:`ROUTED` (watch, sessions, show, export, pending, doctor, rewind): a
  copy of the command, with the same options and arguments, whose callback calls the API
  (cli/remote/verbs.py, listing.py, watch.py, doctor.py, rewind.py), printing what the local command
  prints (doctor: the server's checks instead of this machine's);
- for the commands in :data:`CLIENT_VERBS` (submit, send, cancel, approve, deny, compact): a copy with the same
  callback, its help saying it goes through the server: their one definition calls
  ``cli.clients.client_for()``, which picks the HTTP implementation of the client protocol here
  (cli/clients/);
- for the groups in :data:`ROUTED_GROUPS` (schedule): a copy of the group whose every subcommand is
  routed so (cli/remote/schedules.py);
- for the commands in :data:`NO_REDIS` (fsm, mcp): the command as it is (they need no Redis);
- for every other command (run, interactive mode, worker, memory, token, serve, import...): a copy
  that refuses with a message saying what to use instead, unless ``MAINSAIL_REDIS_URL`` is set too
  (an admin on the server's machine): silently starting a private Redis on a teammate's laptop would
  run sessions nobody on the server sees.
"""

from __future__ import annotations

import copy
import functools
import importlib
import os

import click

#: Command name -> "module:function" of its remote version.
ROUTED = {
    "export": "cli.remote.verbs:export_cmd",
    "pending": "cli.remote.listing:pending",
    "sessions": "cli.remote.listing:sessions",
    "show": "cli.remote.listing:show",
    "watch": "cli.remote.watch:watch",
    "doctor": "cli.remote.doctor:doctor",
    "rewind": "cli.remote.rewind:rewind",  # (cli/remote/rewind.py)
}
#: Commands whose one definition goes through the client protocol (cli/clients/): routed by themselves.
CLIENT_VERBS = frozenset({"submit", "send", "cancel", "approve", "deny", "compact"})
#: Group name -> "module:MAPPING" of subcommand name -> its remote version.
ROUTED_GROUPS = {"schedule": "cli.remote.schedules:COMMANDS"}
#: Commands that need no Redis: they work as before.
NO_REDIS = frozenset({"fsm", "mcp"})

SERVER_NOTE = ("Through MAINSAIL_SERVER, this command calls the team server's HTTP API; paths (--cwd, --add-dir, "
               "--workspace) are directories on the SERVER's machine, sent as given.")


def server_configured() -> bool:
    return bool(os.environ.get("MAINSAIL_SERVER", "").strip())


def route(command: click.Command | None) -> click.Command | None:
    """``command``, or its remote or refusing copy when ``MAINSAIL_SERVER`` is set (see the module)."""
    if command is None or not server_configured() or command.name in NO_REDIS:
        return command
    if command.name in ROUTED:
        return _remote(command, _load(ROUTED[command.name]))
    if command.name in CLIENT_VERBS:
        return _remote(command, command.callback)
    if command.name in ROUTED_GROUPS and isinstance(command, click.Group):
        impls = _load(ROUTED_GROUPS[command.name])
        group = copy.copy(command)
        group.commands = {name: _remote(sub, impls[name]) for name, sub in command.commands.items()}
        group.help = f"{command.help or ''}\n\n{SERVER_NOTE}"
        return group
    if os.environ.get("MAINSAIL_REDIS_URL", "").strip():
        return command
    return _refusing(command)


def require_redis(what: str) -> None:
    """Refuse ``what`` (a command that needs Redis) when only a server is configured."""
    if server_configured() and not os.environ.get("MAINSAIL_REDIS_URL", "").strip():
        raise click.ClickException(_needs_redis(what))


def _needs_redis(what: str) -> str:
    return (f"{what} needs direct access to Redis, and MAINSAIL_SERVER is set (a team server) without "
            "MAINSAIL_REDIS_URL. Through the server use `mainsail submit --cwd DIR \"...\"` and `mainsail watch "
            "SID` (also sessions, show, send, cancel, pending, approve, deny, schedule). To use Redis directly, set "
            "MAINSAIL_REDIS_URL too, or unset MAINSAIL_SERVER.")


def _load(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _remote(command: click.Command, impl) -> click.Command:
    remote = copy.copy(command)
    remote.params = [_server_side(p) for p in command.params]
    remote.callback = impl
    remote.help = f"{command.help or ''}\n\n{SERVER_NOTE}"
    return remote


def _server_side(param: click.Parameter) -> click.Parameter:
    """A path option as the server takes it: a string checked on the server's machine, not here."""
    if isinstance(param, click.Option) and "--cwd" in param.opts:
        p = copy.copy(param)
        p.type = click.STRING
        p.default = None
        p.help = ("The session's workspace: an absolute path of a directory on the SERVER's machine (required "
                  "through MAINSAIL_SERVER).")
        return p
    return param


def _refusing(command: click.Command) -> click.Command:
    refused = copy.copy(command)

    @functools.wraps(command.callback or (lambda: None))
    def refuse(*args, **kwargs):
        raise click.ClickException(_needs_redis(f"`mainsail {command.name}`" if command.name != "mainsail"
                                                else "Claude Code's command line (`mainsail -p ...`)"))

    refused.callback = refuse
    return refused


__all__ = ["CLIENT_VERBS", "NO_REDIS", "ROUTED", "ROUTED_GROUPS", "require_redis", "route", "server_configured"]
