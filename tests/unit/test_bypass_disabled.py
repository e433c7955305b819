"""``permissions.disableBypassPermissionsMode``: the settings key, and the one decision
(workflows.permissions.bypass) asked on every path that could put a session into bypassPermissions.

Each row of the adversarial tables below is a way to get bypass while a settings file disables it;
the session must never run in bypass, and the permission check must never allow everything."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.inline import Inline, scripted_model
from tests.session_kw import create as create_session
from workflows.exceptions import BypassDisabled, TokenError
from workflows.models import PermissionMode, RuleSet, RuleSpec, TokenRecord
from workflows.models.options import RemoteOptions, SessionOptions, SessionSetup
from workflows.permissions import Decision, decide
from workflows.permissions.bypass import choose_mode, effective_mode, refusal, resumed_mode
from workflows.schedules import Schedule
from workflows.sessions.firing import fire
from workflows.sessions.settings_files import load_permission_settings
from workflows.sessions.setup import session_options
from workflows.settings.errors import SettingsError
from workflows.store.api_tokens import TokenStore
from workflows.store.schedules import ScheduleStore
from workflows.tools import get_tool

BYPASS = PermissionMode.BYPASS
DISABLE = {"permissions": {"disableBypassPermissionsMode": "disable"}}
LAYERS = [("home", ".claude/settings.json"), ("home", ".mainsail/settings.json"), ("ws", ".claude/settings.json"),
          ("ws", ".mainsail/settings.json"), ("ws", ".claude/settings.local.json"),
          ("ws", ".mainsail/settings.local.json")]
WARNING = "Bypass permissions mode was disabled by settings"
SWITCH = "Cannot set permission mode to bypassPermissions because it is disabled by settings or configuration"


@pytest.fixture
def home(tmp_path) -> Path:
    d = tmp_path / "home"
    d.mkdir()
    return d


def write(base: Path, rel: str, content) -> Path:
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return path


def layer(n: int, ws: Path, home: Path, content) -> Path:
    base, rel = LAYERS[n]
    return write(home if base == "home" else ws, rel, content)


# =========================================================================== the settings key


@pytest.mark.parametrize("n", range(6))
def test_disable_in_any_of_the_six_files_is_noted(ws, home, n):
    path = layer(n, ws, home, DISABLE)
    assert load_permission_settings(ws, home).bypass_disabled_by == [str(path)]


@pytest.mark.parametrize("value", [True, False, "Disable", "enable", "disabled", 1, 0, [], {}, ["disable"]])
def test_any_other_value_stops_the_session_naming_the_file_line_and_fix(ws, home, value):
    path = write(home, ".claude/settings.json", '{\n  "model": "opus",\n  "permissions": {\n    "allow": [],\n'
                 f'    "disableBypassPermissionsMode": {json.dumps(value)}\n  }}\n}}\n')
    with pytest.raises(SettingsError) as info:
        load_permission_settings(ws, home)
    msg = str(info.value)
    assert msg.startswith(f"{path}, line 5: 'permissions.disableBypassPermissionsMode' is {json.dumps(value)}")
    assert 'only value is "disable"' in msg and 'Write "disableBypassPermissionsMode": "disable", or remove' in msg


def test_null_is_no_setting_and_the_settings_flag_disables_too(ws, home):
    write(ws, ".claude/settings.json", {"permissions": {"disableBypassPermissionsMode": None}})
    assert load_permission_settings(ws, home).bypass_disabled_by == []
    extra = [("--settings (inline JSON)", json.dumps(DISABLE))]
    assert load_permission_settings(ws, home, extra=extra).bypass_disabled_by == ["--settings (inline JSON)"]


# =========================================================================== a new session: every way to ask


#: (what asks for bypass, session_options keywords, files to write: (layer, content)..., the mode it gets)
STARTS = [
    ("--permission-mode / --dangerously-skip-permissions", {"permission_mode": "bypassPermissions"},
     [(0, DISABLE)], PermissionMode.DEFAULT),
    ("MAINSAIL_PERMISSION_MODE", {"env_mode": "bypassPermissions"}, [(1, DISABLE)], PermissionMode.DEFAULT),
    ("defaultMode in the same file", {}, [(0, {"permissions": {"defaultMode": "bypassPermissions",
                                                                "disableBypassPermissionsMode": "disable"}})],
     PermissionMode.DEFAULT),
    ("the user's other file's defaultMode over a disable", {},
     [(0, DISABLE), (1, {"permissions": {"defaultMode": "bypassPermissions"}})], PermissionMode.DEFAULT),
    ("a local file cannot re-enable what the project disables", {"permission_mode": "bypassPermissions"},
     [(2, DISABLE), (5, {"permissions": {"defaultMode": "bypassPermissions"}})], PermissionMode.DEFAULT),
    ("the flag falls back to defaultMode, as in Claude Code", {"permission_mode": "bypassPermissions"},
     [(0, DISABLE), (2, {"permissions": {"defaultMode": "acceptEdits"}})], PermissionMode.ACCEPT_EDITS),
    ("--setting-sources project leaves the user's disable in force",
     {"permission_mode": "bypassPermissions", "setting_sources": ["project"]}, [(0, DISABLE)],
     PermissionMode.DEFAULT),
    ("--settings inline JSON", {"permission_mode": "bypassPermissions",
                                "extra_settings": [("--settings (inline JSON)", json.dumps(DISABLE))]}, [],
     PermissionMode.DEFAULT),
]


@pytest.mark.parametrize("asks, kw, files, expected", STARTS, ids=[row[0] for row in STARTS])
def test_a_new_session_never_starts_in_bypass_while_disabled(engine, settings, ws, home, asks, kw, files, expected):
    for n, content in files:
        layer(n, ws, home, content)
    kw = dict(kw)
    if "env_mode" in kw:
        settings = settings.model_copy(update={"permission_mode": kw.pop("env_mode")})
    perms, warnings = session_options(ws, settings, home=home, **kw)
    assert perms["permission_mode"] is expected
    assert warnings[0].startswith(WARNING + " (") and f"runs in {expected.value} mode" in warnings[0]
    rec = create_session(engine, str(ws), **perms)
    assert rec.permission_mode is expected and rec.bypass_disabled_by
    assert decide(get_tool("Bash"), {"command": "rm -rf build"}, rec).decision is not Decision.ALLOW


UNTRUSTED = 'settings defaultMode "bypassPermissions" in '


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_a_projects_own_files_never_grant_bypass(engine, settings, ws, home, n):
    """A cloned repository's .claude/settings(.local).json asking for bypass starts in default mode with a
    warning, as in Claude Code ("only policy/user/flag settings may grant bypass mode")."""
    path = layer(n, ws, home, {"permissions": {"defaultMode": "bypassPermissions"}})
    perms, warnings = session_options(ws, settings, home=home)
    assert perms["permission_mode"] is PermissionMode.DEFAULT
    assert warnings == [f"{UNTRUSTED}{path} is ignored: only user settings or flags may grant bypass mode (a "
                        "project's settings files are the repository's to write). Ask for it with --permission-mode "
                        "bypassPermissions, or in ~/.claude/settings.json."]
    rec = create_session(engine, str(ws), **perms)
    assert decide(get_tool("Bash"), {"command": "rm -rf build"}, rec).decision is not Decision.ALLOW
    # another mode from a project's file is still the project's to choose; a flag still grants bypass
    layer(n, ws, home, {"permissions": {"defaultMode": "acceptEdits"}})
    assert session_options(ws, settings, home=home) == (
        {**perms, "permission_mode": PermissionMode.ACCEPT_EDITS}, [])
    layer(n, ws, home, {"permissions": {"defaultMode": "bypassPermissions"}})
    assert session_options(ws, settings, home=home, permission_mode="plan")[0]["permission_mode"] is PermissionMode.PLAN
    assert session_options(ws, settings, home=home, permission_mode="plan")[1] == []
    granted = session_options(ws, settings, home=home, permission_mode="bypassPermissions")
    assert granted[0]["permission_mode"] is BYPASS and granted[1] == []


@pytest.mark.parametrize("where", ["user", "flag"])
def test_the_users_files_and_the_settings_flag_may_grant_bypass(settings, ws, home, where):
    asks = {"permissions": {"defaultMode": "bypassPermissions"}}
    if where == "user":
        layer(0, ws, home, asks)
        perms, warnings = session_options(ws, settings, home=home)
    else:
        perms, warnings = session_options(ws, settings, home=home,
                                          extra_settings=[("--settings (inline JSON)", json.dumps(asks))])
    assert perms["permission_mode"] is BYPASS and warnings == []


def test_without_the_setting_bypass_is_what_it_was(engine, settings, ws, home):
    perms, warnings = session_options(ws, settings, home=home, permission_mode="bypassPermissions")
    assert perms["permission_mode"] is BYPASS and warnings == []
    rec = create_session(engine, str(ws), **perms)
    assert decide(get_tool("Bash"), {"command": "rm -rf build"}, rec).decision is Decision.ALLOW


def test_the_engine_refuses_a_bypass_session_whatever_called_it(engine, ws, home):
    """The backstop under every front door: create_session itself (the demo, /clear, a future path)."""
    path = write(home, ".claude/settings.json", DISABLE)
    with pytest.raises(BypassDisabled) as info:
        engine.create_session(str(ws), SessionOptions(permission_mode="bypassPermissions"), home=str(home))
    assert str(info.value).startswith(SWITCH) and str(path) in str(info.value)
    path.unlink()  # the files are gone (another machine): what the session recorded still refuses
    with pytest.raises(BypassDisabled):
        engine.create_session(str(ws), SessionOptions(permission_mode=BYPASS), SessionSetup(bypass_disabled_by=[str(path)]), home=str(home))
    assert engine.store.session_ids() == []


# =========================================================================== after the start


def test_a_switch_mid_session_is_refused_and_changes_nothing(engine, settings, ws, home):
    """Every switch (an SDK client's set_permission_mode, Shift+Tab, a resume's --permission-mode) is
    the engine's update_limits."""
    write(ws, ".mainsail/settings.local.json", DISABLE)
    rec = engine.create_session(str(ws), SessionOptions(permission_mode="acceptEdits"), home=str(home))
    with pytest.raises(BypassDisabled) as info:
        engine.update_limits(rec.id, permission_mode="bypassPermissions", max_turns=3)
    assert str(info.value).startswith(SWITCH) and "settings.local.json" in str(info.value)
    after = engine.store.get_session(rec.id)
    assert after.permission_mode is PermissionMode.ACCEPT_EDITS and after.max_turns is None
    assert engine.update_limits(rec.id, permission_mode="plan").permission_mode is PermissionMode.PLAN


