"""Permission rules and modes (workflows.permissions.rules.rules): a decision table, then messages, parsing, always, summary."""

from __future__ import annotations

import pytest

from workflows.models import PermissionMode
from workflows.permissions import always_rules, evaluate, summary
from workflows.permissions.rules.results import Decision
from workflows.permissions.rules.rules import RuleSet, RuleSyntaxError, parse_rule

A, D, Q = Decision.ALLOW, Decision.DENY, Decision.ASK
READ_ONLY = {"Read": True, "Glob": True, "Grep": True, "Edit": False, "Write": False, "Bash": False}

NPM = {"allow": ["Bash(npm test:*)"]}
ECHO = {"allow": ["Bash(echo:*)"]}
ECHO_NO_RM = {"allow": ["Bash(echo:*)"], "deny": ["Bash(rm:*)"]}
NO_RM = {"deny": ["Bash(rm:*)"]}


def B(command: str) -> dict:
    return {"command": command}


def F(path: str) -> dict:
    return {"file_path": path}


# (rules, mode, tool, input, expected). "{ws}" and "{home}" in inputs are replaced by the test's dirs.
CASES = [
    # --- Bash: exact match
    ({"allow": ["Bash(npm test)"]}, "default", "Bash", B("npm test"), A),
    ({"allow": ["Bash(npm test)"]}, "default", "Bash", B("  npm test  "), A),
    ({"allow": ["Bash(npm test)"]}, "default", "Bash", B("npm test --watch"), Q),
    ({"allow": ["Bash(npm test)"]}, "default", "Bash", B("npm testing"), Q),
    # --- Bash: * wildcard, word boundary
    ({"allow": ["Bash(npm run *)"]}, "default", "Bash", B("npm run test"), A),
    ({"allow": ["Bash(npm run *)"]}, "default", "Bash", B("npm run"), A),
    ({"allow": ["Bash(npm run *)"]}, "default", "Bash", B("npm runx"), Q),
    ({"allow": ["Bash(ls*)"]}, "default", "Bash", B("lsof -i"), A),
    ({"allow": ["Bash(ls*)"]}, "default", "Bash", B("ls"), A),
    ({"allow": ["Bash(git * main)"]}, "default", "Bash", B("git checkout main"), A),
    ({"allow": ["Bash(git * main)"]}, "default", "Bash", B("git checkout dev"), Q),
    ({"allow": ["Bash(* --version)"]}, "default", "Bash", B("node --version"), A),
    # --- Bash: legacy :*
    ({"allow": ["Bash(git diff:*)"]}, "default", "Bash", B("git diff"), A),
    ({"allow": ["Bash(git diff:*)"]}, "default", "Bash", B("git diff HEAD~1"), A),
    ({"allow": ["Bash(git diff:*)"]}, "default", "Bash", B("git difftool"), Q),
    # --- Bash: wrappers and env assignments
    (NPM, "default", "Bash", B("timeout 30 npm test"), A),
    (NPM, "default", "Bash", B("timeout -s KILL 5s npm test"), A),
    (NPM, "default", "Bash", B("nice -n 5 npm test"), A),
    (NPM, "default", "Bash", B("nohup npm test"), A),
    (NPM, "default", "Bash", B("time npm test"), A),
    (NPM, "default", "Bash", B("FOO=1 npm test"), Q),
    (NPM, "default", "Bash", B('CI="a b" NODE_ENV=2 npm test'), A),
    (NPM, "default", "Bash", B("nice timeout 10 npm test -- -x"), A),
    (NPM, "default", "Bash", B("timeout 30 npm install"), Q),
    (NPM, "default", "Bash", B("PATH=/tmp/evil npm test"), Q),  # PATH changes what runs: not stripped
    ({"deny": ["Bash(npm publish:*)"]}, "bypassPermissions", "Bash", B("timeout 60 npm publish"), D),
    # --- Bash: compound commands
    (NPM, "default", "Bash", B("npm test && rm -rf x"), Q),
    ({"allow": ["Bash(npm test:*)"], "deny": ["Bash(rm:*)"]}, "default", "Bash", B("npm test && rm -rf x"), D),
    ({"allow": ["Bash(npm test)", "Bash(grep ok)"]}, "default", "Bash", B("npm test | grep ok"), A),
    ({"allow": ["Bash(npm test)", "Bash(grep ok)"]}, "default", "Bash", B("npm test |& grep ok"), A),
    ({"allow": ["Bash(npm test)", "Bash(grep ok)"]}, "default", "Bash", B("npm test; grep ok"), A),
    ({"allow": ["Bash(npm test)", "Bash(grep ok)"]}, "default", "Bash", B("npm test || grep ok"), A),
    ({"allow": ["Bash(npm test)", "Bash(grep ok)"]}, "default", "Bash", B("npm test & grep ok"), A),
    ({"allow": ["Bash(npm test)", "Bash(grep ok)"]}, "default", "Bash", B("npm test\ngrep ok"), A),
    ({"allow": ["Bash(npm test)", "Bash(grep ok)"]}, "default", "Bash", B("npm test | grep ok | tee x"), Q),
    (ECHO_NO_RM, "default", "Bash", B("echo a; rm x"), D),
    (ECHO_NO_RM, "default", "Bash", B("echo a || rm x"), D),
    (ECHO_NO_RM, "default", "Bash", B("echo a | rm x"), D),
    (ECHO_NO_RM, "default", "Bash", B("echo a |& rm x"), D),
    (ECHO_NO_RM, "default", "Bash", B("echo a & rm x"), D),
    (ECHO_NO_RM, "default", "Bash", B("echo a\nrm x"), D),
    (ECHO_NO_RM, "default", "Bash", B("(cd sub && rm x)"), D),
    ({"ask": ["Bash(git push:*)"], "allow": ["Bash(git:*)"]}, "default", "Bash", B("git add . && git push"), Q),
    (NO_RM, "bypassPermissions", "Bash", B("if true; then rm -rf x; fi"), D),
    ({"allow": ["Bash(echo:*)", "Bash(true)"]}, "default", "Bash", B("if true; then echo hi; fi"), Q),
    # --- Bash: quotes
    (ECHO_NO_RM, "default", "Bash", B('echo "a && rm x"'), A),
    (ECHO_NO_RM, "default", "Bash", B("echo 'a; rm x | y'"), A),
    ({"allow": ['Bash(echo "a && b")']}, "default", "Bash", B('echo "a && b"'), A),
    (ECHO, "default", "Bash", B("echo 'unterminated"), Q),
    # --- Bash: command substitution
    (ECHO, "default", "Bash", B("echo $(date)"), Q),
    (ECHO, "default", "Bash", B("echo `date`"), Q),
    (ECHO, "default", "Bash", B('echo "today: $(date)"'), Q),
    (ECHO, "default", "Bash", B("echo '$(date)'"), A),
    ({"allow": ["Bash"]}, "default", "Bash", B("echo $(date)"), Q),
    ({"allow": ["Bash(diff:*)"]}, "default", "Bash", B("diff <(ls a) <(ls b)"), Q),
    (ECHO_NO_RM, "default", "Bash", B("echo $(rm -rf x)"), D),
    (ECHO_NO_RM, "default", "Bash", B("echo `rm x`"), D),
    (ECHO_NO_RM, "default", "Bash", B('echo "$(echo $(rm x))"'), D),
    (ECHO, "bypassPermissions", "Bash", B("echo $(date)"), A),
    (ECHO, "dontAsk", "Bash", B("echo $(date)"), D),
    ({"allow": ["Bash(cat:*)"]}, "default", "Bash", B("cat <<EOF > notes.txt\nhello; rm x\nEOF"), A),
    ({"allow": ["Bash(cat:*)"]}, "default", "Bash", B("cat <<EOF\n$(whoami)\nEOF"), Q),
    ({"allow": ["Bash(cat:*)"]}, "default", "Bash", B("cat <<'EOF'\n$(whoami)\nEOF"), A),
    # --- Bash: output redirection
    (ECHO, "default", "Bash", B("echo hi > /tmp/mainsail-outside.txt"), Q),
    (ECHO, "default", "Bash", B("echo hi &> ../x.txt"), Q),
    (ECHO, "default", "Bash", B("echo hi 2> /etc/x"), Q),
    (ECHO, "default", "Bash", B("echo hi >$HOME/x"), Q),
    (ECHO, "default", "Bash", B("echo hi > out.txt"), A),
    (ECHO, "default", "Bash", B("echo hi >> {ws}/logs/log.txt"), A),
    (ECHO, "default", "Bash", B("echo hi 2>&1"), A),
    (ECHO, "default", "Bash", B("echo hi > /dev/null 2>&1"), A),
    (ECHO, "default", "Bash", B("echo hi > .git/config"), Q),
    ({"allow": ["Bash(cd:*)", "Bash(echo:*)"]}, "default", "Bash", B("cd /tmp && echo x > out.txt"), Q),
    ({}, "default", "Bash", B("echo hi > out.txt"), Q),
    ({}, "bypassPermissions", "Bash", B("echo hi > /etc/x"), A),
    ({"deny": ["Bash(echo:*)"]}, "default", "Bash", B("echo hi > /etc/x"), D),
    # --- Read / Edit paths
    ({"deny": ["Read(//etc/**)"]}, "default", "Read", F("/etc/passwd"), D),
    ({"deny": ["Read(~/.ssh/**)"]}, "default", "Read", F("{home}/.ssh/id_rsa"), D),
    ({"deny": ["Read(~/.ssh/**)"]}, "default", "Read", F("{ws}/.ssh/id_rsa"), A),
    ({"deny": ["Read(/secrets/**)"]}, "default", "Read", F("secrets/a/b.txt"), D),
    ({"deny": ["Read(/secrets/**)"]}, "default", "Read", F("other/secrets/x"), A),
    ({"deny": ["Read(./config.json)"]}, "default", "Read", F("config.json"), D),
    ({"deny": ["Read(./config.json)"]}, "default", "Read", F("sub/config.json"), A),
    ({"deny": ["Read(.env)"]}, "default", "Read", F(".env"), D),
    ({"deny": ["Read(.env)"]}, "default", "Read", F("{ws}/sub/dir/.env"), D),
    ({"deny": ["Read(.env)"]}, "default", "Read", F(".env.example"), A),
    ({"deny": ["Read(*.pem)"]}, "default", "Read", F("certs/key.pem"), D),
    ({"deny": ["Read(src/*.py)"]}, "default", "Read", F("src/a.py"), D),
    ({"deny": ["Read(src/*.py)"]}, "default", "Read", F("src/sub/a.py"), A),
    ({"deny": ["Read(src/**)"]}, "default", "Read", F("src/sub/a.py"), D),
    ({"deny": ["Read(**/*.env)"]}, "default", "Read", F("a/b/c/prod.env"), D),
    ({"deny": ["Read(*)"]}, "default", "Read", F("anything.txt"), D),
    ({"allow": ["Edit(src/**)"]}, "default", "Edit", F("src/a.py"), A),
    ({"allow": ["Edit(src/**)"]}, "default", "Edit", F("lib/a.py"), Q),
    ({"allow": ["Edit(src/**)"]}, "default", "Write", F("src/new.py"), A),
    ({"allow": ["Write(src/**)"]}, "default", "Write", F("src/new.py"), A),
    ({"allow": ["Write(src/**)"]}, "default", "Edit", F("src/a.py"), Q),
    ({"allow": ["Edit"]}, "default", "Write", F("a.txt"), A),
    ({"allow": ["Edit(*)"]}, "default", "Edit", F("a.txt"), A),
    ({"deny": ["Edit(//etc/**)"]}, "bypassPermissions", "Write", F("/etc/hosts"), D),
    ({"deny": ["Read(secrets/**)"]}, "default", "Grep", {"pattern": "key", "path": "secrets"}, D),
    ({"deny": ["Read(secrets/**)"]}, "default", "Glob", {"pattern": "*", "path": "secrets/sub"}, D),
    ({"deny": ["Read(secrets/**)"]}, "default", "Grep", {"pattern": "key"}, A),
    ({"deny": ["Read"]}, "default", "Glob", {"pattern": "*.py"}, D),
    ({"allow": ["Bash(*)"]}, "default", "Bash", B("anything at all"), A),
    # --- precedence: deny > ask > allow
    ({"allow": ["Bash(git:*)"], "ask": ["Bash(git push:*)"]}, "default", "Bash", B("git push"), Q),
    ({"allow": ["Bash(git:*)"], "ask": ["Bash(git push:*)"]}, "default", "Bash", B("git status"), A),
    ({"allow": ["Bash(git push:*)"], "deny": ["Bash(git push:*)"]}, "default", "Bash", B("git push"), D),
    ({"ask": ["Read(.env)"], "deny": ["Read(.env)"]}, "default", "Read", F(".env"), D),
    ({"allow": ["Read"], "ask": ["Read(.env)"]}, "default", "Read", F(".env"), Q),
    # --- mode: default
    ({}, "default", "Read", F("a.py"), A),
    ({}, "default", "Glob", {"pattern": "**/*.py"}, A),
    ({}, "default", "Edit", F("a.py"), Q),
    ({}, "default", "Bash", B("ls"), A),
    ({}, "default", "Bash", B("touch x"), Q),
    # --- mode: acceptEdits
    ({}, "acceptEdits", "Edit", F("a.py"), A),
    ({}, "acceptEdits", "Write", F("new/b.py"), A),
    ({}, "acceptEdits", "Write", F("/etc/hosts"), Q),
    ({}, "acceptEdits", "Bash", B("mkdir -p build/out"), A),
    ({}, "acceptEdits", "Bash", B("touch a.txt && mv a.txt b.txt"), A),
    ({}, "acceptEdits", "Bash", B("cp -r src backup"), A),
    ({}, "acceptEdits", "Bash", B("mkdir /tmp/mainsail-outside"), Q),
    ({}, "acceptEdits", "Bash", B("cp a ../b"), Q),
    ({}, "acceptEdits", "Bash", B("cp --target-directory=/etc a"), Q),
    ({}, "acceptEdits", "Bash", B("mkdir .git/hooks"), Q),
    ({}, "acceptEdits", "Bash", B("npm test"), Q),
    ({}, "acceptEdits", "Bash", B("mkdir x && npm test"), Q),
    (NPM, "acceptEdits", "Bash", B("mkdir -p out && npm test"), A),
    # --- mode: plan
    ({}, "plan", "Read", F("a.py"), A),
    ({}, "plan", "Grep", {"pattern": "TODO"}, A),
    ({}, "plan", "Edit", F("a.py"), D),
    ({}, "plan", "Bash", B("ls"), A),
    ({}, "plan", "Bash", B("touch x"), D),
    ({"allow": ["Bash(ls:*)"]}, "plan", "Bash", B("ls -la"), A),
    # --- mode: dontAsk
    ({}, "dontAsk", "Read", F("a.py"), A),
    ({}, "dontAsk", "Edit", F("a.py"), D),
    ({}, "dontAsk", "Bash", B("ls"), A),
    ({}, "dontAsk", "Bash", B("touch x"), D),
    ({"allow": ["Bash(ls:*)"]}, "dontAsk", "Bash", B("ls"), A),
    ({"ask": ["Bash(ls:*)"], "allow": ["Bash"]}, "dontAsk", "Bash", B("ls"), D),
    # --- mode: bypassPermissions
    ({}, "bypassPermissions", "Edit", F("a.py"), A),
    ({}, "bypassPermissions", "Bash", B("rm -rf build"), A),
    ({"ask": ["Bash(rm:*)"]}, "bypassPermissions", "Bash", B("rm x"), A),
    (NO_RM, "bypassPermissions", "Bash", B("rm x"), D),
    # --- protected paths
    ({}, "acceptEdits", "Edit", F(".git/config"), Q),
    ({}, "acceptEdits", "Write", F(".claude/settings.json"), Q),
    ({}, "acceptEdits", "Write", F(".mainsail/settings.local.json"), Q),
    ({}, "acceptEdits", "Edit", F("vendor/lib/.git/HEAD"), Q),
    ({}, "acceptEdits", "Write", F(".github/workflows/ci.yml"), A),
    ({"allow": ["Edit"]}, "default", "Write", F(".mainsail/settings.json"), Q),
    ({"allow": ["Edit"]}, "default", "Write", F("{home}/.claude/settings.json"), Q),
    ({"allow": ["Edit"]}, "default", "Write", F("{home}/notes.txt"), A),
    ({"allow": ["Edit"]}, "dontAsk", "Write", F(".claude/settings.json"), D),
    ({}, "bypassPermissions", "Edit", F(".git/config"), A),
    ({"deny": ["Edit(.git/**)"]}, "bypassPermissions", "Edit", F(".git/config"), D),
    # --- rules for tools Mainsail does not have parse and never match ours
    ({"deny": ["WebFetch", "mcp__github__create_issue", "WebFetch(domain:example.com)"]},
     "bypassPermissions", "Bash", B("curl example.com"), A),
    ({"allow": ["mcp__github__create_issue", "WebFetch(domain:example.com)"]}, "default", "Edit", F("a"), Q),
    ({"deny": ["mcp__srv__tool"]}, "bypassPermissions", "mcp__srv__tool", {}, D),
]


