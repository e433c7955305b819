"""Context files (workflows.context.files, workflows.context.claude_md): env and git status, memory files and
imports, the system prompt."""

from __future__ import annotations

import os
import platform
import sys
from datetime import date
from pathlib import Path

import pytest

from tests.gitrepo import git, isolate_git
from workflows.context.claude_md import MemoryFile, import_paths, memory_files, user_context
from workflows.context.files import DEFAULT_SYSTEM_PROMPT, environment_block, git_status, system_context, system_prompt

TODAY = date(2026, 11, 22)
HEADER = (
    "gitStatus: This is the git status at the start of the conversation. Note that this status is a "
    "snapshot in time, and will not update during the conversation.\n"
)
CLAUDE_MD = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly "
    "as written."
)
OPEN = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
CLOSE = (
    "\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should not respond "
    "to this context unless it is highly relevant to your task.\n</system-reminder>"
)


# --------------------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def isolated_git(tmp_path, monkeypatch):
    isolate_git(tmp_path, monkeypatch)


def make_repo(path: Path, user: str | None = "Ada Lovelace", branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    if user:
        git(path, "config", "user.name", user)
    return path


def commit(repo: Path, name: str, text: str, message: str) -> None:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", message)


def short(repo: Path, rev: str) -> str:
    return git(repo, "rev-parse", "--short", rev).strip()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def env_block(workspace: Path, repo: bool) -> str:
    return (
        f"<env>\nWorking directory: {workspace}\nIs directory a git repo: {'Yes' if repo else 'No'}\n"
        f"Platform: {sys.platform}\nOS Version: {platform.release()}\n</env>"
    )


# --------------------------------------------------------------------------- system context


def test_system_context_exact_text(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, "calc.py", "x = 1\n", "Add calc")
    commit(repo, "calc.py", "x = 2\n", "Fix parser")
    (repo / "calc.py").write_text("x = 3\n")
    (repo / "notes.txt").write_text("todo\n")
    first, second = short(repo, "HEAD~1"), short(repo, "HEAD")

    expected_git = (
        HEADER
        + "Current branch: main\n\n"
        "Main branch (you will usually use this for PRs): main\n\n"
        "Git user: Ada Lovelace\n\n"
        "Status:\nM calc.py\n?? notes.txt\n\n"
        f"Recent commits:\n{second} Fix parser\n{first} Add calc"
    )
    assert git_status(str(repo)) == expected_git
    assert system_context(str(repo)) == env_block(repo, True) + "\n" + expected_git


def test_recent_commits_are_the_last_five(tmp_path):
    repo = make_repo(tmp_path / "repo")
    for i in range(6):
        git(repo, "commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", f"commit {i}")
    text = git_status(str(repo))
    log = text.split("Recent commits:\n", 1)[1]
    assert log.splitlines() == [f"{short(repo, f'HEAD~{i}')} commit {5 - i}" for i in range(5)]


def test_config_does_not_change_the_format(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, "a.txt", "a", "Initial")
    (repo / "a.txt").write_text("b")
    git(repo, "config", "log.decorate", "short")
    git(repo, "config", "color.ui", "always")
    git(repo, "config", "color.status", "always")
    text = git_status(str(repo))
    assert text.endswith(f"Status:\nM a.txt\n\nRecent commits:\n{short(repo, 'HEAD')} Initial")


def test_clean_repo_without_user_and_on_a_feature_branch(tmp_path):
    repo = make_repo(tmp_path / "repo", user=None)
    commit(repo, "a.txt", "a", "Initial")
    git(repo, "checkout", "-q", "-b", "feature/x")
    assert git_status(str(repo)) == (
        HEADER
        + "Current branch: feature/x\n\n"
        "Main branch (you will usually use this for PRs): main\n\n"
        "Status:\n(clean)\n\n"
        f"Recent commits:\n{short(repo, 'HEAD')} Initial"
    )


@pytest.mark.parametrize(
    "setup, expected",
    [
        ("origin_head", "trunk"),  # origin/HEAD's target wins over a local main
        ("main", "main"),
        ("master", "master"),
        ("neither", "dev"),  # falls back to the current branch
    ],
)
def test_main_branch(tmp_path, setup, expected):
    repo = make_repo(tmp_path / "repo", branch="dev")
    commit(repo, "a.txt", "a", "Initial")
    if setup == "origin_head":
        git(repo, "branch", "main")
        git(repo, "update-ref", "refs/remotes/origin/trunk", "HEAD")
        git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
    elif setup in ("main", "master"):
        git(repo, "branch", setup)
        if setup == "main":
            git(repo, "branch", "master")  # main is preferred when both exist
    text = git_status(str(repo))
    assert f"Main branch (you will usually use this for PRs): {expected}\n" in text
    assert "Current branch: dev\n" in text


def test_repo_without_commits_has_no_commit_section(tmp_path):
    repo = make_repo(tmp_path / "repo", branch="trunk")
    (repo / "new.txt").write_text("n")
    assert git_status(str(repo)) == (
        HEADER
        + "Current branch: trunk\n\n"
        "Main branch (you will usually use this for PRs): trunk\n\n"
        "Git user: Ada Lovelace\n\n"
        "Status:\n?? new.txt"
    )


def test_status_is_cut_at_2000_characters(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, "a.txt", "a", "Initial")
    for i in range(120):
        (repo / f"untracked_file_with_a_rather_long_name_{i:03d}.txt").write_text("x")
    full = git(repo, "status", "--short").strip()
    assert len(full) > 2000
    text = git_status(str(repo))
    status = text.split("Status:\n", 1)[1].split("\n\nRecent commits:", 1)[0]
    assert status == (
        full[:2000]
        + '\n... (truncated because it exceeds 2k characters. If you need more information, run '
        '"git status" using Bash)'
    )


def test_status_of_exactly_2000_characters_is_not_cut(tmp_path):
    repo = make_repo(tmp_path / "repo")
    name_len = 2000 - len("?? ")
    rel = "n" * 200  # nested directories: a file name is at most 255 bytes
    (repo / rel).mkdir()
    while len(rel) + 201 < name_len:
        rel += "/" + "n" * 200
        (repo / rel).mkdir()
    leaf = rel + "/" + "f" * (name_len - len(rel) - 1)
    (repo / leaf).write_text("x")
    git(repo, "config", "status.showUntrackedFiles", "all")
    assert len(git(repo, "status", "--short").strip()) == 2000
    assert "truncated" not in git_status(str(repo))


def test_outside_a_repo_is_skipped_cleanly(tmp_path, capfd):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_status(str(plain)) == ""
    assert system_context(str(plain)) == env_block(plain, False)
    assert git_status(str(tmp_path / "does-not-exist")) == ""
    # Inside .git is not a work tree.
    repo = make_repo(tmp_path / "repo")
    assert git_status(str(repo / ".git")) == ""
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_no_git_program_is_needed(tmp_path, monkeypatch):
    """Git state is read through libgit2: the same snapshot with no ``git`` on PATH."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, "a.txt", "a", "Initial")
    with_git = git_status(str(repo))
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert git_status(str(repo)) == with_git
    assert "Is directory a git repo: Yes" in environment_block(str(repo))


def test_environment_block_has_no_date(tmp_path):
    repo = make_repo(tmp_path / "repo")
    block = environment_block(str(repo))
    assert block == env_block(repo, True)
    assert "date" not in block.lower()


def test_system_context_is_stable(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, "a.txt", "a", "Initial")
    (repo / "b.txt").write_text("b")
    assert system_context(str(repo)).encode() == system_context(str(repo)).encode()


# --------------------------------------------------------------------------- memory files


@pytest.fixture
def tree(tmp_path):
    """top/ (stop_at) > repo/ > sub/ (workspace), and a home with both user files."""
    top = tmp_path / "top"
    repo = top / "repo"
    ws = repo / "sub"
    home = tmp_path / "home"
    write(top / "CLAUDE.md", "top level")
    write(repo / "CLAUDE.md", "repo project")
    write(repo / ".claude" / "CLAUDE.md", "repo dot-claude")
    write(repo / "MAINSAIL.md", "repo mainsail")
    write(repo / ".mainsail" / "MAINSAIL.md", "repo dot-mainsail")
    write(repo / "CLAUDE.local.md", "repo local")
    write(repo / "MAINSAIL.local.md", "repo mainsail local")
    write(ws / "CLAUDE.md", "sub project")
    write(home / ".claude" / "CLAUDE.md", "home claude")
    write(home / ".mainsail" / "MAINSAIL.md", "home mainsail")
    return top, repo, ws, home


def paths(files: list[MemoryFile]) -> list[str]:
    return [f.path for f in files]


def test_order_user_files_then_root_down_to_workspace(tree):
    top, repo, ws, home = tree
    files = memory_files(str(ws), str(home), stop_at=str(top))
    assert paths(files) == [
        f"{home}/.claude/CLAUDE.md",
        f"{home}/.mainsail/MAINSAIL.md",
        f"{top}/CLAUDE.md",
        f"{repo}/CLAUDE.md",
        f"{repo}/.claude/CLAUDE.md",
        f"{repo}/MAINSAIL.md",
        f"{repo}/.mainsail/MAINSAIL.md",
        f"{repo}/CLAUDE.local.md",
        f"{repo}/MAINSAIL.local.md",
        f"{ws}/CLAUDE.md",
    ]
    assert [f.kind for f in files] == ["user"] * 2 + ["project"] * 5 + ["local"] * 2 + ["project"]
    assert [f.content for f in files][:3] == ["home claude", "home mainsail", "top level"]
    assert all(f.imported_by is None and f.note is None for f in files)


def test_stop_at_limits_the_walk(tree):
    top, repo, ws, home = tree
    files = memory_files(str(ws), str(home), stop_at=str(repo))
    assert f"{top}/CLAUDE.md" not in paths(files)
    assert f"{repo}/CLAUDE.md" in paths(files)
    # A stop_at that is not above the workspace: only the workspace itself.
    files = memory_files(str(ws), str(home), stop_at=str(home))
    assert paths(files)[2:] == [f"{ws}/CLAUDE.md"]


def test_walk_from_the_root_reaches_the_temp_dirs(tree):
    top, repo, ws, home = tree
    found = paths(memory_files(str(ws), str(home)))
    assert found[-1] == f"{ws}/CLAUDE.md"
    assert found.index(f"{top}/CLAUDE.md") < found.index(f"{repo}/CLAUDE.md")


def test_same_file_by_realpath_is_loaded_once(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    write(ws / ".claude" / "CLAUDE.md", "one")
    os.symlink(ws / ".claude" / "CLAUDE.md", ws / "CLAUDE.md")
    home.mkdir()
    assert paths(memory_files(str(ws), str(home), stop_at=str(ws))) == [f"{ws}/CLAUDE.md"]
    # The home's own ~/.claude/CLAUDE.md is not loaded again when the walk passes through home.
    write(home / ".claude" / "CLAUDE.md", "mine")
    project = home / "project"
    project.mkdir()
    assert paths(memory_files(str(project), str(home), stop_at=str(tmp_path))) == [
        f"{home}/.claude/CLAUDE.md"
    ]


def test_user_context_exact_text(tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    write(home / ".claude" / "CLAUDE.md", "Use British spelling.\n")
    write(repo / "CLAUDE.md", "# Project\n\nRun `make test`.\n\n")
    write(repo / "CLAUDE.local.md", "My sandbox URL is http://localhost:8000\n")
    text = user_context(str(repo), str(home), TODAY, stop_at=str(repo))
    assert text == (
        OPEN + "# claudeMd\n" + CLAUDE_MD + "\n\n"
        f"Contents of {home}/.claude/CLAUDE.md (user's private global instructions for all projects):\n\n"
        "Use British spelling.\n\n"
        f"Contents of {repo}/CLAUDE.md (project instructions, checked into the codebase):\n\n"
        "# Project\n\nRun `make test`.\n\n"
        f"Contents of {repo}/CLAUDE.local.md (user's private project instructions, not checked in):\n\n"
        "My sandbox URL is http://localhost:8000\n"
        "# currentDate\nToday's date is 2026-11-22." + CLOSE
    )


def test_user_context_without_memory_files(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    text = user_context(str(tmp_path / "ws"), str(tmp_path / "home"), TODAY, stop_at=str(tmp_path))
    assert text == OPEN + "# currentDate\nToday's date is 2026-11-22." + CLOSE


def test_empty_memory_file_is_left_out_of_the_text(tmp_path):
    write(tmp_path / "ws" / "CLAUDE.md", "  \n\n")
    (tmp_path / "home").mkdir()
    text = user_context(str(tmp_path / "ws"), str(tmp_path / "home"), TODAY, stop_at=str(tmp_path))
    assert "claudeMd" not in text


def test_user_context_is_byte_stable(tree):
    top, repo, ws, home = tree
    write(ws / "CLAUDE.md", "see @../notes.md and @missing.md")
    write(repo / "notes.md", "notes")
    make_repo(repo)  # the middle level is a git repository; the workspace is a subdirectory of it
    commit(repo, "CLAUDE.md", "repo project", "Add memory")
    a = user_context(str(ws), str(home), TODAY, stop_at=str(top))
    b = user_context(str(ws), str(home), TODAY, stop_at=str(top))
    assert a.encode() == b.encode()
    assert a.count("Contents of ") == 10  # ../notes.md is outside the workspace: left out, with a note
    assert f"(import of {repo}/notes.md left out: outside the workspace" in a
    ctx = system_context(str(ws))
    assert ctx.encode() == system_context(str(ws)).encode()
    assert "Is directory a git repo: Yes" in ctx
    assert "Status:\n?? ../" in ctx  # git reports paths relative to the workspace


def test_large_file_is_cut_at_40000_characters(tmp_path):
    write(tmp_path / "ws" / "CLAUDE.md", "a" * 40_000 + "TAIL")
    write(tmp_path / "ws" / "CLAUDE.local.md", "b" * 40_000)
    (tmp_path / "home").mkdir()
    big, exact = memory_files(str(tmp_path / "ws"), str(tmp_path / "home"), stop_at=str(tmp_path))
    assert big.content.startswith("a" * 40_000 + "\n\n... (truncated")
    assert "TAIL" not in big.content
    assert "exceeds 40,000 characters" in big.content
    assert exact.content == "b" * 40_000


# --------------------------------------------------------------------------- imports


def test_import_chain_relative_absolute_and_home(tmp_path):
    ws, home, elsewhere = tmp_path / "ws", tmp_path / "home", tmp_path / "elsewhere"
    write(ws / "CLAUDE.md", "Start.\n@docs/a.md\nAlso @" + str(ws / "abs.md") + " and @~/.claude/prefs.md.\n"
          "Not @" + str(elsewhere / "abs.md") + " nor @~/prefs.md.\nEnd.")
    write(ws / "docs" / "a.md", "A imports @b.md")
    write(ws / "docs" / "b.md", "B imports @./sub/c.md")
    write(ws / "docs" / "sub" / "c.md", "C")
    write(ws / "abs.md", "ABS")
    write(elsewhere / "abs.md", "ELSEWHERE")
    write(home / ".claude" / "prefs.md", "PREFS")
    write(home / "prefs.md", "HOME ROOT")
    files = memory_files(str(ws), str(home), stop_at=str(ws))
    assert [(f.path, f.imported_by, f.content[:3]) for f in files] == [
        (f"{ws}/CLAUDE.md", None, "Sta"),
        (f"{ws}/docs/a.md", f"{ws}/CLAUDE.md", "A i"),
        (f"{ws}/docs/b.md", f"{ws}/docs/a.md", "B i"),
        (f"{ws}/docs/sub/c.md", f"{ws}/docs/b.md", "C"),
        (f"{ws}/abs.md", f"{ws}/CLAUDE.md", "ABS"),
        (f"{home}/.claude/prefs.md", f"{ws}/CLAUDE.md", "PRE"),
        (f"{elsewhere}/abs.md", f"{ws}/CLAUDE.md", ""),
        (f"{home}/prefs.md", f"{ws}/CLAUDE.md", ""),
    ]
    assert all(f.kind == "project" for f in files)
    assert [f.note for f in files[-2:]] == [
        f"(import of {elsewhere}/abs.md left out: outside the workspace, its added directories and ~/.claude)",
        f"(import of {home}/prefs.md left out: outside the workspace, its added directories and ~/.claude)",
    ]
    text = user_context(str(ws), str(home), TODAY, stop_at=str(ws))
    assert f"Contents of {ws}/docs/b.md (imported by {ws}/docs/a.md):\n\nB imports @./sub/c.md\n\n" in text
    # The importing file's text is sent unchanged, @tokens included.
    assert "Start.\n@docs/a.md\nAlso @" in text
    assert "ELSEWHERE" not in text and "HOME ROOT" not in text


def test_import_cycle_is_refused_with_a_note(tmp_path):
    ws = tmp_path / "ws"
    write(ws / "CLAUDE.md", "@x.md")
    write(ws / "x.md", "X then @y.md")
    write(ws / "y.md", "Y then @x.md")
    (tmp_path / "home").mkdir()
    files = memory_files(str(ws), str(tmp_path / "home"), stop_at=str(ws))
    assert [(f.path, f.note) for f in files] == [
        (f"{ws}/CLAUDE.md", None),
        (f"{ws}/x.md", None),
        (f"{ws}/y.md", None),
        (f"{ws}/x.md", f"(import of {ws}/x.md skipped: import cycle)"),
    ]
    text = user_context(str(ws), str(tmp_path / "home"), TODAY, stop_at=str(ws))
    assert text.count(f"Contents of {ws}/x.md") == 1
    assert f"Y then @x.md\n\n(import of {ws}/x.md skipped: import cycle)\n# currentDate" in text


def test_self_import_and_missing_import(tmp_path):
    ws = tmp_path / "ws"
    write(ws / "CLAUDE.md", "@CLAUDE.md @gone.md @docs")
    (ws / "docs").mkdir()
    (tmp_path / "home").mkdir()
    notes = [f.note for f in memory_files(str(ws), str(tmp_path / "home"), stop_at=str(ws))][1:]
    assert notes == [
        f"(import of {ws}/CLAUDE.md skipped: import cycle)",
        f"(import of {ws}/gone.md skipped: not found)",
        f"(import of {ws}/docs skipped: not a file)",
    ]


def test_imports_in_code_are_not_followed(tmp_path):
    ws = tmp_path / "ws"
    write(
        ws / "CLAUDE.md",
        "Use `@fenced.md` never.\n\n```\n@fenced.md\n```\n\n~~~~ text\n@tilde.md\n~~~\n@tilde2.md\n~~~~\n"
        "Real: @real.md",
    )
    for name in ("fenced.md", "tilde.md", "tilde2.md", "real.md"):
        write(ws / name, name)
    (tmp_path / "home").mkdir()
    files = memory_files(str(ws), str(tmp_path / "home"), stop_at=str(ws))
    assert paths(files) == [f"{ws}/CLAUDE.md", f"{ws}/real.md"]


@pytest.mark.parametrize(
    "content, expected",
    [
        ("@a.md", ["a.md"]),
        ("text @a.md and\t@/abs/b.md\n@~/c.md", ["a.md", "/abs/b.md", "~/c.md"]),
        ("mail me at ada@example.com", []),  # not after whitespace
        ("see @notes.md.", ["notes.md"]),  # sentence punctuation is not part of the path
        ("@my\\ file.md", ["my file.md"]),
        ("`@span.md` and ``code ` @two.md`` @after.md", ["after.md"]),
        ("```python\n@x.md\n```\n@y.md", ["y.md"]),
        ("```\n@never-closed.md", []),
        ("@@handle @", []),
    ],
)
def test_import_paths(content, expected):
    assert import_paths(content) == expected


def test_more_than_five_hops_is_not_loaded(tmp_path):
    ws = tmp_path / "ws"
    write(ws / "CLAUDE.md", "@h1.md")
    for i in range(1, 7):
        write(ws / f"h{i}.md", f"hop {i} @h{i + 1}.md" if i < 6 else "hop 6")
    (tmp_path / "home").mkdir()
    files = memory_files(str(ws), str(tmp_path / "home"), stop_at=str(ws))
    assert [f.content for f in files[1:6]] == [f"hop {i} @h{i + 1}.md" for i in range(1, 6)]
    assert files[6] == MemoryFile(
        f"{ws}/h6.md", "project", "", f"{ws}/h5.md", f"(import of {ws}/h6.md skipped: more than 5 hops)"
    )
    assert len(files) == 7


def test_file_imported_twice_is_sent_once(tmp_path):
    ws = tmp_path / "ws"
    write(ws / "CLAUDE.md", "@shared.md")
    write(ws / "CLAUDE.local.md", "@shared.md")
    write(ws / "shared.md", "S")
    (tmp_path / "home").mkdir()
    files = memory_files(str(ws), str(tmp_path / "home"), stop_at=str(ws))
    assert [(f.path, f.kind, f.note) for f in files] == [
        (f"{ws}/CLAUDE.md", "project", None),
        (f"{ws}/shared.md", "project", None),
        (f"{ws}/CLAUDE.local.md", "local", None),
        (f"{ws}/shared.md", "local", f"(import of {ws}/shared.md skipped: already included)"),
    ]


# --------------------------------------------------------------------------- system prompt


def test_system_prompt_blocks():
    assert system_prompt(None, None, "CTX") == [
        {"type": "text", "text": DEFAULT_SYSTEM_PROMPT},
        {"type": "text", "text": "CTX"},
    ]
    assert system_prompt("Custom.", "More.", "") == [{"type": "text", "text": "Custom.\n\nMore."}]
    assert system_prompt(None, "More.", "CTX")[0]["text"] == DEFAULT_SYSTEM_PROMPT + "\n\nMore."
    assert system_prompt("", None, "CTX") == [{"type": "text", "text": "CTX"}]
    assert system_prompt(None, None, "CTX") == system_prompt(None, None, "CTX")


def test_default_prompt_matches_the_tools():
    from workflows.tools import TOOL_ORDER, ToolContext
    from workflows.tools.bash import MAX_TIMEOUT_MS
    from workflows.tools.read import DEFAULT_LIMIT

    text = DEFAULT_SYSTEM_PROMPT
    assert text.startswith("You are Mainsail, an interactive CLI coding agent")
    assert f"up to {DEFAULT_LIMIT:,} lines" in text
    ctx = ToolContext(workspace=Path("/"))
    assert ctx.bash_default_timeout_ms == 2 * 60_000 and "2 minutes by default" in text
    assert MAX_TIMEOUT_MS == ctx.bash_max_timeout_ms == 10 * 60_000 and "at most 10 minutes" in text
    assert f"{ctx.max_output_chars:,} characters is truncated" in text
    for name in TOOL_ORDER:
        assert name in text
    assert "{" not in text  # no placeholders: the same bytes for every session
