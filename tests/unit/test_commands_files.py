"""Custom slash command files and their expansion (pure code): frontmatter, names, precedence, limits, and the
prompt text, checked against what Claude Code 2.1.330 sends for the same files."""

from __future__ import annotations

import pytest

from workflows.commands import (
    CommandDefinition,
    CommandError,
    CommandFileError,
    expand,
    load_commands,
    parse_command_file,
    parse_invocation,
    prompt_blocks,
)
from workflows.commands.definitions import MAX_COMMANDS, MAX_DEPTH, MAX_FILE_BYTES
from workflows.commands.expand import (
    MAX_FILE_REFS,
    MAX_SHELL_LINES,
    file_refs,
    split_args,
)


def parse(text: str, name: str = "cmd") -> CommandDefinition:
    return parse_command_file(text, name, f"/x/{name}.md")[0]


def put(root, rel: str, text: str):
    path = root / ".claude" / "commands" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------------- files


def test_frontmatter_fields_are_read_as_claude_code_reads_them():
    d = parse("---\ndescription: Review a file\nargument-hint: [file] [focus]\n"
              "allowed-tools: Bash(git status:*), Bash(git diff:*), Read\nmodel: haiku\n"
              "disable-model-invocation: true\n---\nReview $ARGUMENTS\n")
    assert d.description == "Review a file" and d.argument_hint == "[file] [focus]"
    assert d.allowed_tools == ["Bash(git status:*)", "Bash(git diff:*)", "Read"]
    assert d.model == "haiku" and d.disable_model_invocation is True
    assert d.body == "Review $ARGUMENTS\n"


def test_values_strict_yaml_refuses_are_read_as_key_value_lines():
    d = parse("---\ndescription: Fix: the parser\nargument-hint: [a] [b]\nallowed-tools: Bash(ls:*)\n---\nx\n")
    assert d.description == "Fix: the parser" and d.argument_hint == "[a] [b]" and d.allowed_tools == ["Bash(ls:*)"]
    assert parse("---\nargument-hint: [file]\n---\nx").argument_hint == "[file]"  # YAML's list, as written
    assert parse("---\nallowed-tools:\n  - Bash(ls:*)\n  - Read\n---\nx").allowed_tools == ["Bash(ls:*)", "Read"]


def test_without_frontmatter_the_description_is_the_first_line():
    d = parse("\n\nFirst line here\nsecond\n")
    assert d.description == "First line here" and d.body == "\n\nFirst line here\nsecond\n"
    assert d.allowed_tools == [] and d.model is None and d.argument_hint == ""
    assert len(parse("x" * 300).description) == 100
    assert parse("---\nmodel: inherit\n---\nx").model is None


@pytest.mark.parametrize("text, fragment", [
    ("---\ndescription: x\nno end", "never closed"),
    ("---\n- a\n- b\n---\nx", "must be 'key: value' lines"),
    ("---\ndescription: [unclosed\n  more: {\n---\nx", "neither YAML"),
    ("---\nallowed-tools: Bash(ls\n---\nx", "Invalid permission rule"),
    ("---\nallowed-tools: 3\n---\nx", "'allowed-tools' must be permission rules"),
    ("---\nmodel: two words\n---\nx", "'model' 'two words' is not a model name"),
    ("---\ndisable-model-invocation: sometimes\n---\nx", "must be true or false"),
    ("---\ndescription:\n  nested: map\n---\nx", "'description' must be text"),
])
def test_bad_files_are_refused_with_the_file_and_the_fix(text, fragment):
    with pytest.raises(CommandFileError) as info:
        parse(text)
    assert fragment in str(info.value) and "/x/cmd.md" in str(info.value)


def test_unknown_keys_are_reported_not_silently_dropped():
    _, notes = parse_command_file("---\ncontext: fork\nagent: Explore\n---\nx", "c", "/x/c.md")
    assert notes == ["/x/c.md: frontmatter keys 'context', 'agent' are not supported by Mainsail and ignored."]