def ruleset(rules: dict, source: str = "/x/.mainsail/settings.json") -> RuleSet:
    rs = RuleSet()
    for kind, texts in rules.items():
        for text in texts:
            rs.add(kind, text, source)
    return rs


def fill(value, ws: str, home: str):
    if isinstance(value, str):
        return value.replace("{ws}", ws).replace("{home}", home)
    return {k: fill(v, ws, home) for k, v in value.items()}


def run(rules: dict, mode: str, tool: str, tool_input: dict, dirs):
    ws, home = dirs
    return evaluate(tool, fill(tool_input, ws, home), mode=PermissionMode(mode), rules=ruleset(rules),
                    workspace=ws, home=home, read_only=READ_ONLY.get(tool, False))


def _id(case) -> str:
    rules, mode, tool, tool_input, expected = case
    arg = tool_input.get("command") or tool_input.get("file_path") or tool_input.get("path") or ""
    return f"{expected.value}-{mode}-{tool}({arg})-{','.join(sum(rules.values(), []))}"


def test_the_table_is_big_enough():
    assert len(CASES) >= 70


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_decision_table(case, dirs):
    rules, mode, tool, tool_input, expected = case
    result = run(rules, mode, tool, tool_input, dirs)
    assert result.decision is expected, result


# =========================================================================== messages and sources


