"""Whether a session may run in ``bypassPermissions``: :func:`refusal`, the one decision every path asks.

Claude Code's ``"permissions": {"disableBypassPermissionsMode": "disable"}`` turns the mode off. It
only restricts, so any settings file that sets it wins (a later, higher-priority file cannot turn it
back on), and ``"disable"`` is its only value. :func:`refusal` says what forbids bypass, checking:

1. the team server's API token of the request, when it was made without ``--allow-bypass``;
2. the sources recorded in the session (``SessionRecord.bypass_disabled_by``): the files and
   ``--settings`` layers that disabled it when the session started, kept for the session's life
   (also on a worker where the user's files are not on disk);
3. the six settings files and the managed (policy) ones as they are now, all of them whatever
   ``--setting-sources`` chose; a file
   that exists but cannot be read, parsed, or holds another value refuses too (fail closed).

What each path does with a refusal, as Claude Code 2.1.332 does (probed through its CLI):

* a new or resumed session (``--permission-mode``, ``--dangerously-skip-permissions``,
  ``MAINSAIL_PERMISSION_MODE``, ``defaultMode``, a record holding bypass) runs in the next mode asked
  for, else ``default``, with the warning "Bypass permissions mode was disabled by settings"
  (:func:`choose_mode`);
* a switch mid-session (an SDK client's ``set_permission_mode``, Shift+Tab, the engine's
  ``update_limits``) is refused: "Cannot set permission mode to bypassPermissions because it is
  disabled by settings or configuration" (:func:`require`, :class:`BypassDisabled`);
* an SDK client's ``set_permission_mode`` to bypassPermissions is refused too unless the command was
  launched allowing it (``--permission-mode bypassPermissions``, ``--dangerously-skip-permissions`` or
  ``--allow-dangerously-skip-permissions``): :data:`NOT_LAUNCHED`, error code ``bypass_not_launched``;
* a token's refusal is never fallen back from: the server answers 403 (:func:`token_refusal`);
* the permission check evaluates a record that still holds bypassPermissions as ``default``: every
  call that would ask asks (:func:`effective_mode`).

Apart from the setting, a project's own settings files never grant bypass: their ``defaultMode:
bypassPermissions`` is ignored with a warning (:func:`trusted_default`), as Claude Code does.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from workflows.exceptions import BypassDisabled
from workflows.models import PermissionMode
from workflows.settings.errors import SettingsError
from workflows.settings.layers import settings_layers
from workflows.settings.managed import policy_layers

if TYPE_CHECKING:
    from workflows.models import SessionRecord, TokenRecord

__all__ = ["NOT_LAUNCHED", "Refusal", "apply_bypass_key", "choose_mode", "effective_mode", "file_refusals", "refusal",
           "require", "require_token_for", "resumed_mode", "switch_refusal", "token_refusal", "trusted_default"]

#: Claude Code 2.1.332's answer to set_permission_mode(bypassPermissions) in a command not launched allowing it.
NOT_LAUNCHED = ("Cannot set permission mode to bypassPermissions because the session was not launched with "
                "--dangerously-skip-permissions")
KEY = "disableBypassPermissionsMode"
NAME = f"permissions.{KEY}"
OTHER_MODES = "default, acceptEdits, plan or dontAsk"


@dataclass(frozen=True)
class Refusal:
    """What forbids bypassPermissions: a settings file (or ``--settings`` layer), or an API token."""

    source: str  # a settings file's path, "--settings (inline JSON)", or the token's name
    token: bool = False
    problem: str = ""  # a file that refuses because it could not be read as settings

    def text(self) -> str:
        if self.token:
            return f"API token {self.source!r} was made without --allow-bypass"
        if self.problem:
            return f"{self.source} {self.problem}, so bypassPermissions is refused until it is fixed"
        return f"{NAME} in {self.source}"


def apply_bypass_key(out, data: dict, where) -> None:
    """Note that one settings file sets ``permissions.disableBypassPermissionsMode`` (on ``out``, a
    :class:`~workflows.sessions.settings_files.PermissionSettings`).

    Raises:
        SettingsError: any value but ``"disable"`` (the only one Claude Code accepts).
    """
    perms = data.get("permissions") if isinstance(data.get("permissions"), dict) else {}
    value = perms.get(KEY)
    if value is None:
        return
    if value != "disable":
        raise SettingsError(f"{where.key(NAME)}: '{NAME}' is {json.dumps(value)}, but its only value is "
                            f'"disable" (as in Claude Code), which turns bypassPermissions mode off. Write '
                            f'"{KEY}": "disable", or remove the key.')
    if str(where.path) not in out.bypass_disabled_by:
        out.bypass_disabled_by.append(str(where.path))


def refusal(mode, *, workspace: str, home: str | None, recorded: Iterable[str] = (),
            token: "TokenRecord | None" = None) -> Refusal | None:
    """Why a session in ``workspace`` of the user whose home is ``home`` may not run in ``mode``; None
    when it may (every mode but bypassPermissions always may). See the module docstring for the order."""
    if mode != PermissionMode.BYPASS:
        return None
    if token is not None and not token.allow_bypass:
        return Refusal(token.name, token=True)
    for source in recorded:
        return Refusal(source)
    found = current_refusals(workspace, home)
    return found[0] if found else None


#: (workspace, home) -> (the files' stat stamps, the refusals read from them): see current_refusals.
_CHECKED: dict[tuple[str, str], tuple[tuple, tuple[Refusal, ...]]] = {}
_CHECKED_MAX = 1024
#: A file changed less than this long ago (ns) is read again at the next check.
RACY_NS = 100_000_000
#: (workspace, home) -> the six files' paths.
_PATHS: dict[tuple[str, str], tuple[str, ...]] = {}


def current_refusals(workspace: str, home: str | None) -> tuple[Refusal, ...]:
    """:func:`file_refusals` as the files are now, read again only when one of them changed.

    The permission check asks at every decision of a bypass session; reading six files there cost
    ~80 us a call (~16 us this way). Each file's ``stat`` (modification and change times in ns, size,
    inode; or that it is missing) stamps what was read; any difference, or a file that cannot be
    stat'ed, reads them all again. What was read is not kept while a file changed less than
    :data:`RACY_NS` ago: file times move in clock ticks, so a second write of the same size within
    one tick would leave the same stamp."""
    home = home or os.path.expanduser("~")
    key = (workspace, home)
    paths = _PATHS.get(key)
    if paths is None:
        if len(_PATHS) >= _CHECKED_MAX:
            _PATHS.clear()
        paths = _PATHS[key] = tuple(str(path) for source, path in settings_layers(Path(workspace), Path(home))
                                    if source != "policy")
    # (the managed files are listed each time: a drop-in file may come or go)
    stamps = tuple(map(_stamp, paths + tuple(str(path) for _, path in policy_layers())))
    hit = _CHECKED.get(key)
    if hit is not None and hit[0] == stamps:
        return hit[1]
    found = tuple(file_refusals(workspace, home))
    if len(_CHECKED) >= _CHECKED_MAX:
        _CHECKED.clear()
    settled = time.time_ns() - RACY_NS  # (git's "racy clean": a file changed within the clock's tick
    if all(s is None or (s != "unknown" and s[1] < settled) for s in stamps):  # could change again unseen)
        _CHECKED[key] = (stamps, found)
    return found


def _stamp(path: str):
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return "unknown"  # (read again each time: file_refusals decides)
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def file_refusals(workspace: str, home: str | None) -> Iterator[Refusal]:
    """Each settings file (the six, then the managed ones) that refuses bypassPermissions now."""
    for _, path in settings_layers(Path(workspace), Path(home or os.path.expanduser("~"))):
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, UnicodeDecodeError) as exc:
            yield Refusal(str(path), problem=f"cannot be read ({getattr(exc, 'strerror', None) or exc})")
            continue
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            yield Refusal(str(path), problem=f"is not valid JSON ({exc.msg}, line {exc.lineno})")
            continue
        except (ValueError, RecursionError) as exc:  # a 5,000-digit number, nesting past the recursion limit
            yield Refusal(str(path), problem=f"cannot be read as settings ({type(exc).__name__})")
            continue
        if not isinstance(data, dict):
            yield Refusal(str(path), problem="is not a JSON object")
            continue
        perms = data.get("permissions", {})
        if not isinstance(perms, dict):
            yield Refusal(str(path), problem="has a 'permissions' that is not an object")
            continue
        value = perms.get(KEY)
        if value == "disable":
            yield Refusal(str(path))
        elif value is not None:
            yield Refusal(str(path), problem=f'sets {NAME} to {json.dumps(value)[:40]}, not "disable"')


#: The settings layers whose ``defaultMode`` may be bypassPermissions: a project's files (``project``,
#: ``local``) are the repository's to write, so a cloned repository cannot turn every check off.
GRANTING_LAYERS = ("user", "flag", "policy")


def trusted_default(mode, layer: str | None, source: str | None) -> tuple[PermissionMode | None, list[str]]:
    """A settings ``defaultMode`` as a session may start in it: None, with a warning, for a
    bypassPermissions that a project's file asks for (as Claude Code: "only policy/user/flag settings
    may grant bypass mode (projectSettings and localSettings are repo-controllable)")."""
    if mode is None or PermissionMode(mode) is not PermissionMode.BYPASS or layer in GRANTING_LAYERS:
        return (None if mode is None else PermissionMode(mode)), []
    return None, [f'settings defaultMode "bypassPermissions" in {source} is ignored: only user settings or '
                  "flags may grant bypass mode (a project's settings files are the repository's to write). "
                  "Ask for it with --permission-mode bypassPermissions, or in ~/.claude/settings.json."]


