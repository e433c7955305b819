"""Who may write ``.git`` (issue 25, item 3): the checker protects every ``.git`` of the workspace, nested
ones and ``.git`` files included; in the sandbox only a git-only line a rule or a person approved gets a
writable ``.git`` (:func:`workflows.steps.tool.git_writes`), never a mode."""

from __future__ import annotations

import os

import pytest

from workflows.models import PermissionMode, RuleSet, RuleSpec, SessionRecord, ToolCall
from workflows.permissions.rules import paths
from workflows.permissions.sandbox import git_only
from workflows.steps.tool import git_writes
from workflows.tools import get_tool


@pytest.mark.parametrize("command, expected", [
    ("git commit -m x", True),
    ("git add a.txt && git commit -qm 'first'", True),
    ("git status; git log", True),
    ("echo x > .git/commondir", False),
    ("git commit -m x && echo x > .git/commondir", False),
    ("git log > .git/commondir", False),
    ("GIT_DIR=/x git status", False),
    ("git $(echo commit)", False),
    ("/usr/bin/git commit", False),
    ("gitx commit", False),
    ("", False),
])
def test_git_only(command, expected):
    assert git_only(command) is expected


def rec(tmp_path, mode="default", allow=()):
    return SessionRecord(id="s1", model="m", workspace=str(tmp_path), home=str(tmp_path),
                         permission_mode=PermissionMode(mode),
                         rules=RuleSet(allow=[RuleSpec(rule=r) for r in allow]))


def call(command, approved_by=None):
    return ToolCall(tool_use_id="t1", name="Bash", input={"command": command}, approved_by=approved_by)


def test_an_allow_rule_or_a_person_lets_git_write_dot_git(tmp_path):
    bash = get_tool("Bash")
    assert git_writes(call("git commit -m x"), rec(tmp_path, allow=("Bash(git commit:*)",)), bash)
    assert git_writes(call("git commit -m x", approved_by="ada"), rec(tmp_path), bash)


def test_a_mode_never_does(tmp_path):
    bash = get_tool("Bash")
    for mode in ("acceptEdits", "bypassPermissions"):
        assert not git_writes(call("git commit -m x"), rec(tmp_path, mode), bash)
    assert not git_writes(call("git status"), rec(tmp_path), bash)  # read-only: allowed by no rule


def test_nor_a_rule_for_a_line_that_is_not_git_only(tmp_path):
    bash = get_tool("Bash")
    r = rec(tmp_path, allow=("Bash(npm test:*)", "Bash(git commit:*)"))
    assert not git_writes(call("npm test"), r, bash)
    assert not git_writes(call("echo x > .git/commondir", approved_by="ada"), r, bash)
    assert not git_writes(ToolCall(tool_use_id="t", name="Write", input={"command": "git commit"}), r, bash)


@pytest.mark.parametrize("rel", [".git/commondir", ".git", "sub/.git", "sub/.git/config", "a/b/.git/commondir",
                                 ".GIT/commondir", "sub/.git/objects/info/alternates"])
def test_every_dot_git_of_the_workspace_is_protected(tmp_path, rel):
    ws = str(tmp_path)
    assert paths.protected(os.path.join(ws, rel), paths.WorkArea(ws), str(tmp_path / "home"))