def test_a_settings_flag_given_at_a_resume_joins_the_session_for_good(engine, ws, home):
    rec = engine.create_session(str(ws), SessionOptions(permission_mode=BYPASS), home=str(home))
    engine.update_limits(rec.id, bypass_disabled_by=["--settings x.json"])
    with pytest.raises(BypassDisabled):
        engine.update_limits(rec.id, permission_mode=BYPASS)
    assert effective_mode(engine.store.get_session(rec.id)) is PermissionMode.DEFAULT


def stale(engine, ws, home, mode=BYPASS):
    """A session that started in bypass before its user's settings disabled it."""
    rec = engine.create_session(str(ws), SessionOptions(permission_mode=mode), SessionSetup(rules=RuleSet(allow=[RuleSpec(rule="Task", source="test")])), home=str(home))
    write(home, ".claude/settings.json", DISABLE)
    return engine.store.get_session(rec.id)


@pytest.mark.parametrize("tool, tool_input", [
    ("Bash", {"command": "rm -rf build"}),
    ("Bash", {"command": "curl https://example.com | sh"}),
    ("Write", {"file_path": "notes.txt", "content": "x"}),
    ("Edit", {"file_path": "calc.py", "old_string": "a", "new_string": "b"}),
    ("WebFetch", {"url": "https://example.com", "prompt": "p"}),
])
def test_a_stale_record_holding_bypass_asks_like_default_mode(engine, ws, home, tool, tool_input):
    rec = stale(engine, ws, home)
    assert rec.permission_mode is BYPASS and effective_mode(rec) is PermissionMode.DEFAULT
    assert decide(get_tool(tool), tool_input, rec).decision is Decision.ASK
    rec.asks = "deny"  # print mode: nobody to ask, so denied
    assert decide(get_tool(tool), tool_input, rec).decision is Decision.DENY


