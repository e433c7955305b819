"""Memory files' ``@`` imports stay inside (issue 25, item 5): the three attacks of cause 3 and their family.

``@/proc/self/environ``, ``@../outside/secret.txt`` and ``@.env`` under ``Read(./.env)`` were sent in a
session's first request. Each is tried from CLAUDE.md, CLAUDE.local.md and MAINSAIL.md, and through a
symlink, ``~user``, a nested import and a memory file that is itself a symlink; the secret never
reaches the context and a note says what was left out. The engine test checks that a session's own
deny rules and added directories are the ones applied.
"""

from __future__ import annotations

import os
import pwd
from datetime import date
from pathlib import Path

import pytest

from workflows.context.claude_md import memory_files, user_context
from workflows.memory.access import MemoryAccess
from workflows.models import RuleSet, RuleSpec
from workflows.models.options import SessionSetup
from workflows.permissions.evaluate import read_denied
from workflows.permissions.rules.paths import WorkArea

TODAY = date(2026, 11, 27)
SECRET = "OUTSIDE-SECRET-7f3a"
DOTENV = "DOTENV-SECRET-91bc"
ENV_SECRET = "sk-ant-environ-secret-5d2e"
OUTSIDE = "outside the workspace, its added directories and ~/.claude"
MEMORY_NAMES = ("CLAUDE.md", "CLAUDE.local.md", "MAINSAIL.md")


@pytest.fixture
def world(tmp_path, monkeypatch):
    """(workspace, home): a secret next to the workspace, a .env inside it, a secret in our environment."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_SECRET)
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET)
    (ws / ".env").write_text(DOTENV)
    return ws, home


def access(ws: Path, home: Path, deny: tuple[str, ...] = ("Read(./.env)",), added: tuple[str, ...] = ()
           ) -> MemoryAccess:
    rules = RuleSet(deny=[RuleSpec(rule=r) for r in deny])
    return MemoryAccess(WorkArea(str(ws), added), str(home), read_denied(rules, str(ws), str(home)))


def context(ws: Path, home: Path, **kw) -> str:
    return user_context(str(ws), str(home), TODAY, stop_at=str(ws), access=access(ws, home, **kw))


def assert_no_secret(text: str) -> None:
    assert SECRET not in text and DOTENV not in text and ENV_SECRET not in text


@pytest.mark.parametrize("name", MEMORY_NAMES)
def test_proc_self_environ(world, name):
    ws, home = world
    (ws / name).write_text("Rules.\n@/proc/self/environ\n")
    text = context(ws, home)
    assert_no_secret(text)
    assert "(import of /proc/self/environ left out: a system file (/proc, /sys, /dev))" in text
    assert "Rules." in text


@pytest.mark.parametrize("name", MEMORY_NAMES)
def test_outside_the_workspace(world, name):
    ws, home = world
    (ws / name).write_text("@../outside/secret.txt")
    text = context(ws, home)
    assert_no_secret(text)
    assert f"(import of {ws.parent}/outside/secret.txt left out: {OUTSIDE})" in text


@pytest.mark.parametrize("name", MEMORY_NAMES)
def test_dotenv_under_a_read_deny_rule(world, name):
    ws, home = world
    (ws / name).write_text("@.env")
    text = context(ws, home)
    assert_no_secret(text)
    assert f"(import of {ws}/.env left out: a Read deny rule covers it)" in text
    # Without the rule, a file of the workspace is read (as a Read would be).
    assert DOTENV in context(ws, home, deny=())


@pytest.mark.parametrize("name", MEMORY_NAMES)
def test_through_a_symlink(world, name):
    ws, home = world
    (ws / "docs").mkdir()
    (ws / "docs" / "secret.md").symlink_to(ws.parent / "outside" / "secret.txt")
    (ws / "docs" / "environ.md").symlink_to("/proc/self/environ")
    (ws / "docs" / "env.md").symlink_to(ws / ".env")
    (ws / "procdir").symlink_to("/proc/self")
    (ws / name).write_text("@docs/secret.md @docs/environ.md @docs/env.md @procdir/environ")
    text = context(ws, home)
    assert_no_secret(text)
    assert f"(import of {ws}/docs/secret.md left out: {OUTSIDE})" in text
    assert f"(import of {ws}/docs/environ.md left out: a system file" in text
    assert f"(import of {ws}/docs/env.md left out: a Read deny rule covers it)" in text
    assert f"(import of {ws}/procdir/environ left out: a system file" in text


@pytest.mark.parametrize("name", MEMORY_NAMES)
def test_tilde_user_and_tilde_outside_claude(world, name):
    ws, home = world
    me = pwd.getpwuid(os.getuid())
    (home / "notes.md").write_text(SECRET)
    (ws / name).write_text(f"@~{me.pw_name}/.bashrc @~/notes.md @~nobody-such-user/x.md")
    text = context(ws, home)
    assert_no_secret(text)
    assert f"(import of {home}/notes.md left out: {OUTSIDE})" in text
    assert f"(import of {os.path.normpath(me.pw_dir)}/.bashrc left out:" in text
    assert "(import of ~nobody-such-user/x.md left out: " in text and "does not exist" in text


@pytest.mark.parametrize("name", MEMORY_NAMES)
def test_nested_import(world, name):
    ws, home = world
    (ws / name).write_text("@a.md")
    (ws / "a.md").write_text("A @b/b.md")
    (ws / "b").mkdir()
    (ws / "b" / "b.md").write_text("B @../../outside/secret.txt @/proc/self/environ @../.env")
    text = context(ws, home)
    assert_no_secret(text)
    assert "Contents of " + str(ws / "b" / "b.md") in text
    assert text.count(" left out: ") == 3


@pytest.mark.parametrize("name", MEMORY_NAMES)
def test_memory_file_that_is_a_symlink(world, name):
    ws, home = world
    (ws / name).symlink_to("/proc/self/environ")
    text = context(ws, home)
    assert_no_secret(text)
    assert f"(memory file {ws}/{name} left out: a system file" in text


def test_user_claude_dir_and_added_directories_are_read(world):
    ws, home = world
    (home / ".claude").mkdir()
    (home / ".claude" / "style.md").write_text("STYLE")
    extra = ws.parent / "outside"
    (ws / "CLAUDE.md").write_text("@~/.claude/style.md @../outside/secret.txt")
    text = context(ws, home, added=(str(extra),))
    assert "STYLE" in text and SECRET in text  # an added directory is part of the working area


def test_default_access_is_the_workspace_alone(world):
    ws, home = world
    (ws / "CLAUDE.md").write_text("@../outside/secret.txt @/proc/self/environ")
    files = memory_files(str(ws), str(home), stop_at=str(ws))
    assert [f.content for f in files[1:]] == ["", ""]
    assert all("left out" in f.note for f in files[1:])


def test_the_engine_applies_the_sessions_rules(engine, world):
    ws, home = world
    (ws / "CLAUDE.md").write_text("@.env @/proc/self/environ @../outside/secret.txt")
    rec = engine.create_session(str(ws), setup=SessionSetup(rules=RuleSet(deny=[RuleSpec(rule="Read(./.env)")])), home=str(home))
    assert_no_secret(rec.user_context)
    assert rec.user_context.count(" left out: ") == 3
    rec = engine.create_session(str(ws), setup=SessionSetup(additional_directories=[str(ws.parent / "outside")]), home=str(home))
    assert SECRET in rec.user_context and DOTENV in rec.user_context
