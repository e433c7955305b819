"""Which pending calls a token without the admin scope may approve (workflows/permissions/protected_writes.py),
what a workspace-scoped token's approval may reach (token_reach.py), and the admin scope of tokens."""

from __future__ import annotations

import json
import os

import pytest

from workflows.models import SandboxSettings, SessionRecord, TokenRecord
from workflows.permissions import sandbox
from workflows.permissions.protected_writes import always_problem, protected_write
from workflows.permissions.sandbox import SandboxStatus
from workflows.permissions.sandbox import mounts as sandbox_mounts
from workflows.permissions.token_reach import hidden_from, reach_problem
from workflows.store import keys
from workflows.store.api_tokens import TokenStore, describe


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 1\n")
    return root


@pytest.fixture
def home(tmp_path):
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def bwrap(monkeypatch):
    """The sandbox available on this machine, whatever is installed."""
    monkeypatch.setattr(sandbox, "_status", SandboxStatus(True, "test"))
    monkeypatch.delenv("MAINSAIL_SANDBOX", raising=False)


def session(ws, home, **sandbox_keys) -> SessionRecord:
    return SessionRecord(id="s1", model="m", workspace=os.path.realpath(ws), home=os.path.realpath(home),
                         sandbox=SandboxSettings(**sandbox_keys))


def bash(command: str, rec: SessionRecord) -> str | None:
    return protected_write("Bash", {"command": command}, rec)


# ----------------------------------------------------------------------------- the tools' paths


@pytest.mark.parametrize("tool,path", [
    ("Write", ".claude/settings.json"), ("Edit", ".claude/settings.local.json"), ("MultiEdit", ".git/config"),
    ("Write", ".mcp.json"), ("Write", "sub/.mcp.json"), ("Write", ".mainsail/settings.json"),
    ("Write", "sub/.git/commondir"), ("Write", "~/.claude/settings.json"), ("Write", "~/.claude.json"),
    ("Write", ".GIT/config"), ("Write", "~nosuchuser/x"),
])
def test_a_write_to_a_protected_path_is_named(ws, home, tool, path):
    why = protected_write(tool, {"file_path": path}, session(ws, home))
    assert why is not None and why.startswith(tool)


def test_a_notebook_edit_and_links_resolve_like_the_tool(ws, home):
    rec = session(ws, home)
    assert protected_write("NotebookEdit", {"notebook_path": ".claude/x.ipynb"}, rec)
    assert protected_write("NotebookEdit", {"notebook_path": "src/x.ipynb"}, rec) is None
    (ws / "cfg").symlink_to(ws / ".claude")
    assert "/.claude/settings.json" in protected_write("Write", {"file_path": "cfg/settings.json"}, rec)
    (ws / ".claude" / "settings.json").write_text("{}")
    os.link(ws / ".claude" / "settings.json", ws / "innocent.json")
    assert "hard links" in protected_write("Edit", {"file_path": "innocent.json"}, rec)
    assert "hard links" in bash("echo x >> innocent.json", rec) and "hard links" in bash("touch innocent.json", rec)


def test_ordinary_writes_and_tools_that_write_no_file_pass(ws, home):
    rec = session(ws, home)
    assert protected_write("Write", {"file_path": "src/a.py"}, rec) is None
    assert protected_write("Edit", {"file_path": str(ws / "src" / "new.py")}, rec) is None
    for tool in ("Read", "Glob", "Grep", "WebFetch", "TodoWrite", "Task"):
        assert protected_write(tool, {"file_path": ".claude/settings.json"}, rec) is None


def test_a_tool_whose_writes_are_unknown_counts_as_writing(ws, home):
    assert "not known" in protected_write("mcp__files__write_file", {"path": "x"}, session(ws, home))


def test_a_settings_file_outside_the_workspace_is_protected(ws, home, monkeypatch, tmp_path):
    managed = tmp_path / "managed"
    managed.mkdir()
    monkeypatch.setenv("MAINSAIL_MANAGED_SETTINGS_DIR", str(managed))
    from workflows.settings.managed import policy_layers

    rec = session(ws, home)
    (_, policy), *_ = policy_layers()
    assert protected_write("Write", {"file_path": str(policy)}, rec)


# ----------------------------------------------------------------------------- Bash


@pytest.mark.parametrize("command", [
    "echo x > .claude/settings.json", "echo '{}' | tee .mcp.json", "echo x >> ~/.claude/settings.json",
    "cp src/a.py .git/hooks/pre-commit", "cd src && mkdir .git", "mv src .claude", "touch .c*/x",
    "git config core.fsmonitor x", "git -c x=y commit -m m", "echo $(id) > out", "ln -s .claude cfg",
    "rm .mcp.json",
])
def test_bash_that_may_write_a_protected_path_is_named(ws, home, command, bwrap):
    assert bash(command, session(ws, home)) is not None, command