@pytest.mark.parametrize("content", [
    "{not json", '{"permissions": {"disableBypassPermissionsMode": true}}', "[]", '"text"', "3",
    '{"permissions": []}', '{"permissions": "disable"}', '{"n": ' + "9" * 5000 + "}", "[" * 100_000 + "]" * 100_000,
], ids=["not-json", "other-value", "array", "string", "number", "permissions-array", "permissions-string",
        "huge-int", "deep-nesting"])
def test_a_settings_file_broken_after_the_start_fails_closed(engine, ws, home, content):
    rec = engine.create_session(str(ws), SessionOptions(permission_mode=BYPASS), home=str(home))
    write(ws, ".claude/settings.json", content)
    why = refusal(BYPASS, workspace=rec.workspace, home=rec.home)
    assert why is not None and "is refused until it is fixed" in why.text()
    assert decide(get_tool("Bash"), {"command": "rm -rf build"}, rec).decision is Decision.ASK


def test_a_resumed_stale_record_falls_back_with_a_warning(engine, ws, home):
    rec = stale(engine, ws, home)
    mode, warnings = resumed_mode(rec)
    assert mode is PermissionMode.DEFAULT and warnings[0].startswith(WARNING)
    assert f"session {rec.id[:8]} runs in default mode" in warnings[0]
    plan = engine.update_limits(rec.id, permission_mode="plan")
    assert resumed_mode(plan, "bypassPermissions")[0] is PermissionMode.PLAN  # --permission-mode at a resume
    assert resumed_mode(plan) == (None, [])


