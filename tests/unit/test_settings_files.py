"""Settings files and flags (workflows.sessions.settings_files): layering, flag splitting, and every error message."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workflows.exceptions import ConfigurationError
from workflows.models import PermissionMode
from workflows.permissions.rules.rules import split_rules
from workflows.sessions.settings_files import load_permission_settings
from workflows.settings.errors import SettingsError

LAYERS = [  # (base, relative path), lowest precedence first
    ("home", ".claude/settings.json"),
    ("home", ".mainsail/settings.json"),
    ("ws", ".claude/settings.json"),
    ("ws", ".mainsail/settings.json"),
    ("ws", ".claude/settings.local.json"),
    ("ws", ".mainsail/settings.local.json"),
]


@pytest.fixture
def dirs(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    return ws, home


def write(dirs, n: int, content) -> str:
    ws, home = dirs
    base, rel = LAYERS[n]
    path = (ws if base == "ws" else home) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return str(path)


def load(dirs, **kw):
    ws, home = dirs
    kw.setdefault("trusted", True)  # (a trusted workspace: its project files count whole; tests/unit/test_trust.py)
    return load_permission_settings(ws, home, **kw)


def error(dirs, **kw) -> str:
    with pytest.raises(SettingsError) as info:
        load(dirs, **kw)
    return str(info.value)


# =========================================================================== layering


def test_no_files_no_flags_is_empty(dirs):
    s = load(dirs)
    assert (s.rules.allow, s.rules.ask, s.rules.deny) == ([], [], [])
    assert (s.default_mode, s.approval_timeout_seconds, s.files) == (None, None, [])


def test_rules_from_every_layer_and_the_flags_are_combined_with_their_sources(dirs):
    paths = [write(dirs, n, {"permissions": {"allow": [f"Bash(tool{n}:*)"], "ask": [f"Read(ask{n})"],
                                             "deny": [f"Edit(deny{n})"]}}) for n in range(6)]
    s = load(dirs, allowed_tools=["Bash(git diff:*) Edit"], disallowed_tools="Bash(rm:*)")
    assert s.files == paths
    assert [(r.rule, r.source) for r in s.rules.allow] == (
        [(f"Bash(tool{n}:*)", paths[n]) for n in range(6)]
        + [("Bash(git diff:*)", "--allowedTools"), ("Edit", "--allowedTools")])
    assert [(r.rule, r.source) for r in s.rules.ask] == [(f"Read(ask{n})", paths[n]) for n in range(6)]
    assert [(r.rule, r.source) for r in s.rules.deny] == (
        [(f"Edit(deny{n})", paths[n]) for n in range(6)] + [("Bash(rm:*)", "--disallowedTools")])


def test_files_lists_only_the_files_read(dirs):
    p = write(dirs, 3, {"permissions": {"allow": ["Read"]}})
    assert load(dirs).files == [p]


@pytest.mark.parametrize("present,winner", [
    ((0, 1), 1),  # .mainsail beats .claude (user)
    ((1, 2), 2),  # project beats user
    ((2, 3), 3),  # .mainsail beats .claude (project)
    ((3, 4), 4),  # local beats project
    ((4, 5), 5),  # .mainsail beats .claude (local)
    ((0, 1, 2, 3, 4, 5), 5),
    ((5, 0), 5),  # the order written does not matter
])
def test_scalar_settings_the_higher_layer_wins(dirs, present, winner):
    modes = ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "acceptEdits"]
    for n in present:
        write(dirs, n, {"permissions": {"defaultMode": modes[n]}, "approvalTimeoutSeconds": 10 + n})
    s = load(dirs)
    assert s.default_mode is PermissionMode(modes[winner])
    assert s.approval_timeout_seconds == 10 + winner


def test_a_layer_without_a_scalar_does_not_reset_it(dirs):
    write(dirs, 0, {"permissions": {"defaultMode": "plan"}, "approvalTimeoutSeconds": 60})
    write(dirs, 5, {"permissions": {"allow": ["Read"]}})
    s = load(dirs)
    assert (s.default_mode, s.approval_timeout_seconds) == (PermissionMode.PLAN, 60.0)


def test_approval_timeout_inside_permissions_is_accepted(dirs):
    write(dirs, 2, {"permissions": {"approvalTimeoutSeconds": 45}})
    assert load(dirs).approval_timeout_seconds == 45.0


def test_unknown_keys_and_an_empty_file_are_fine(dirs):
    write(dirs, 0, {"model": "opus", "hooks": {}, "statusLine": {},
                    "permissions": {"allow": ["Read"], "blockReadsOutsideWorkingDirectories": 1}})
    write(dirs, 1, "")
    s = load(dirs)
    assert [r.rule for r in s.rules.allow] == ["Read"] and len(s.files) == 2


def test_project_files_are_looked_up_in_the_workspace_only(dirs):
    ws, home = dirs
    (ws / "sub").mkdir()
    write(dirs, 3, {"permissions": {"allow": ["Read"]}})
    assert load_permission_settings(ws / "sub", home).files == []


# =========================================================================== flags


@pytest.mark.parametrize("value,rules", [
    ("Bash(git diff:*) Edit, Read", ["Bash(git diff:*)", "Edit", "Read"]),
    ("Bash(npm run test *)", ["Bash(npm run test *)"]),
    (["Read,Edit", "Bash(ls -la)"], ["Read", "Edit", "Bash(ls -la)"]),
    ("  Read  ,,  Edit  ", ["Read", "Edit"]),
    ("Bash(echo a,b)", ["Bash(echo a,b)"]),
    ("", []),
    (None, []),
])
def test_split_rules(value, rules):
    assert split_rules(value) == rules


def test_flag_rules_are_loaded(dirs):
    s = load(dirs, allowed_tools=["Bash(npm run test *)", "Read,Edit"])
    assert [(r.rule, r.source) for r in s.rules.allow] == [
        ("Bash(npm run test *)", "--allowedTools"), ("Read", "--allowedTools"), ("Edit", "--allowedTools")]


# =========================================================================== errors


def test_settings_error_is_a_configuration_error():
    assert issubclass(SettingsError, ConfigurationError)


def test_invalid_json_names_the_file_line_and_column(dirs):
    path = write(dirs, 3, '{\n  "permissions": {\n    "allow": ["Read"] "deny": []\n  }\n}\n')
    assert error(dirs) == (f"Invalid JSON in {path}, line 3, column 23: Expecting ',' delimiter. "
                           "Fix the file or move it aside.")


def test_a_bad_rule_names_the_file_line_and_rule(dirs):
    path = write(dirs, 2, '{\n  "permissions": {\n    "allow": [\n      "Read",\n      "Bash(npm"\n    ]\n  }\n}\n')
    assert error(dirs) == (f"Invalid permission rule 'Bash(npm' in {path}, line 5: unbalanced parentheses: "
                           "'(' is never closed; write Tool(specifier) with a closing ')'")


def test_a_bad_rule_line_is_found_in_its_own_list(dirs):
    text = '{"permissions": {\n "allow": ["Bash()"],\n "deny": [\n  "Bash()"\n ]}}'
    path = write(dirs, 0, text)
    assert error(dirs).startswith(f"Invalid permission rule 'Bash()' in {path}, line 2: empty specifier")
    write(dirs, 0, text.replace('["Bash()"]', '["Read"]'))
    assert error(dirs).startswith(f"Invalid permission rule 'Bash()' in {path}, line 4: empty specifier")


def test_a_list_that_is_not_a_list(dirs):
    path = write(dirs, 1, '{\n  "permissions": {\n    "deny": "Bash(rm:*)"\n  }\n}')
    assert error(dirs) == (f"{path}, line 3: 'permissions.deny' must be a list of rule strings like "
                           '["Bash(npm test:*)", "Read"], not a string "Bash(rm:*)".')


def test_a_list_item_that_is_not_a_string(dirs):
    path = write(dirs, 1, '{"permissions": {\n "ask": ["Read", 3]}}')
    assert error(dirs) == (f"{path}, line 2: 'permissions.ask' must be a list of rule strings like "
                           '["Bash(npm test:*)", "Read"]; item 2 is a number 3.')


def test_permissions_that_is_not_an_object(dirs):
    path = write(dirs, 4, '{\n\n "permissions": ["Read"]}')
    assert error(dirs) == (f"{path}, line 3: 'permissions' must be an object like "
                           '{"allow": ["Bash(npm test:*)"], "deny": []}, not a list ["Read"].')


def test_settings_that_are_not_an_object(dirs):
    path = write(dirs, 0, '["Read"]')
    assert error(dirs) == (f'{path}, line 1: the settings must be a JSON object like {{"permissions": '
                           '{"allow": [...]}}, not a list ["Read"]. Fix the file or move it aside.')


def test_an_unknown_default_mode_lists_the_modes(dirs):
    path = write(dirs, 5, '{\n "permissions": {\n  "defaultMode": "yolo"\n }\n}')
    assert error(dirs) == (f"{path}, line 3: 'permissions.defaultMode' is \"yolo\", which is not a permission "
                           "mode. Use one of: default, acceptEdits, plan, dontAsk, bypassPermissions.")


@pytest.mark.parametrize("value", ["0", "-5", '"300"', "true", "null"])
def test_a_bad_approval_timeout(dirs, value):
    path = write(dirs, 2, '{\n "approvalTimeoutSeconds": ' + value + "\n}")
    if value == "null":  # null means "not set"
        assert load(dirs).approval_timeout_seconds is None
        return
    assert error(dirs) == (f"{path}, line 2: 'approvalTimeoutSeconds' must be a positive number of seconds, "
                           f"like 300; it is {value}.")


def test_a_bad_approval_timeout_inside_permissions(dirs):
    path = write(dirs, 2, '{"permissions": {\n\n "approvalTimeoutSeconds": -1}}')
    assert error(dirs) == (f"{path}, line 3: 'permissions.approvalTimeoutSeconds' must be a positive number of "
                           "seconds, like 300; it is -1.")


@pytest.mark.parametrize("flag,kw", [("--allowedTools", "allowed_tools"), ("--disallowedTools", "disallowed_tools")])
def test_a_bad_flag_rule(dirs, flag, kw):
    assert error(dirs, **{kw: ["Read Bash(npm"]}) == (
        f"Invalid permission rule 'Bash(npm' in {flag}: unbalanced parentheses: '(' is never closed; "
        "write Tool(specifier) with a closing ')'")


def test_a_directory_in_place_of_a_settings_file(dirs):
    ws, _ = dirs
    path = ws / ".mainsail" / "settings.json"
    path.mkdir(parents=True)
    assert error(dirs) == f"{path} is a directory, not a settings file. Remove it or move it aside."


def test_an_unreadable_settings_file(dirs, monkeypatch):
    path = write(dirs, 0, "{}")
    real_read_text = Path.read_text

    def read_text(self, *a, **kw):
        if str(self) == path:
            raise PermissionError(13, "Permission denied", path)
        return real_read_text(self, *a, **kw)

    monkeypatch.setattr(Path, "read_text", read_text)
    assert error(dirs) == f"Cannot read {path}: Permission denied. Fix its permissions or move it aside."


def test_a_file_that_is_not_utf8(dirs):
    ws, _ = dirs
    path = ws / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(b'{"x": "\xff"}')
    assert error(dirs).startswith(f"{path} is not UTF-8 text (invalid start byte at byte 7).")


# --------------------------------------------------------------------------- model, env, additionalDirectories


def test_model_env_and_added_directories_are_read_from_every_file(dirs):
    ws, home = dirs
    (ws.parent / "shared").mkdir(exist_ok=True)
    write(dirs, 0, {"model": "haiku", "env": {"A": "user", "B": "user"}})
    write(dirs, 2, {"model": "opus", "env": {"A": "project", "ANTHROPIC_DEFAULT_OPUS_MODEL": "my-opus"},
                    "permissions": {"additionalDirectories": ["../shared", "../shared/"]}})
    s = load(dirs)
    assert s.model == "opus" and s.env == {"A": "project", "B": "user"}
    assert s.model_env == {"ANTHROPIC_DEFAULT_OPUS_MODEL": "my-opus"}
    assert s.additional_directories == [os.path.realpath(ws.parent / "shared")] and not s.warnings


def test_reserved_env_names_are_ignored_with_a_warning_naming_the_file(dirs):
    write(dirs, 2, {"env": {"ANTHROPIC_BASE_URL": "http://elsewhere", "MAINSAIL_REDIS_URL": "redis://x",
                            "ANTHROPIC_API_KEY": "sk", "OK": "1"}})
    s = load(dirs)
    assert s.env == {"OK": "1"} and len(s.warnings) == 3
    assert all("settings.json" in w and "ignored" in w for w in s.warnings)


@pytest.mark.parametrize("data, words", [
    ({"model": 3}, ["'model'", "number 3"]),
    ({"model": "two words"}, ["'model'", "two words"]),
    ({"env": ["A=1"]}, ["'env' must be an object"]),
    ({"env": {"A": 1}}, ["'env.A' must be a string", "Quote it"]),
    ({"env": {"1A": "x"}}, ["not a variable name"]),
    ({"permissions": {"additionalDirectories": "../x"}}, ["additionalDirectories", "must be a list"]),
    ({"permissions": {"additionalDirectories": ["../does-not-exist"]}}, ["not an existing directory", "Fix the path"]),
    ({"permissions": {"additionalDirectories": ["//"]}}, ["root directory"]),
])
def test_bad_session_keys_name_the_file_the_key_and_the_fix(dirs, data, words):
    write(dirs, 2, data)
    with pytest.raises(SettingsError) as err:
        load(dirs)
    assert "settings.json" in str(err.value)
    for word in words:
        assert word in str(err.value)