@pytest.mark.parametrize("command", [
    "python3 -c 'open(\".claude/settings.json\", \"w\")'", "npm test", "make", "bash run.sh",
])
def test_a_program_outside_the_sandbox_may_write_anything(ws, home, command, bwrap):
    why = bash(command, session(ws, home, enabled=False))
    assert "sandbox is off" in why
    assert "excludedCommands" in bash(command, session(ws, home, excluded_commands=[command.split()[0]]))


def test_a_variable_that_may_change_what_runs_makes_a_read_only_command_a_program(ws, home, bwrap):
    assert "sandbox is off" in bash("GIT_DIR=x git status", session(ws, home, enabled=False))
    assert "sandbox is off" in bash("LD_PRELOAD=./x.so ls", session(ws, home, enabled=False))


def test_the_sandbox_unavailable_or_turned_off_counts_as_off(ws, home, monkeypatch):
    monkeypatch.setattr(sandbox, "_status", SandboxStatus(False, "no bwrap"))
    assert "unavailable" in bash("npm test", session(ws, home))
    monkeypatch.setattr(sandbox, "_status", SandboxStatus(True, "test"))
    monkeypatch.setenv("MAINSAIL_SANDBOX", "false")
    assert "MAINSAIL_SANDBOX" in bash("npm test", session(ws, home))


def test_a_program_in_the_sandbox_passes_only_where_it_keeps_every_protected_name(ws, home, bwrap, monkeypatch):
    rec = session(ws, home)
    with monkeypatch.context() as m:
        m.setattr(sandbox_mounts, "ALWAYS_READ_ONLY", (".claude", ".mainsail"))  # (the sandbox of issue 24)
        left = bash("python3 -c 'print(1)'", rec)
        assert "leaves .git, .mcp.json writable" in left  # .git/commondir, .mcp.json
    assert bash("python3 -c 'print(1)'", rec) is None
    assert bash("python3 -c 'print(1)' > .claude/x", rec) is not None  # a redirection is named still


@pytest.mark.parametrize("command", ["ls -la", "cat src/a.py > out.txt", "mkdir build && touch build/x",
                                     "git status", "grep -r x src | sort", ""])
def test_bash_shown_not_to_write_a_protected_path_passes(ws, home, command):
    assert bash(command, session(ws, home, enabled=False)) is None, command


# ----------------------------------------------------------------------------- "always"


def test_an_always_rule_that_would_allow_a_protected_write_is_named(ws, home, bwrap):
    rec = session(ws, home)
    assert "Edit" in always_problem(["Edit"], rec)
    # `echo approved x > .mcp.json` asks whatever the rules say (.mcp.json is a protected path of the checker),
    # and a program in the sandbox cannot write a protected name: neither rule opens a protected write...
    assert always_problem(["Bash(echo approved:*)"], rec) is None
    assert always_problem(["Bash(python3:*)"], rec) is None
    # ... but outside the sandbox a program may write anything.
    assert "python3" in always_problem(["Bash(python3:*)"], session(ws, home, enabled=False))
    assert always_problem(["WebFetch(domain:example.com)"], rec) is None
    assert always_problem(["Bash(rm -rf build)"], rec) is None  # an exact rule allows that command only


# ----------------------------------------------------------------------------- workspace reach


@pytest.fixture
def teams(tmp_path):
    for d in ("a", "b", "c/inner"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "b" / "secret.txt").write_text("b's secret\n")
    mine = TokenRecord(name="team-a", workspaces=[os.path.realpath(tmp_path / "a")])
    others = [mine, TokenRecord(name="team-b", workspaces=[os.path.realpath(tmp_path / "b")]),
              TokenRecord(name="ops"), TokenRecord(name="sub", workspaces=[os.path.realpath(tmp_path / "a")])]
    return tmp_path, mine, others


def test_a_scoped_token_hides_the_other_teams_workspaces(teams):
    tmp_path, mine, others = teams
    assert hidden_from(mine, others) == [os.path.realpath(tmp_path / "b")]
    assert hidden_from(TokenRecord(name="ops"), others) == []


