"""Managed (policy) settings: /etc/claude-code/managed-settings.json and managed-settings.d/*.json, above
every other layer (``--settings`` included), never left out by ``--setting-sources``
(workflows/settings/managed.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workflows.models import PermissionMode
from workflows.models.options import SessionOptions
from workflows.permissions import Decision, decide
from workflows.permissions.bypass import effective_mode
from workflows.sessions.settings_files import load_permission_settings
from workflows.sessions.setup import session_options
from workflows.settings.errors import SettingsError
from workflows.tools import get_tool

DISABLE = {"permissions": {"disableBypassPermissionsMode": "disable"}}


@pytest.fixture
def home(tmp_path) -> Path:
    d = tmp_path / "home"
    d.mkdir()
    return d


@pytest.fixture
def managed(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "etc-claude-code"
    d.mkdir()
    monkeypatch.setenv("MAINSAIL_MANAGED_SETTINGS_DIR", str(d))
    return d


def write(path: Path, content) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_the_policy_file_is_read_last_above_the_settings_flag(ws, home, managed):
    write(home / ".claude/settings.json", {"permissions": {"defaultMode": "acceptEdits", "allow": ["Bash(ls:*)"]}})
    write(managed / "managed-settings.json", {"permissions": {"defaultMode": "plan", "deny": ["Bash(curl:*)"]}})
    extra = [("--settings (inline JSON)", json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))]
    files = load_permission_settings(ws, home, extra=extra)
    assert files.default_mode is PermissionMode.PLAN and files.default_mode_layer == "policy"
    assert files.files[-1] == str(managed / "managed-settings.json")
    assert [r.rule for r in files.rules.deny] == ["Bash(curl:*)"]
    assert [r.rule for r in files.rules.allow] == ["Bash(ls:*)"]
    # --setting-sources cannot leave the policy out
    assert load_permission_settings(ws, home, sources=["project"]).default_mode is PermissionMode.PLAN


def test_drop_in_files_follow_the_policy_file_in_name_order(ws, home, managed):
    write(managed / "managed-settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
    write(managed / "managed-settings.d" / "20-b.json", {"permissions": {"defaultMode": "dontAsk"}})
    write(managed / "managed-settings.d" / "10-a.json", {"permissions": {"defaultMode": "plan"}})
    write(managed / "managed-settings.d" / ".hidden.json", {"permissions": {"defaultMode": "default"}})
    write(managed / "managed-settings.d" / "notes.txt", "not settings")
    files = load_permission_settings(ws, home)
    assert files.default_mode is PermissionMode.DONT_ASK
    assert files.files == [str(managed / "managed-settings.json"), str(managed / "managed-settings.d" / "10-a.json"),
                           str(managed / "managed-settings.d" / "20-b.json")]


def test_a_policy_disable_beats_every_way_to_ask_for_bypass(engine, settings, ws, home, managed):
    write(home / ".claude/settings.json", {"permissions": {"defaultMode": "bypassPermissions"}})
    path = write(managed / "managed-settings.d" / "security.json", DISABLE)
    perms, warnings = session_options(ws, settings, home=home, permission_mode="bypassPermissions",
                                      setting_sources=["user"])
    assert perms["permission_mode"] is PermissionMode.DEFAULT and str(path) in perms["bypass_disabled_by"]
    assert warnings[0].startswith(f"Bypass permissions mode was disabled by settings (permissions."
                                  f"disableBypassPermissionsMode in {path})")


def test_a_policy_may_grant_bypass_as_the_users_own_files_may(settings, ws, home, managed):
    write(managed / "managed-settings.json", {"permissions": {"defaultMode": "bypassPermissions"}})
    perms, warnings = session_options(ws, settings, home=home)
    assert perms["permission_mode"] is PermissionMode.BYPASS and warnings == []


def test_the_check_at_each_decision_sees_a_policy_file_dropped_in_mid_session(engine, ws, home, managed):
    rec = engine.create_session(str(ws), SessionOptions(permission_mode="bypassPermissions"), home=str(home))
    bash = get_tool("Bash"), {"command": "rm -rf build"}
    assert effective_mode(rec) is PermissionMode.BYPASS and decide(*bash, rec).decision is Decision.ALLOW
    write(managed / "managed-settings.d" / "50-lockdown.json", DISABLE)
    assert effective_mode(rec) is PermissionMode.DEFAULT and decide(*bash, rec).decision is Decision.ASK


def test_a_drop_in_directory_that_cannot_be_listed_fails_closed(engine, ws, home, managed, monkeypatch):
    rec = engine.create_session(str(ws), SessionOptions(permission_mode="bypassPermissions"), home=str(home))
    drop_in = managed / "managed-settings.d"
    drop_in.mkdir()
    real = os.listdir

    def listdir(path="."):
        if Path(path) == drop_in:  # (as root, chmod 0 would not stop the listing)
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    with pytest.raises(SettingsError) as info:
        load_permission_settings(ws, home)
    assert str(info.value).startswith(f"Cannot list the managed settings directory {drop_in}")
    assert effective_mode(rec) is PermissionMode.DEFAULT