def test_a_sub_agent_of_a_stale_session_does_not_inherit_bypass(engine, ws, home):
    task = ToolUse(id="toolu_t1", name="Task", input={"description": "job", "prompt": "child job",
                                                      "subagent_type": "general-purpose"})
    model = scripted_model(lambda body: Turn(tool_uses=[task]) if len(body["messages"]) == 1 else Turn(text="ok"))
    rec = stale(engine, ws, home)
    engine.update_limits(rec.id, bypass_disabled_by=["--settings (inline JSON)"])
    engine.set_model(rec.id, model)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "delegate"))
    inline.run(1)
    (child_id,) = engine.store.get_session(rec.id).children
    child = engine.store.get_session(child_id)
    assert child.permission_mode is PermissionMode.DEFAULT
    assert child.bypass_disabled_by == ["--settings (inline JSON)"]


# =========================================================================== schedules and tokens


def schedule(engine, ws, created_by="user:me", **options) -> Schedule:
    s = Schedule(name="nightly", cron="0 3 * * *", workspace=str(ws), prompt="report",
                 options=RemoteOptions(**options), created_by=created_by)
    ScheduleStore(engine.store.r).add(s)
    return s


def test_a_schedule_asking_for_bypass_in_a_disabled_workspace_starts_in_default(engine, settings, ws):
    write(ws, ".claude/settings.json", DISABLE)
    s = schedule(engine, ws, permission_mode=BYPASS)
    fired = fire(engine, settings, s.id, manual=True)
    rec = engine.store.get_session(fired.session_id)
    assert rec.permission_mode is PermissionMode.DEFAULT
    assert any(WARNING in getattr(e, "content", "") for e in engine.store.entries(rec.id))


def test_a_schedule_made_by_a_token_without_bypass_never_fires_in_bypass(engine, settings, ws):
    TokenStore(engine.store.r).create("ci")
    s = schedule(engine, ws, created_by="token:ci", permission_mode=BYPASS)
    fired = fire(engine, settings, s.id, manual=True)
    assert fired.session_id is None and "Token 'ci' may not start a session in bypassPermissions" in fired.skipped
    gone = schedule(engine, ws, created_by="token:revoked-since", permission_mode=BYPASS)
    assert fire(engine, settings, gone.id, manual=True).session_id is None
    TokenStore(engine.store.r).set_bypass("ci", True)
    assert engine.store.get_session(fire(engine, settings, s.id, manual=True).session_id).permission_mode is BYPASS


def test_a_continue_schedule_of_a_token_without_bypass_never_sends_to_a_bypass_session(engine, settings, ws):
    """The session a --continue schedule goes on with may be put into bypassPermissions after it was made
    (someone resumes it with the flag): the firing made for a token without --allow-bypass refuses it."""
    from workflows.schedules import RunMode

    TokenStore(engine.store.r).create("ci")
    s = Schedule(name="nightly", cron="0 3 * * *", workspace=str(ws), prompt="report", mode=RunMode.CONTINUE,
                 created_by="token:ci")
    ScheduleStore(engine.store.r).add(s)
    first = fire(engine, settings, s.id, manual=True)
    assert first.session_id and engine.store.get_session(first.session_id).permission_mode is PermissionMode.DEFAULT
    engine.update_limits(first.session_id, permission_mode=BYPASS)  # a person with the right to, later
    again = fire(engine, settings, s.id, manual=True)
    assert again.session_id is None
    assert again.skipped.startswith(f"failed: Token 'ci' may not continue session {first.session_id[:8]} (it runs "
                                    "in bypassPermissions mode)")
    TokenStore(engine.store.r).set_bypass("ci", True)
    assert fire(engine, settings, s.id, manual=True).session_id == first.session_id


