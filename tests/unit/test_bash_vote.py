"""The Bash checker's two-parser vote and its line-continuation splice (issue 25, cause 1)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from workflows.permissions.shell import bash_vote
from workflows.permissions.shell.bash_parse import parse
from workflows.permissions.shell.bash_splice import splice

# Each: a line whose output under bash must not change when the checker's splice is applied first.
SPLICE_CASES = [
    "echo a # c \\\necho b", "cat <<'E'\nfoo\\\nE\necho x\nE", "cat <<E\nfoo\\\nE\necho x\nE",
    "cat <<E\\\nF\nfoo\nEF\necho after", "echo $'a\\\nb'", 'echo "a\\\nb"', "echo 'a\\\nb'",
    "echo $(echo a\\\nb)", "echo `echo a\\\nb`", "echo a\\\\\necho b", "echo $((1+\\\n2))", "echo ${HOME\\\n}",
    "e\\\ncho x", "echo a;\\\n#x\necho b", "echo a \\\n#x\necho b", "cat <<E\nfoo\nE\\\nE\necho b",
    "cat <<'E'\nfoo\nE\\\nE\necho b", "ls\\\n#;echo PWNED", "cat <<-E\n\tfoo\\\n\tE\n\tE\necho z",
    "echo \"it's\\\n\" x", "echo $'it\\'s\\\n' y", 'cat <<"E" ; echo a\\\nb\nq\\\nE\necho c',
    "cat <<<x\necho '\\\nx' # \\\necho y\nx", "cat <<<'E'\necho a\\\nb",
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("line", SPLICE_CASES)
def test_the_splice_is_what_bash_reads(line):
    real = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=10)
    spliced = subprocess.run(["bash", "-c", splice(line)], capture_output=True, text=True, timeout=10)
    assert (spliced.stdout, spliced.returncode) == (real.stdout, real.returncode)


def test_the_hidden_command_is_found_and_the_line_has_a_problem():
    parsed = parse("ls\\\n#;touch PWNED")
    assert parsed.problems
    assert not any(c.name == "ls" and len(c.words) == 1 for c in parsed.commands)


@pytest.mark.parametrize("line", ["ls -la src", "git status && git diff --stat | head -5", "cat <<'E'\nx\nE",
                                  "FOO=1 npm test 2>&1 >/dev/null", "grep -r 'a b' \"c\\\"d\" e\\ f", "time ls",
                                  "ls 3>&- <a.txt", "npm test \\\n  --watch=false"])
def test_both_parsers_agree_on_ordinary_lines(line):
    assert parse(line).problems == ()


def test_a_disagreement_is_a_problem_deny_rules_treat_as_unknowable(monkeypatch):
    monkeypatch.setattr(bash_vote, "_shfmt", lambda command: {"Type": "File", "Stmts": [
        {"Cmd": {"Type": "CallExpr", "Args": [{"Parts": [{"Type": "Lit", "Value": "rm"}]}]}}]})
    problem = bash_vote.vote("ls", parse.__wrapped__("ls").commands, approved=True)
    assert problem == f"{bash_vote.DISAGREE}: shfmt finds `rm`, tree-sitter-bash does not"


def test_without_shfmt_every_line_has_a_problem_naming_the_fix(monkeypatch):
    monkeypatch.setattr(bash_vote, "shfmt_path", lambda: None)
    parsed = parse.__wrapped__("ls")
    assert parsed.problems == (f"{bash_vote.UNCHECKED}: shfmt is not installed ({bash_vote.FIX})",)
    assert "pip install shfmt-py" in parsed.problems[0]


def test_a_slow_or_broken_shfmt_is_a_problem(monkeypatch, tmp_path):
    slow = tmp_path / "shfmt"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    monkeypatch.setattr(bash_vote, "shfmt_path", lambda: str(slow))
    monkeypatch.setattr(bash_vote, "TIMEOUT", 0.2)
    assert parse.__wrapped__("ls").problems == (f"{bash_vote.UNCHECKED}: shfmt did not answer within 0.2s",)
    slow.write_text("#!/bin/sh\necho '{not json'\n")
    assert parse.__wrapped__("ls").problems[0].startswith(f"{bash_vote.UNCHECKED}: shfmt printed something")


def test_a_line_nested_too_deeply_for_the_second_parser_is_a_problem_not_a_crash():
    parsed = parse.__wrapped__("echo " + "$(" * 400 + ")" * 400)
    assert f"{bash_vote.UNCHECKED}: it is nested too deeply" in parsed.problems


def test_a_redirection_read_differently_is_named_as_such(monkeypatch):
    monkeypatch.setattr(bash_vote, "_shfmt", lambda command: {"Type": "File", "Stmts": [
        {"Cmd": {"Type": "CallExpr", "Args": [{"Parts": [{"Type": "Lit", "Value": "ls"}]}]},
         "Redirs": [{"Op": ">", "Word": {"Parts": [{"Type": "Lit", "Value": "out"}]}}]}]})
    problem = bash_vote.vote("ls", parse.__wrapped__("ls").commands, approved=True)
    assert problem == f"{bash_vote.DISAGREE}: they read the redirections or assignments of `ls` differently"