def choose_mode(candidates: Iterable[tuple[PermissionMode | str | None, str]], *, workspace: str,
                home: str | None, recorded: Iterable[str] = (), token: "TokenRecord | None" = None,
                who: str = "the session") -> tuple[PermissionMode, list[str]]:
    """The mode a session starts or resumes in: the first of ``candidates`` (``(mode, what asked for
    it)``, None skipped) that :func:`refusal` lets through, else ``default``; and the warnings to show.

    Raises:
        BypassDisabled: an API token refuses bypassPermissions (a 403: a token's refusal is never
            turned into another mode behind the caller's back).
    """
    recorded = list(recorded)
    refused: list[Refusal] = []
    for mode, asked_by in candidates:
        if mode is None:
            continue
        why = refusal(mode, workspace=workspace, home=home, recorded=recorded, token=token)
        if why is None:
            chosen = PermissionMode(mode)
            break
        if why.token:
            raise BypassDisabled(token_refusal(why.source, f"start a session in bypassPermissions mode (asked for "
                                                           f"by {asked_by})", "ask for another permission_mode"))
        refused.append(why)
    else:
        chosen = PermissionMode.DEFAULT
    return chosen, [f"Bypass permissions mode was disabled by settings ({why.text()}): {who} runs in "
                    f"{chosen.value} mode." for why in refused[:1]]