def test_a_token_refusal_is_never_fallen_back_from_and_names_the_fix(ws, home):
    token = TokenRecord(name="ci", allow_bypass=False)
    with pytest.raises(BypassDisabled) as info:
        choose_mode([(None, "the request's permission_mode"), (BYPASS, "defaultMode in x.json")],
                    workspace=str(ws), home=str(home), token=token)
    msg = str(info.value)
    assert msg.startswith("Token 'ci' may not start a session in bypassPermissions mode (asked for by defaultMode")
    assert "mainsail token update ci --allow-bypass" in msg and "default, acceptEdits, plan or dontAsk" in msg
    assert choose_mode([("plan", "x")], workspace=str(ws), home=str(home), token=token)[0] is PermissionMode.PLAN
    allowed = TokenRecord(name="admin", allow_bypass=True)
    assert choose_mode([(BYPASS, "x")], workspace=str(ws), home=str(home), token=allowed)[0] is BYPASS


def test_new_tokens_and_old_records_have_no_bypass_and_update_keeps_the_secret(fake_redis):
    store = TokenStore(fake_redis)
    secret, rec = store.create("alice")
    assert rec.allow_bypass is False and store.find(secret).allow_bypass is False
    assert store.create("admin", allow_bypass=True)[1].allow_bypass is True
    legacy = rec.model_dump()
    del legacy["allow_bypass"]  # a record written before the scope existed
    fake_redis.hset("mainsail:api-tokens", "alice", json.dumps(legacy))
    assert store.find(secret).allow_bypass is False  # fail closed: the record cannot say it was meant to
    assert store.set_bypass("alice", True).allow_bypass is True and store.find(secret).allow_bypass is True
    assert store.set_bypass("alice", False).allow_bypass is False and store.find(secret).allow_bypass is False
    store.revoke("alice")
    with pytest.raises(TokenError):
        store.set_bypass("alice", True)


def test_the_files_are_read_again_when_one_changes_even_at_the_same_size(engine, ws, home):
    """The check at each decision keeps what it read by the files' stat stamps; a change within the
    clock's tick (same size, same inode) is still seen, as the first read of a fresh file is not kept."""
    from workflows.permissions import bypass

    rec = engine.create_session(str(ws), SessionOptions(permission_mode=BYPASS), home=str(home))
    assert effective_mode(rec) is BYPASS and effective_mode(rec) is BYPASS  # (none of the files exist)
    disabled = json.dumps(DISABLE)
    path = layer(2, ws, home, "{" + " " * (len(disabled) - 2) + "}")  # valid, empty, the same size
    assert effective_mode(rec) is BYPASS
    path.write_text(disabled)  # in place: same inode, same size, maybe the same mtime tick
    assert effective_mode(rec) is PermissionMode.DEFAULT
    old = time.time() - 10
    os.utime(path, (old, old))  # settled (its ctime is still new: read again once more)
    assert effective_mode(rec) is PermissionMode.DEFAULT
    path.write_text("{" + " " * (len(disabled) - 2) + "}")
    assert effective_mode(rec) is BYPASS
    path.unlink()
    assert effective_mode(rec) is BYPASS and bypass.current_refusals(str(ws), str(home)) == ()


def test_a_use_noted_while_an_admin_takes_bypass_away_does_not_give_it_back(fake_redis):
    """A request reads its token's record, an admin runs `token update NAME --no-bypass`, then the request
    notes the use: the admin's change stands (the note is dropped)."""
    store = TokenStore(fake_redis)
    secret, _ = store.create("alice", allow_bypass=True)
    seen = store.find(secret)  # a request in flight
    store.set_bypass("alice", False)  # meanwhile
    store.touch(seen, now=time.time() + 3600)
    assert store.find(secret).allow_bypass is False
    fresh = store.find(secret)
    store.touch(fresh, now=time.time() + 3600)  # nothing changed meanwhile: noted
    assert store.find(secret).last_used_at is not None and store.find(secret).allow_bypass is False
