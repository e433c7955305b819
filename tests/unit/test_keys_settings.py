"""Redis key construction (id validation) and settings from the environment."""

from __future__ import annotations

import pytest

from workflows.exceptions import ConfigurationError, MainsailError, MissingCredentials
from workflows.model.client import require_credentials
from workflows.settings import Settings, load_settings
from workflows.store import keys

# --------------------------------------------------------------------------- keys

SESSION_KEYS = [keys.session, keys.log, keys.live, keys.steps, keys.inbox, keys.lock, keys.files_read]

BAD_IDS = [
    pytest.param("abc:def", id="colon"),
    pytest.param("abc def", id="space"),
    pytest.param("", id="empty"),
    pytest.param("a" * 129, id="too-long"),
    pytest.param("abc/def", id="slash"),
    pytest.param("abc\n", id="newline"),
    pytest.param("*", id="glob"),
]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("fn", SESSION_KEYS, ids=lambda f: f.__name__)
def test_session_keys_reject_bad_ids(fn, bad):
    with pytest.raises(ValueError) as info:
        fn(bad)
    msg = str(info.value)
    assert repr(bad) in msg
    assert "session" in msg


@pytest.mark.parametrize("bad", BAD_IDS)
def test_project_memory_rejects_bad_ids(bad):
    with pytest.raises(ValueError) as info:
        keys.project_memory(bad)
    assert repr(bad) in str(info.value)
    assert "project" in str(info.value)


@pytest.mark.parametrize("bad", [None, 12, b"abc"])
def test_non_string_ids_are_rejected(bad):
    with pytest.raises(ValueError):
        keys.session(bad)


@pytest.mark.parametrize("good", ["a", "A-b_9", "a" * 128, "3f2a9c1e-7d4b-4e8f-9a0b-123456789abc"])
def test_good_ids_are_accepted(good):
    assert keys.session(good) == f"mainsail:session:{good}"
    assert keys.log(good) == f"mainsail:session:{good}:log"


def test_every_key_starts_with_the_prefix():
    assert keys.PREFIX == "mainsail:"
    built = [fn("s1") for fn in SESSION_KEYS] + [
        keys.sessions(),
        keys.leases(),
        keys.reaper_lock(),
        keys.workers(),
        keys.worker("celery@host"),
        keys.project_memory("p1"),
    ]
    for k in built:
        assert k.startswith("mainsail:"), k
    # No two kinds of data share a key.
    assert len(set(built)) == len(built)


def test_session_keys_are_scoped_to_their_session():
    for fn in SESSION_KEYS:
        assert fn("s1") != fn("s2")
        assert fn("s1").startswith(keys.session("s1"))


def test_lease_member_round_trip():
    member = keys.lease_member("sess-1", "step_2")
    assert member == "sess-1/step_2"
    assert keys.parse_lease_member(member) == ("sess-1", "step_2")


@pytest.mark.parametrize(("sid", "step"), [("a:b", "s"), ("a", "s t"), ("", "s"), ("a", "")])
def test_lease_member_validates_both_ids(sid, step):
    with pytest.raises(ValueError):
        keys.lease_member(sid, step)


@pytest.mark.parametrize("member", ["nostep", "a/b/c", "/s", "a/", "a:b/c"])
def test_parse_lease_member_rejects_malformed(member):
    with pytest.raises(ValueError):
        keys.parse_lease_member(member)


# --------------------------------------------------------------------------- settings

ENV_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "MAINSAIL_ANTHROPIC_API_KEY",
    "MAINSAIL_ANTHROPIC_BASE_URL",
    "MAINSAIL_LEASE_SECONDS",
    "MAINSAIL_MAX_ATTEMPTS",
    "MAINSAIL_MODEL",
    "MAINSAIL_REDIS_URL",
)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    return monkeypatch


def test_defaults(clean_env, tmp_path):
    s = load_settings()
    assert s.lease_seconds == 30.0
    assert s.anthropic_api_key is None
    assert s.heartbeat_interval == pytest.approx(10.0)
    assert s.data_dir == tmp_path / "mainsail"


def test_env_values_are_parsed(clean_env):
    clean_env.setenv("MAINSAIL_LEASE_SECONDS", "4.5")
    clean_env.setenv("MAINSAIL_MAX_ATTEMPTS", "7")
    s = load_settings()
    assert s.lease_seconds == 4.5
    assert s.max_attempts == 7
    assert s.heartbeat_interval == pytest.approx(1.5)


def test_overrides_beat_env_and_none_is_ignored(clean_env):
    clean_env.setenv("MAINSAIL_LEASE_SECONDS", "4.5")
    assert load_settings(lease_seconds=9.0).lease_seconds == 9.0
    assert load_settings(lease_seconds=None).lease_seconds == 4.5


def test_invalid_env_value_names_the_variable(clean_env):
    clean_env.setenv("MAINSAIL_LEASE_SECONDS", "abc")
    with pytest.raises(ConfigurationError) as info:
        load_settings()
    msg = str(info.value)
    assert "MAINSAIL_LEASE_SECONDS" in msg
    assert "'abc'" in msg
    assert isinstance(info.value, MainsailError)


def test_out_of_range_value_names_the_variable(clean_env):
    clean_env.setenv("MAINSAIL_MAX_ATTEMPTS", "0")
    with pytest.raises(ConfigurationError) as info:
        load_settings()
    assert "MAINSAIL_MAX_ATTEMPTS" in str(info.value)
    assert "MAINSAIL_LEASE_SECONDS" not in str(info.value)


def test_anthropic_api_key_is_read_without_prefix(clean_env):
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    clean_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    s = load_settings()
    assert s.anthropic_api_key == "sk-ant-test"
    assert s.anthropic_base_url == "http://127.0.0.1:9/"


def test_anthropic_api_key_with_prefix_also_works(clean_env):
    clean_env.setenv("MAINSAIL_ANTHROPIC_API_KEY", "sk-ant-prefixed")
    assert load_settings().anthropic_api_key == "sk-ant-prefixed"


def test_require_credentials_without_any(clean_env):
    s = load_settings()
    with pytest.raises(MissingCredentials) as info:
        require_credentials(s, "claude-sonnet-4-5")
    msg = str(info.value)
    assert "ANTHROPIC_API_KEY" in msg
    assert "mainsail demo" in msg
    assert "claude-sonnet-4-5" in msg
    assert isinstance(info.value, ConfigurationError)


def test_require_credentials_passes_for_scripted_models(clean_env):
    s = load_settings()
    assert require_credentials(s, "scripted:demo") is None


def test_require_credentials_passes_with_a_base_url(clean_env):
    clean_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    assert require_credentials(load_settings(), "claude-sonnet-4-5") is None


def test_require_credentials_passes_with_a_key(clean_env):
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert require_credentials(load_settings(), "claude-sonnet-4-5") is None


def test_settings_fixture_has_no_credentials(settings):
    assert isinstance(settings, Settings)
    assert settings.anthropic_api_key is None
    assert settings.lease_seconds == 2.0
    with pytest.raises(MissingCredentials):
        require_credentials(settings, "claude-sonnet-4-5")