def test_a_deny_rule_names_the_rule_and_its_source_and_tells_the_model_what_to_do(dirs):
    r = run({"deny": ["Bash(rm:*)"]}, "default", "Bash", B("rm -rf build"), dirs)
    assert r.reason.startswith("Permission to use Bash was denied")
    assert "Bash(rm:*)" in r.reason and "/x/.mainsail/settings.json" in r.reason
    assert "Do not retry" in r.reason and "continue without it" in r.reason
    assert r.source == "rule Bash(rm:*) from /x/.mainsail/settings.json"
    assert r.display == "denied by rule Bash(rm:*)" and r.rule == "Bash(rm:*)"


def test_a_denied_part_of_a_compound_command_is_named(dirs):
    r = run(ECHO_NO_RM, "default", "Bash", B("echo hi && rm -rf build"), dirs)
    assert "`rm -rf build` matches the deny rule Bash(rm:*)" in r.reason


def test_an_allow_rule_is_the_source_and_the_rule(dirs):
    r = run(NPM, "default", "Bash", B("npm test"), dirs)
    assert (r.rule, r.source) == ("Bash(npm test:*)", "rule Bash(npm test:*) from /x/.mainsail/settings.json")


def test_mode_asks_name_the_call_and_the_mode(dirs):
    r = run({}, "default", "Bash", B("npm test"), dirs)
    assert r.reason == "Bash(npm test) needs approval in default mode"
    assert r.source == "mode default" and r.rule is None and "\n" not in r.display


