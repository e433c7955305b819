"""An edit's approval shows its diff (workflows.edits.preview), made from the file as it is when the call
asks, never from a file the session may not read; and "always" is offered by one rule everywhere."""

from __future__ import annotations

import json

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, scripted_model
from tests.session_kw import create as create_session
from workflows.edits.preview import MAX_DIFF_LINES, preview
from workflows.exceptions import AlwaysNotOffered
from workflows.models import PermissionRequestEntry, RuleSet
from workflows.models.options import SessionSetup
from workflows.permissions import always_offered, answer_choices, prompt_text

EDIT = ToolUse(name="Edit", input={"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"})


def start(engine, ws, turns, **kw):
    rec = create_session(engine, str(ws), model=scripted_model(Script(turns=turns)), **kw)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    return rec.id, inline


def asked(engine, sid):
    return [e for e in engine.store.entries(sid) if isinstance(e, PermissionRequestEntry)]


def test_an_edit_request_carries_the_unified_diff_of_the_file_as_it_was_when_it_asked(engine, ws):
    sid, _ = start(engine, ws, [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
                                Turn(tool_uses=[EDIT]), Turn(text="done")])
    (entry,) = asked(engine, sid)
    calc = (ws / "calc.py").resolve()
    assert entry.diff.startswith(f"--- a{calc}\n+++ b{calc}\n@@ ")
    assert "\n-    return a - b\n+    return a + b" in entry.diff and entry.diff_note == ""
    (req,) = engine.store.get_session(sid).pending_requests()
    assert (req.diff, req.diff_note) == (entry.diff, entry.diff_note)  # the API's and the console's copy


def test_write_of_a_new_file_shows_its_head_and_an_overwrite_its_diff(engine, ws):
    rec = engine.create_session(str(ws))
    new = preview(rec, "Write", {"file_path": "new.txt", "content": "one\ntwo\n"})
    assert new.diff.splitlines()[:2] == ["--- /dev/null", f"+++ b{(ws / 'new.txt').resolve()}"]
    assert new.diff.endswith("+one\n+two")
    (ws / "old.txt").write_text("keep\ndrop\n")
    over = preview(rec, "Write", {"file_path": "old.txt", "content": "keep\nadd\n"})
    assert over.diff.endswith(" keep\n-drop\n+add")


def test_a_long_diff_is_cut_with_a_note(engine, ws):
    rec = engine.create_session(str(ws))
    shown = preview(rec, "Write", {"file_path": "big.txt", "content": "".join(f"{i}\n" for i in range(500))})
    assert len(shown.diff.splitlines()) == MAX_DIFF_LINES
    assert shown.note == f"diff cut: {503 - MAX_DIFF_LINES} more lines not shown (503 in all)"