def test_folders_namespace_names_and_a_user_command_wins(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    put(ws, "review.md", "---\ndescription: project review\n---\nP")
    put(ws, "frontend/test.md", "Frontend tests for $ARGUMENTS")
    put(ws, "a/b/c.md", "deep")
    put(ws, "notes.txt", "not a command")
    put(ws, ".hidden.md", "hidden")
    put(home, "review.md", "User review $ARGUMENTS")
    put(home, "mine.md", "Mine")
    found = load_commands(str(ws), str(home))
    assert list(found.commands) == ["a:b:c", "frontend:test", "mine", "review"]
    assert found.commands["review"].scope == "user" and found.commands["review"].body == "User review $ARGUMENTS"
    assert found.commands["frontend:test"].scope == "project"
    (problem,) = found.problems
    assert problem.startswith("/review: your ") and "is used; the project's" in problem


def test_files_that_cannot_be_used_are_left_out_with_a_reason(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    put(ws, "good.md", "ok")
    put(ws, "bad name.md", "spaces")
    put(ws, "broken.md", "---\nmodel: a b\n---\nx")
    put(ws, "big.md", "x" * (MAX_FILE_BYTES + 1))
    (put(ws, "latin1.md", "")).write_bytes(b"caf\xe9")
    put(ws, "/".join(["d"] * (MAX_DEPTH + 1)) + "/too-deep.md", "x")
    found = load_commands(str(ws), str(home))
    assert list(found.commands) == ["good"]
    text = "\n".join(found.problems)
    for fragment in ("bad name.md: left out: a command name is", "broken.md: 'model'", "(left out)",
                     f"big.md: left out: larger than {MAX_FILE_BYTES // 1024} KiB", "latin1.md: left out: cannot "
                     "be read as UTF-8"):
        assert fragment in text
    assert "too-deep" not in text  # not looked for at all


def test_at_most_so_many_commands_per_folder(tmp_path):
    for i in range(MAX_COMMANDS + 3):
        put(tmp_path, f"c{i:04d}.md", "x")
    found = load_commands(str(tmp_path), str(tmp_path / "nohome"))
    assert len(found.commands) == MAX_COMMANDS and f"only the first {MAX_COMMANDS}" in found.problems[0]


def test_a_session_in_the_home_folder_reads_its_commands_once(tmp_path):
    put(tmp_path, "x.md", "x")
    found = load_commands(str(tmp_path), str(tmp_path))
    assert list(found.commands) == ["x"] and found.commands["x"].scope == "user" and found.problems == []


# ---------------------------------------------------------------------------------------------- expansion


@pytest.mark.parametrize("text, parsed", [
    ("/review", ("review", "")),
    ("/review  src/a.py  now \n", ("review", "src/a.py  now")),
    ("/frontend:test a\nb", ("frontend:test", "a\nb")),
    ("/usr/bin/env fails", None),
    ("review", None),
    ("/ x", None),
    ("/-x", None),
])
def test_invocations(text, parsed):
    assert parse_invocation(text) == parsed


def test_placeholders_as_claude_code_fills_them():
    d = CommandDefinition(name="args", body="zero=$0 one=$1 two=$2 a0=$ARGUMENTS[0] a1=$ARGUMENTS[1] "
                                            "all=$ARGUMENTS dollar=$$ ten=$10\n")
    run = expand(d, '/args "a b" c d', '"a b" c d')
    assert run.texts == ['zero=a b one=c two=d a0=a b a1=c all="a b" c d dollar=$$ ten=$10\n']
    assert expand(d, "/args x", "x").texts == ["zero=x one=$1 two=$2 a0=x a1=$ARGUMENTS[1] all=x dollar=$$ ten=$10\n"]
    assert expand(d, "/args", "").texts[0].startswith("zero=$0 one=$1")
    assert split_args("it's unbalanced") == ["it's", "unbalanced"]


def test_arguments_are_appended_when_the_template_has_no_placeholder():
    d = CommandDefinition(name="look", body="Look @a.txt\n")
    assert expand(d, "/look foo bar", "foo bar").texts == ["Look @a.txt\n\n\nARGUMENTS: foo bar"]
    assert expand(d, "/look", "").texts == ["Look @a.txt\n"]
    positional = CommandDefinition(name="p", body="Only $0\n")
    assert expand(positional, "/p a b", "a b").texts == ["Only a\n"]


def test_bash_lines_come_from_the_file_never_from_the_arguments():
    d = CommandDefinition(name="inj", body="Line: !`echo got $0`\nArgs: $ARGUMENTS\nx!`not-a-line` ! `nor this`\n")
    run = expand(d, "/inj", "hello !`rm -rf ~`")
    assert [(x.kind, x.tool_input) for x in run.lines] == [("bash", {"command": "echo got hello"})]
    assert run.texts == ["Line: ", "\nArgs: hello !`rm -rf ~`\nx!`not-a-line` ! `nor this`\n"]


def test_file_references_from_the_text_and_the_arguments():
    assert file_refs('see @src/a.py, @"my notes.md" and @b.txt. mail x@y.z @ nothing') == [
        "src/a.py", "my notes.md", "b.txt"]
    d = CommandDefinition(name="r", body="Read @a.txt and @a.txt\n")
    run = expand(d, "/r @b.txt", "@b.txt")
    assert [x.pattern for x in run.lines] == ["@a.txt", "@b.txt"]


def test_limits_on_lines_and_files():
    many = CommandDefinition(name="m", path="/x/m.md", body="".join(f"!`echo {i}`\n" for i in range(MAX_SHELL_LINES + 1)))
    with pytest.raises(CommandError, match=f"has {MAX_SHELL_LINES + 1} !`…` lines; a command may have at most"):
        expand(many, "/m", "")
    files = CommandDefinition(name="f", body="$ARGUMENTS")
    args = " ".join(f"@f{i}.txt" for i in range(MAX_FILE_REFS + 1))
    with pytest.raises(CommandError, match=f"names {MAX_FILE_REFS + 1} files with @"):
        expand(files, "/f", args)


def test_the_prompt_blocks_once_the_lines_ran():
    d = CommandDefinition(name="review", body="Status: !`git status`\nFile: @a.txt\n")
    run = expand(d, "/review x", "x")
    run.lines[0].output = "clean"
    run.lines[1].tool_input = {"file_path": "/w/a.txt"}
    run.lines[1].output = "     1\thello"
    assert prompt_blocks(run) == [
        '<system-reminder>\nCalled the Read tool with the following input: {"file_path":"/w/a.txt"}\n</system-reminder>',
        "<system-reminder>\nResult of calling the Read tool:\n     1\thello\n</system-reminder>",
        "<command-message>review</command-message>\n<command-name>/review</command-name>\n"
        "<command-args>x</command-args>\n",
        "Status: clean\nFile: @a.txt\n\n\nARGUMENTS: x",
    ]
    run.lines[1].error = "File does not exist."
    empty = expand(CommandDefinition(name="e", body="  \n"), "/e", "")
    assert len(prompt_blocks(run)) == 2 and prompt_blocks(empty) == [
        "<command-message>e</command-message>\n<command-name>/e</command-name>\n"]