def test_an_ask_rule_is_named_with_its_source(dirs):
    r = run({"ask": ["Bash(git push:*)"]}, "default", "Bash", B("git push origin"), dirs)
    assert r.reason == "matches ask rule Bash(git push:*) (from /x/.mainsail/settings.json)"
    assert r.rule == "Bash(git push:*)"


def test_substitution_and_redirection_say_why_they_ask(dirs):
    r = run(ECHO, "default", "Bash", B("echo $(id)"), dirs)
    assert r.reason == "the command uses command substitution `$(id)`, which is never approved automatically"
    r = run(ECHO, "default", "Bash", B("echo x > /etc/motd"), dirs)
    assert r.reason == "`echo x` needs approval: /etc/motd is outside the workspace"


def test_plan_mode_tells_the_model_to_present_a_plan(dirs):
    r = run({}, "plan", "Write", F("a.py"), dirs)
    assert r.reason.startswith("Permission to use Write was denied: the session is in plan mode")
    assert "read-only" in r.reason and "present your plan" in r.reason
    assert r.source == "mode plan"


def test_dont_ask_says_the_session_does_not_ask_and_why_it_would_have(dirs):
    r = run({"ask": ["Bash(git push:*)"]}, "dontAsk", "Bash", B("git push"), dirs)
    assert r.reason.startswith("Permission to use Bash was denied: this session does not ask")
    assert "only pre-approved tools run" in r.reason and "Bash(git push:*)" in r.reason
    assert r.source.startswith("mode dontAsk")