def test_multiedit_and_notebookedit_show_what_they_would_change(engine, ws):
    rec = engine.create_session(str(ws))
    multi = preview(rec, "MultiEdit", {"file_path": "calc.py", "edits": [
        {"old_string": "a - b", "new_string": "a + b"}, {"old_string": "def add", "new_string": "def plus"}]})
    assert "-def add(a, b):" in multi.diff and "+def plus(a, b):" in multi.diff and "+    return a + b" in multi.diff
    nb = {"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": ["x = 1\n"], "outputs": [],
                     "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (ws / "n.ipynb").write_text(json.dumps(nb))
    cell = preview(rec, "NotebookEdit", {"notebook_path": "n.ipynb", "cell_id": "c1", "new_source": "x = 2\n"})
    assert "(cell c1)" in cell.diff and "-x = 1\n+x = 2" in cell.diff


def test_a_file_the_session_may_not_read_gets_no_diff_and_says_why(engine, ws):
    (ws / ".env").write_text("SECRET=hunter2\n")
    rules = RuleSet()
    rules.add("deny", "Read(./.env)", "test")
    rec = engine.create_session(str(ws), setup=SessionSetup(rules=rules))
    shown = preview(rec, "Edit", {"file_path": ".env", "old_string": "SECRET=hunter2", "new_string": "SECRET=x"})
    assert shown.diff == "" and "hunter2" not in shown.note
    assert shown.note.startswith("diff not shown: the session may not read") and "Read(./.env)" in shown.note


def test_an_edit_that_would_fail_or_reach_outside_says_so_instead_of_a_diff(engine, ws, tmp_path):
    rec = engine.create_session(str(ws))
    missing = preview(rec, "Edit", {"file_path": "calc.py", "old_string": "nothing like this", "new_string": "x"})
    assert missing.diff == "" and missing.note.startswith("diff not shown: String to replace not found")
    (tmp_path / "outside.txt").write_text("x\n")
    outside = preview(rec, "Write", {"file_path": str(tmp_path / "outside.txt"), "content": "y"})
    assert outside.diff == "" and "outside the session's workspace" in outside.note
    (ws / "esc.txt").write_text("plain\n")
    hostile = preview(rec, "Write", {"file_path": "esc.txt", "content": "\x1b[2Jgone\n"})
    assert "\x1b" not in hostile.diff and "+\\x1b[2Jgone" in hostile.diff  # a terminal shows it, never runs it


def test_always_is_offered_by_one_rule_and_an_always_answer_without_it_is_refused(engine, ws):
    command = {"command": "echo $(date)"}  # a substitution: no rule can cover it
    sid, _ = start(engine, ws, [Turn(tool_uses=[ToolUse(name="Bash", input=command)]), Turn(text="done")])
    (entry,) = asked(engine, sid)
    assert entry.always == [] and not always_offered(entry.always)
    assert answer_choices(entry.always) == "(y)es / (n)o"
    assert answer_choices(["Bash(ls:*)"]) == "(y)es / (n)o / (a)lways"
    assert "(a)lways is not offered" in prompt_text("Bash", command, [])
    with pytest.raises(AlwaysNotOffered, match="does not offer \"always\".*still pending"):
        engine.decide_request(sid, entry.request_id, True, always=True)
    (req,) = engine.store.get_session(sid).pending_requests()  # nothing was decided
    assert req.id == entry.request_id
    assert engine.decide_request(sid, entry.request_id, True) is not None


def apply(a: list[str], diff: str) -> list[str]:
    """``a`` with the hunks of unified ``diff`` applied (its context and removed lines checked)."""
    import re

    out, pos = [], 0
    for hunk in filter(None, re.split(r"^(?=@@ )", diff.split("\n", 2)[2], flags=re.M)):
        head, *body = hunk.rstrip("\n").split("\n")
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$", head)
        start = int(m[1]) - (1 if m[2] != "0" else 0)
        out, pos = out + a[pos:start], start
        for line in body:
            if line[0] in " -":
                assert a[pos] == line[1:], (a, diff)
                pos += 1
            if line[0] in " +":
                out.append(line[1:])
    return out + a[pos:]


def test_a_diff_applies_to_the_old_text_to_give_the_new_one_and_a_large_file_is_diffed_where_it_changed():
    import random

    from workflows.edits.preview import unified

    rng = random.Random(26)
    for _ in range(500):
        a = [rng.choice("abcde") for _ in range(rng.randint(1, 30))]
        b = list(a)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b) + 1)
            if rng.random() < 0.5 or not b:
                b.insert(i, rng.choice("xyzab"))
            else:
                del b[min(i, len(b) - 1)]
        if a != b:
            assert apply(a, unified("/f", "".join(x + "\n" for x in a), "".join(x + "\n" for x in b)).diff) == b
    big = [f"line {i}" for i in range(60_000)]
    changed = big[:30_000] + ["changed"] + big[30_001:]
    shown = unified("/f", "\n".join(big) + "\n", "\n".join(changed) + "\n")
    assert shown.diff.split("\n")[2:] == ["@@ -29998,7 +29998,7 @@", " line 29997", " line 29998", " line 29999",
                                          "-line 30000", "+changed", " line 30001", " line 30002", " line 30003"]
    rewritten = unified("/f", "\n".join(big) + "\n", "".join(f"new {i}\n" for i in range(60_000)))
    assert rewritten.diff.split("\n")[2] == "@@ -1,60000 +1,60000 @@" and rewritten.note.startswith("diff cut:")


def test_the_diff_of_a_latin1_crlf_file_shows_its_characters_as_the_edit_reads_them(engine, ws):
    """The preview decodes as Edit does (workflows.tools.text_file): no U+FFFD, CRLF lines added as CRLF."""
    rec = engine.create_session(str(ws))
    (ws / "fr.txt").write_bytes("été\r\nhiver\r\n".encode("latin-1"))
    shown = preview(rec, "Edit", {"file_path": "fr.txt", "old_string": "hiver", "new_string": "hiver\nprintemps"})
    assert "\ufffd" not in shown.diff and " été" in shown.diff
    assert shown.diff.endswith("\n hiver\n+printemps") and shown.note == ""
    (ws / "bin.dat").write_bytes(b"\0\1\2")
    refused = preview(rec, "Write", {"file_path": "bin.dat", "content": "x"})
    assert refused.diff == "" and "binary" in refused.note