def resumed_mode(rec: "SessionRecord", requested: PermissionMode | str | None = None,
                 recorded: Iterable[str] = ()) -> tuple[PermissionMode | None, list[str]]:
    """For a session taken up again (``--resume``, ``--continue``, a fork, ``/resume``): the mode to set,
    None to keep its own, and the warnings. ``requested``: a ``--permission-mode`` given now;
    ``recorded``: sources disabling bypass given now (``--settings``). A record holding a refused
    bypassPermissions is set to the next mode, as Claude Code refuses a restored bypass mode."""
    mode, warnings = choose_mode([(requested, "--permission-mode"), (rec.permission_mode, "the session")],
                                 workspace=rec.workspace, home=rec.home, who=f"session {rec.id[:8]}",
                                 recorded=[*rec.bypass_disabled_by, *recorded])
    return (mode if requested is not None or mode is not rec.permission_mode else None), warnings


def require(mode, *, workspace: str, home: str | None, recorded: Iterable[str] = (),
            token: "TokenRecord | None" = None, doing: str = "run a session in bypassPermissions mode",
            instead: str = "ask for another permission mode") -> None:
    """Refuse a switch to (or a session created in) bypassPermissions that :func:`refusal` forbids.
    ``doing`` and ``instead`` word a token's refusal (:func:`token_refusal`).

    Raises:
        BypassDisabled: with Claude Code's message and what disabled the mode.
    """
    why = refusal(mode, workspace=workspace, home=home, recorded=recorded, token=token)
    if why is None:
        return
    if why.token:
        raise BypassDisabled(token_refusal(why.source, doing, instead))
    raise BypassDisabled("Cannot set permission mode to bypassPermissions because it is disabled by settings or "
                         f"configuration ({why.text()}). Use {OTHER_MODES}.")


def switch_refusal(mode, rec: "SessionRecord", launched_allowing: bool) -> tuple[str, str] | None:
    """Why an SDK client may not switch session ``rec`` to ``mode``, as ``(message, error code)``: bypass disabled
    by settings (checked first, as Claude Code does), or a command not ``launched_allowing`` bypass; None: it may."""
    if PermissionMode(mode) is not PermissionMode.BYPASS:
        return None
    try:
        require(mode, workspace=rec.workspace, home=rec.home, recorded=rec.bypass_disabled_by)
    except BypassDisabled as exc:
        return str(exc), "bypass_disabled"
    return None if launched_allowing else (NOT_LAUNCHED, "bypass_not_launched")


def require_token_for(rec: "SessionRecord", token: "TokenRecord", doing: str, instead: str) -> None:
    """Refuse ``token`` acting on session ``rec`` (``doing`` it) while ``rec`` runs in bypassPermissions
    and the token was made without ``--allow-bypass``.

    Raises:
        BypassDisabled: it may not (the API answers 403).
    """
    require(effective_mode(rec), workspace=rec.workspace, home=rec.home, recorded=rec.bypass_disabled_by,
            token=token, doing=doing, instead=instead)


def token_refusal(name: str, doing: str, instead: str) -> str:
    """The 403's message: the token, what it may not do, and both fixes."""
    return (f"Token {name!r} may not {doing}: it was made without --allow-bypass. {instead[0].upper()}"
            f"{instead[1:]} ({OTHER_MODES}), or have the server's admin allow it with "
            f"`mainsail token update {name} --allow-bypass`.")


def effective_mode(rec: "SessionRecord") -> PermissionMode:
    """The mode the permission check applies to ``rec``: its own, but ``default`` for a record holding
    bypassPermissions that :func:`refusal` forbids now (a stale record, or one written past the checks)."""
    mode = rec.permission_mode
    if mode is not PermissionMode.BYPASS:
        return mode
    why = refusal(mode, workspace=rec.workspace, home=rec.home, recorded=rec.bypass_disabled_by)
    return mode if why is None else PermissionMode.DEFAULT