def test_protected_paths_say_so(dirs):
    r = run({"allow": ["Edit"]}, "acceptEdits", "Edit", F(".git/config"), dirs)
    assert r.decision is Q and ".git/config" in r.reason and "protected" in r.reason


def test_bypass_allows_naming_the_mode(dirs):
    r = run({}, "bypassPermissions", "Bash", B("rm -rf x"), dirs)
    assert r.source == "mode bypassPermissions" and r.rule is None


def test_a_rule_that_does_not_parse_never_matches(dirs):
    assert run({"allow": ["Bash(npm"]}, "default", "Bash", B("npm test"), dirs).decision is Q


def test_mode_may_be_given_as_a_string(dirs):
    ws, home = dirs
    r = evaluate("Edit", F("a.py"), mode="acceptEdits", rules=RuleSet(), workspace=ws, home=home, read_only=False)
    assert r.decision is A


def test_a_symlink_into_a_denied_directory_is_matched_resolved(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / "secrets").mkdir(parents=True)
    home.mkdir()
    (ws / "innocent").symlink_to(ws / "secrets")
    r = evaluate("Read", F("innocent/key.txt"), mode=PermissionMode.DEFAULT,
                 rules=ruleset({"deny": ["Read(secrets/**)"]}), workspace=str(ws), home=str(home), read_only=True)
    assert r.decision is D


