"""API tokens (workflows/store/api_tokens.py): created once, found by their hash, revoked at once, and a
workspace restriction that no path trick stretches."""

from __future__ import annotations

import os

import pytest

from workflows.exceptions import TokenError
from workflows.models import TokenRecord
from workflows.store import keys
from workflows.store.api_tokens import TOKEN_PREFIX, TokenStore, describe, digest


@pytest.fixture
def tokens(fake_redis):
    return TokenStore(fake_redis)


@pytest.fixture
def srv(tmp_path):
    """/srv-like directories: a, ab (a sibling whose name starts with a's), b, and a/sub."""
    for d in ("a/sub", "ab", "b"):
        (tmp_path / d).mkdir(parents=True)
    return tmp_path


def test_create_shows_the_secret_once_and_stores_only_its_hash(tokens, fake_redis):
    secret, rec = tokens.create("alice")
    assert secret.startswith(TOKEN_PREFIX) and len(secret) > 40
    assert rec.digest == digest(secret) and not rec.read_only and rec.workspaces == []
    dump = b"".join(k + (fake_redis.dump(k) or b"") for k in fake_redis.keys("*"))
    assert secret.encode() not in dump
    assert fake_redis.get(keys.api_token(rec.digest)) == b"alice"
    assert "digest" not in describe(rec)


def test_find_returns_the_record_of_a_known_token_only(tokens):
    secret, _ = tokens.create("alice", read_only=True)
    found = tokens.find(secret)
    assert found is not None and found.name == "alice" and found.read_only
    for wrong in ("", secret[:-1], secret + "x", secret[len(TOKEN_PREFIX):], "mst_" + "A" * 43,
                  TOKEN_PREFIX + "x" * 300, "Bearer " + secret):
        assert tokens.find(wrong) is None, wrong


def test_names_are_unique_and_checked(tokens):
    tokens.create("alice")
    with pytest.raises(TokenError, match="exists already"):
        tokens.create("alice")
    for bad in ("", "-x", "a b", "a/b", "x" * 65, "a:b"):
        with pytest.raises(TokenError, match="Invalid token name"):
            tokens.create(bad)


def test_revoke_refuses_the_token_at_once(tokens, fake_redis):
    secret, rec = tokens.create("alice")
    assert tokens.revoke("alice").name == "alice"
    assert tokens.find(secret) is None
    assert fake_redis.get(keys.api_token(rec.digest)) is None and tokens.records() == []
    with pytest.raises(TokenError, match="No token named 'alice'"):
        tokens.revoke("alice")


def test_a_name_revoked_and_made_again_takes_a_new_secret(tokens):
    old, _ = tokens.create("alice")
    tokens.revoke("alice")
    new, _ = tokens.create("alice")
    assert tokens.find(old) is None and tokens.find(new).name == "alice"


def test_touch_notes_use_at_most_once_a_minute(tokens):
    secret, _ = tokens.create("alice")
    rec = tokens.find(secret)
    tokens.touch(rec, now=1000.0)
    assert tokens.find(secret).last_used_at == 1000.0
    tokens.touch(tokens.find(secret), now=1030.0)
    assert tokens.find(secret).last_used_at == 1000.0
    tokens.touch(tokens.find(secret), now=1061.0)
    assert tokens.find(secret).last_used_at == 1061.0


def test_touch_after_a_revoke_brings_nothing_back(tokens):
    """A request found the token, then it was revoked (and its name reused) before the request noted
    its use: the note must neither list the revoked token again nor break the new one."""
    old, _ = tokens.create("alice")
    rec = tokens.find(old)
    tokens.revoke("alice")
    tokens.touch(rec, now=5000.0)
    assert tokens.records() == [] and tokens.find(old) is None
    new, _ = tokens.create("alice")
    tokens.touch(rec, now=6000.0)
    found = tokens.find(new)
    assert found is not None and found.last_used_at is None
    assert tokens.find(old) is None


def test_workspaces_are_resolved_and_must_exist(tokens, srv):
    _, rec = tokens.create("team", workspaces=[str(srv / "a" / ".." / "a") + "/"])
    assert rec.workspaces == [os.path.realpath(srv / "a")]
    for bad in (str(srv / "missing"), "/", str(srv / "a" / "..") + "/../../../../../.."):
        with pytest.raises(TokenError, match="not an existing directory"):
            tokens.create("x" + str(abs(hash(bad)) % 1000), workspaces=[bad])


def test_a_workspace_covers_itself_and_what_is_under_it_only(srv):
    rec = TokenRecord(name="a", workspaces=[os.path.realpath(srv / "a")])
    assert rec.allows_workspace(str(srv / "a"))
    assert rec.allows_workspace(str(srv / "a" / "sub"))
    assert rec.allows_workspace(str(srv / "a") + "/")
    assert not rec.allows_workspace(str(srv / "ab"))  # a prefix of the string, not of the path
    assert not rec.allows_workspace(str(srv / "b"))
    assert not rec.allows_workspace(str(srv))
    assert not rec.allows_workspace(str(srv / "a" / ".." / "b"))
    assert not rec.allows_workspace(str(srv / "a" / "sub" / ".." / ".." / "ab"))
    assert not rec.allows_workspace("/")


def test_symlinks_are_judged_by_where_they_lead(srv):
    rec = TokenRecord(name="a", workspaces=[os.path.realpath(srv / "a")])
    (srv / "a" / "to-b").symlink_to(srv / "b")
    (srv / "b" / "to-a").symlink_to(srv / "a" / "sub")
    assert not rec.allows_workspace(str(srv / "a" / "to-b"))
    assert rec.allows_workspace(str(srv / "b" / "to-a"))  # the same directory as a/sub


def test_a_token_made_for_a_symlinked_directory_holds_its_target(tokens, srv):
    (srv / "link-to-a").symlink_to(srv / "a")
    secret, rec = tokens.create("a", workspaces=[str(srv / "link-to-a")])
    assert rec.workspaces == [os.path.realpath(srv / "a")]
    (srv / "link-to-a").unlink()
    (srv / "link-to-a").symlink_to(srv / "b")  # re-pointing the link later widens nothing
    assert not tokens.find(secret).allows_workspace(str(srv / "link-to-a"))


def test_no_workspaces_means_every_workspace(srv):
    assert TokenRecord(name="all").allows_workspace(str(srv / "b"))
