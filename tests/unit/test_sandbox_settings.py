"""The ``sandbox`` key of settings files: layering, path prefixes, and every error message."""

from __future__ import annotations

import json
import os

import pytest

from workflows.models import SandboxSettings
from workflows.sessions.settings_files import load_permission_settings
from workflows.settings.errors import SettingsError

LAYERS = [  # (base, relative path), lowest precedence first (as in test_settings_files)
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


def write(dirs, n: int, sandbox) -> str:
    ws, home = dirs
    base, rel = LAYERS[n]
    path = (ws if base == "ws" else home) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": {"allow": []}, "sandbox": sandbox}, indent=2))
    return str(path)


def load(dirs) -> SandboxSettings:
    ws, home = dirs
    return load_permission_settings(ws, home, trusted=True).sandbox


def error(dirs) -> str:
    with pytest.raises(SettingsError) as info:
        load(dirs)
    return str(info.value)


# =========================================================================== layering


def test_defaults_without_files(dirs):
    assert load(dirs) == SandboxSettings()
    assert load(dirs).enabled is True and load(dirs).fail_if_unavailable is False


def test_every_key(dirs):
    ws, home = dirs
    write(dirs, 2, {"enabled": True, "failIfUnavailable": True, "excludedCommands": ["docker", " docker  compose "],
                    "network": {"allowedDomains": ["PyPI.org", "*.pythonhosted.org"], "allowAllUnixSockets": True},
                    "filesystem": {"allowWrite": ["~/.cache"], "denyWrite": ["./dist"], "denyRead": ["//etc/secret"]},
                    "autoAllowBashIfSandboxed": True})  # a Claude Code key Mainsail does not use: ignored
    s = load(dirs)
    assert s.enabled and s.fail_if_unavailable and s.allow_unix_sockets
    assert s.excluded_commands == ["docker", "docker compose"]
    assert s.allowed_domains == ["pypi.org", "*.pythonhosted.org"]
    assert s.allow_write == [str(home / ".cache")]
    assert s.deny_write == [str(ws / "dist")]
    assert s.deny_read == ["/etc/secret"]


def test_lists_combine_and_later_booleans_win(dirs):
    write(dirs, 0, {"enabled": False, "failIfUnavailable": True, "excludedCommands": ["docker"],
                    "network": {"allowedDomains": ["a.com"]}, "filesystem": {"denyRead": ["~/.ssh"]}})
    write(dirs, 3, {"enabled": True, "excludedCommands": ["docker", "make"], "network": {"allowedDomains": ["b.com"]},
                    "filesystem": {"denyRead": ["~/.aws"]}})
    s = load(dirs)
    assert s.enabled is True  # the project file wins over the user file
    assert s.fail_if_unavailable is True  # set in one file only: kept
    assert s.excluded_commands == ["docker", "make"]
    assert s.allowed_domains == ["a.com", "b.com"]
    assert [os.path.basename(p) for p in s.deny_read] == [".ssh", ".aws"]


def test_a_later_file_turns_it_off(dirs):
    write(dirs, 0, {"enabled": True})
    write(dirs, 4, {"enabled": False})
    assert load(dirs).enabled is False


@pytest.mark.parametrize("raw, expected", [
    ("//abs/path", "/abs/path"),
    ("~", "{home}"),
    ("~/.kube", "{home}/.kube"),
    ("/build", "{settings_dir}/build"),  # relative to the settings file's directory
    ("./out", "{ws}/out"),
    ("out/../gen", "{ws}/gen"),
])
def test_path_prefixes(dirs, raw, expected):
    ws, home = dirs
    path = write(dirs, 2, {"filesystem": {"allowWrite": [raw]}})
    want = expected.format(home=home, ws=ws, settings_dir=os.path.dirname(path))
    assert load(dirs).allow_write == [want]


def test_home_file_slash_is_relative_to_its_directory(dirs):
    _ws, home = dirs
    write(dirs, 1, {"filesystem": {"denyRead": ["/private"]}})
    assert load(dirs).deny_read == [str(home / ".mainsail" / "private")]


def test_empty_sandbox_object_changes_nothing(dirs):
    write(dirs, 2, {})
    assert load(dirs) == SandboxSettings()


# =========================================================================== errors


def test_sandbox_not_an_object(dirs):
    path = write(dirs, 2, ["enabled"])
    assert error(dirs) == (f"{path}, line 5: 'sandbox' must be an object like "
                           '{"enabled": true, "filesystem": {"allowWrite": ["~/.cache"]}}, not a list ["enabled"].')


@pytest.mark.parametrize("key", ["enabled", "failIfUnavailable"])
def test_boolean_keys(dirs, key):
    path = write(dirs, 2, {key: "yes"})
    assert error(dirs) == f"{path}, line 6: 'sandbox.{key}' must be true or false, not a string \"yes\"."


def test_allow_all_unix_sockets_must_be_boolean(dirs):
    path = write(dirs, 2, {"network": {"allowAllUnixSockets": 1}})
    assert error(dirs) == (f"{path}, line 7: 'sandbox.network.allowAllUnixSockets' must be true or false, "
                           "not a number 1.")


def test_network_not_an_object(dirs):
    path = write(dirs, 2, {"network": "none"})
    assert error(dirs) == (f"{path}, line 6: 'sandbox.network' must be an object like "
                           '{"allowedDomains": ["pypi.org", "*.pythonhosted.org"]}, not a string "none".')


def test_filesystem_not_an_object(dirs):
    path = write(dirs, 2, {"filesystem": ["~/.cache"]})
    assert error(dirs) == (f"{path}, line 6: 'sandbox.filesystem' must be an object like "
                           '{"allowWrite": ["~/.cache"], "denyRead": ["~/.ssh"]}, not a list ["~/.cache"].')


def test_excluded_commands_not_a_list(dirs):
    path = write(dirs, 2, {"excludedCommands": "docker"})
    assert error(dirs) == (f"{path}, line 6: 'sandbox.excludedCommands' must be a list of strings like "
                           '["docker", "docker compose"], not a string "docker".')


def test_excluded_commands_item_not_a_string(dirs):
    path = write(dirs, 2, {"excludedCommands": ["docker", 3]})
    assert error(dirs) == (f"{path}, line 6: 'sandbox.excludedCommands' must be a list of non-empty strings like "
                           '["docker", "docker compose"]; item 2 is a number 3.')


def test_allowed_domains_not_a_list(dirs):
    path = write(dirs, 2, {"network": {"allowedDomains": "pypi.org"}})
    assert error(dirs) == (f"{path}, line 7: 'sandbox.network.allowedDomains' must be a list of strings like "
                           '["pypi.org", "*.pythonhosted.org"], not a string "pypi.org".')


@pytest.mark.parametrize("domain", ["https://pypi.org", "pypi.org:443", "pypi.org/simple", "*pypi.org", "a..b",
                                    "exa mple.com"])
def test_allowed_domains_must_be_host_names(dirs, domain):
    path = write(dirs, 2, {"network": {"allowedDomains": ["ok.com", domain]}})
    assert error(dirs) == (f"{path}, line 7: 'sandbox.network.allowedDomains' holds {json.dumps(domain)}, which is "
                           'not a domain name. Use a bare host name like "example.com", "*.example.com" for its '
                           'subdomains, or "*" for any host.')


def test_star_and_wildcards_are_domains(dirs):
    write(dirs, 2, {"network": {"allowedDomains": ["*", "*.Example.com.", "localhost", "10.0.0.1"]}})
    assert load(dirs).allowed_domains == ["*", "*.example.com", "localhost", "10.0.0.1"]


@pytest.mark.parametrize("key", ["allowWrite", "denyWrite", "denyRead"])
def test_path_list_not_a_list(dirs, key):
    path = write(dirs, 2, {"filesystem": {key: "~/.ssh"}})
    assert error(dirs) == (f"{path}, line 7: 'sandbox.filesystem.{key}' must be a list of strings like "
                           '["~/.cache", "./build"], not a string "~/.ssh".')


def test_path_list_empty_item(dirs):
    path = write(dirs, 2, {"filesystem": {"denyRead": ["~/.ssh", "  "]}})
    assert error(dirs) == (f"{path}, line 7: 'sandbox.filesystem.denyRead' must be a list of non-empty strings "
                           'like ["~/.cache", "./build"]; item 2 is an empty string.')


@pytest.mark.parametrize("pattern", ["**/.env", "~/.ssh/id_*", "./file?.txt", "./[ab]"])
def test_patterns_are_refused(dirs, pattern):
    path = write(dirs, 2, {"filesystem": {"denyRead": [pattern]}})
    assert error(dirs) == (f"{path}, line 7: 'sandbox.filesystem.denyRead' item 1 is {json.dumps(pattern)}: "
                           "patterns are not supported in sandbox paths. Name the file or directory itself, like "
                           '"~/.ssh" or "./secrets".')


def test_the_line_is_the_keys_own(dirs):
    ws, _home = dirs
    path = ws / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{\n  "enabled": 1,\n  "sandbox": {\n    "network": {},\n    "enabled": 1\n  }\n}\n')
    assert error(dirs) == f"{path}, line 5: 'sandbox.enabled' must be true or false, not a number 1."