# =========================================================================== parse_rule


@pytest.mark.parametrize("text,tool,spec", [
    ("Bash", "Bash", None),
    ("Bash(*)", "Bash", None),
    ("Bash(npm test:*)", "Bash", "npm test:*"),
    ("  Read(./.env)  ", "Read", "./.env"),
    ("Bash(echo (x))", "Bash", "echo (x)"),
    ("mcp__github__create_issue", "mcp__github__create_issue", None),
    ("WebFetch(domain:example.com)", "WebFetch", "domain:example.com"),
    ("my-tool", "my-tool", None),
])
def test_parse_rule(text, tool, spec):
    rule = parse_rule(text)
    assert (rule.tool, rule.specifier, rule.raw) == (tool, spec, text.strip())


def test_tool_star_equals_tool():
    assert parse_rule("Read(*)").specifier is parse_rule("Read").specifier is None


@pytest.mark.parametrize("text,message", [
    ("", "Invalid permission rule '': the rule is empty; write a tool name such as Read, or Tool(specifier) "
         "such as Bash(npm test:*)"),
    ("   ", "the rule is empty"),
    ("Bash()", "Invalid permission rule 'Bash()': empty specifier '()'; write Bash alone (or Bash(*)) to match "
               "every call"),
    ("Bash(npm", "Invalid permission rule 'Bash(npm': unbalanced parentheses: '(' is never closed; write "
                 "Tool(specifier) with a closing ')'"),
    ("Bash)", "Invalid permission rule 'Bash)': unbalanced parentheses: ')' without a matching '('"),
    ("Bash(npm))", "Invalid permission rule 'Bash(npm))': unbalanced parentheses: a ')' has no matching '('"),
    ("Bash(echo (x)", "Invalid permission rule 'Bash(echo (x)': unbalanced parentheses: a '(' inside the "
                      "specifier is never closed"),
    ("Bash(ls) now", "Invalid permission rule 'Bash(ls) now': unexpected text ' now' after the closing ')'; "
                     "a rule must end with ')'"),
    ("(ls)", "Invalid permission rule '(ls)': missing tool name before '('; write e.g. Bash(npm test:*)"),
    ("Ba sh", "Invalid permission rule 'Ba sh': invalid tool name 'Ba sh': tool names contain only letters, "
              "digits, '_' and '-'"),
    ("Bash.exe(ls)", "invalid tool name 'Bash.exe'"),
])
def test_parse_rule_errors(text, message):
    with pytest.raises(RuleSyntaxError) as info:
        parse_rule(text)
    assert message in str(info.value)
    assert info.value.rule == text.strip() or not text.strip()