@pytest.mark.parametrize("tool,tool_input", [
    ("Read", {"file_path": "../b/secret.txt"}), ("Grep", {"pattern": "x", "path": "../b"}),
    ("Bash", {"command": "cat ../b/secret.txt"}), ("Bash", {"command": "cp ../b/secret.txt here.txt"}),
    ("Bash", {"command": "cd .. && cat b/secret.txt"}), ("Bash", {"command": "echo x > ../b/planted"}),
    ("Bash", {"command": "cat $(echo ../b/secret.txt)"}), ("mcp__files__read", {"path": "x"}),
])
def test_a_scoped_tokens_approval_may_not_reach_another_workspace(teams, home, tool, tool_input, bwrap):
    tmp_path, mine, others = teams
    rec = session(tmp_path / "a", home, deny_read=[os.path.realpath(tmp_path / "b")])
    assert reach_problem(tool, tool_input, rec, mine, others) is not None
    assert reach_problem(tool, tool_input, rec, TokenRecord(name="ops"), others) is None  # every workspace


def test_a_program_may_run_only_where_the_sandbox_hides_the_other_workspaces(teams, home, bwrap):
    tmp_path, mine, others = teams
    hides = session(tmp_path / "a", home, deny_read=[os.path.realpath(tmp_path / "b")])
    assert reach_problem("Bash", {"command": "python3 -c 'print(1)'"}, hides, mine, others) is None
    assert reach_problem("Read", {"file_path": "notes.md"}, hides, mine, others) is None
    shows = session(tmp_path / "a", home)
    assert "does not hide" in reach_problem("Bash", {"command": "python3 x.py"}, shows, mine, others)
    off = session(tmp_path / "a", home, enabled=False, deny_read=[os.path.realpath(tmp_path / "b")])
    assert "sandbox is off" in reach_problem("Bash", {"command": "python3 x.py"}, off, mine, others)
    assert reach_problem("Bash", {"command": "ls -la"}, off, mine, others) is None


# ----------------------------------------------------------------------------- the admin scope


def test_the_admin_scope_is_off_unless_asked_and_an_old_record_reads_as_without_it(fake_redis):
    tokens = TokenStore(fake_redis)
    secret, rec = tokens.create("alice")
    assert rec.admin is False and describe(rec)["admin"] is False
    assert tokens.update("alice", admin=True).admin is True and tokens.find(secret).admin is True
    assert tokens.find(secret).allow_bypass is False  # the other scope is left as it was
    assert tokens.update("alice", admin=False).admin is False
    _, boss = tokens.create("boss", admin=True)
    assert boss.admin is True
    raw = json.loads(fake_redis.hget(keys.api_tokens(), "boss"))
    del raw["admin"]
    fake_redis.hset(keys.api_tokens(), "boss", json.dumps(raw))
    assert tokens.named("boss").admin is False


# ----------------------------------------------------------------------------- allowed tools at the start


def test_a_token_without_the_admin_scope_may_not_start_a_session_with_rules_allowing_protected_writes(
        ws, home, bwrap):
    from workflows.exceptions import ScopeMissing
    from workflows.sessions.setup import session_options
    from workflows.settings import Settings

    alice, boss = TokenRecord(name="alice"), TokenRecord(name="boss", admin=True)
    for rules in (["Edit"], ["Read Edit"]):
        with pytest.raises(ScopeMissing, match="mainsail token update alice --admin"):
            session_options(ws, Settings(), allowed_tools=rules, token=alice, home=home)
        perms, _ = session_options(ws, Settings(), allowed_tools=rules, token=boss, home=home)
        assert perms["rules"].allow
    # A program the sandbox contains cannot write a protected name: its rule is alice's to give.
    perms, _ = session_options(ws, Settings(), allowed_tools=["Read", "WebFetch(domain:example.com)",
                                                              "Bash(python3:*)"], token=alice, home=home)
    assert len(perms["rules"].allow) == 3


def test_a_scoped_tokens_schedule_runs_sessions_hiding_the_other_workspaces(engine, settings, tmp_path):
    from workflows.models.options import RemoteOptions
    from workflows.schedules.models import Schedule
    from workflows.sessions.firing import fire
    from workflows.store.schedules import ScheduleStore

    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    tokens = TokenStore(engine.store.r)
    tokens.create("team-a", workspaces=[str(tmp_path / "a")])
    tokens.create("team-b", workspaces=[str(tmp_path / "b")])
    fired = {}
    for who in ("token:team-a", "user:me"):
        s = Schedule(name="nightly", cron="0 3 * * *", workspace=str(tmp_path / "a"), prompt="report",
                     options=RemoteOptions(), created_by=who)
        ScheduleStore(engine.store.r).add(s)
        fired[who] = engine.store.get_session(fire(engine, settings, s.id, manual=True).session_id)
    assert fired["token:team-a"].sandbox.deny_read == [os.path.realpath(tmp_path / "b")]
    assert fired["user:me"].sandbox.deny_read == []