# =========================================================================== always_rules


@pytest.mark.parametrize("command,rules,other", [
    ("npm test -- -x", ["Bash(npm test:*)"], "npm install"),
    ("git diff HEAD", ["Bash(git diff:*)"], "git push"),
    ("ls -la", ["Bash(ls:*)"], "lsof"),
    ("python3 calc.py", ["Bash(python3 calc.py)"], "python3 evil.py"),
    ("timeout 30 npm test", ["Bash(npm test:*)"], "timeout 30 npm publish"),
    ("CI=1 cargo build", ["Bash(cargo build:*)"], "cargo clean"),
    ("FOO=1 cargo build", ["Bash(FOO=1 cargo build)"], "cargo build"),
    ("sort -o out.txt a.txt", ["Bash(sort -o out.txt a.txt)"], "sort -S 1 --compress-program=sh"),
    ("make build", ["Bash(make build)"], "make build -f /tmp/x.mk"),
    ("npm test && git diff HEAD | grep x", ["Bash(npm test:*)", "Bash(git diff:*)", "Bash(grep x:*)"],
     "npm test && git push"),
    ('echo "a && b"', ['Bash(echo "a && b")'], "touch c"),
    ("rm -rf build", ["Bash(rm -rf build)"], "rm -rf /"),
    ("cat notes.txt", ["Bash(cat notes.txt)"], "cat ../secret.txt"),
    ("npm run test:unit", ["Bash(npm run:*)"], "npm install"),
    ("tar -tf a.tar", ["Bash(tar -tf a.tar)"], "tar -cf x.tar --checkpoint=1 --checkpoint-action=exec=x a"),
])
def test_always_rules_match_the_call_and_not_another_prefix(command, rules, other, dirs):
    assert always_rules("Bash", B(command)) == rules
    allow = {"allow": rules}
    assert run(allow, "default", "Bash", B(command), dirs).decision is A
    assert run(allow, "default", "Bash", B(other), dirs).decision is Q


def test_no_always_rule_holds_a_star_it_would_be_a_wildcard():
    assert always_rules("Bash", B("find . -name '*.pyc' -delete")) == []
    assert always_rules("Bash", B("python3 -c \"print('*')\"")) == []
    assert always_rules("Bash", B("npm test && find . -name '*.tmp' -delete")) == []


def test_always_rules_for_other_tools(dirs):
    assert always_rules("Edit", F("a.py")) == ["Edit"]
    assert always_rules("Write", F("a.py")) == ["Edit"]
    assert always_rules("Glob", {"pattern": "*"}) == ["Glob"]
    assert run({"allow": always_rules("Write", F("x.py"))}, "default", "Write", F("y/z.py"), dirs).decision is A
    assert always_rules("Bash", B("echo 'unterminated")) == []


# =========================================================================== summary


def test_summary():
    assert summary("Bash", B("npm test\nnpm run lint")) == "npm test …"
    assert summary("Bash", B("x" * 300)) == "x" * 99 + "…"
    assert len(summary("Bash", B("y" * 300))) == 100
    assert summary("Read", F("/ws/a.py")) == "/ws/a.py"
    assert summary("Write", F("b.py")) == "b.py"
    assert summary("Grep", {"pattern": "TODO", "path": "src"}) == "TODO in src"
    assert summary("Glob", {"pattern": "**/*.py"}) == "**/*.py"
    assert summary("WebFetch", {"url": "https://example.com"}) == "fetch https://example.com"
    assert summary("Task", {"description": "d"}) == '{"description": "d"}'
    assert len(summary("Other", {"k": "v" * 500})) == 100
