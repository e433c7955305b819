"""``mainsail export`` / ``mainsail import`` end to end: a session run by real workers is
exported as Claude Code JSONL and imported back as a new, identical session."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.e2e.shared_worker import BUSY
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e

SCRIPT = Script(turns=[
    Turn(text="Let me read calc.py.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
    Turn(text="Fixing it.", tool_uses=[ToolUse(name="Edit", input={
        "file_path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"})]),
    Turn(text="Fixed: add() now adds."),
])


def no_traceback(out):
    assert "Traceback" not in out.stdout + out.stderr, out.stdout + out.stderr


def dumped(entries):
    out = []
    for e in entries:
        d = e.dump()
        d.pop("sessionId")
        out.append(d)
    return out


def test_export_then_import_through_the_cli(cluster, workspace, tmp_path):
    with FakeMessagesServer(SCRIPT) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        run = cluster.mainsail("run", "--permission-mode", "bypassPermissions", "Fix calc.py", cwd=workspace)
        assert run.returncode == 0, run.stderr
        sid = cluster.session_id()
        # The run's answer does not wait for its title and memory steps (the worker's, after `run` left): the
        # transcript is whole once they are done.
        wait_for(lambda: not any(s.status in BUSY for s in cluster.store.steps(sid)), 60, 0.1,
                 "the session's title and memory steps")
    original = cluster.store.entries(sid)

    out_file = tmp_path / "session.jsonl"
    to_stdout = cluster.mainsail("export", sid[:8], cwd=workspace, background=True)
    exp = cluster.mainsail("export", sid[:8], "-o", str(out_file), cwd=workspace)
    assert exp.returncode == 0, exp.stderr
    no_traceback(exp)
    lines = out_file.read_text().splitlines()
    assert len(lines) == len(original)
    for line in lines:
        obj = json.loads(line)
        assert obj["sessionId"] == sid and obj["cwd"] == str(workspace.resolve())
        assert obj["type"] in ("user", "assistant", "system")
    assert [json.loads(ln)["uuid"] for ln in lines] == [e.uuid for e in original]

    stdout, stderr = to_stdout.communicate(timeout=120)
    assert to_stdout.returncode == 0, stderr
    assert stdout.splitlines() == lines

    imp = cluster.mainsail("import", str(out_file), cwd=tmp_path)
    assert imp.returncode == 0, imp.stderr
    no_traceback(imp)
    m = re.fullmatch(r'Imported (\d+) entries as session (\S+) \(resume it: mainsail run --resume (\S+) "\.\.\."\)\n',
                     imp.stdout)
    assert m, imp.stdout
    new_sid = m.group(2)
    assert int(m.group(1)) == len(original)
    assert m.group(3) == new_sid[:8] and new_sid != sid

    copy = cluster.store.entries(new_sid)
    assert all(e.session_id == new_sid for e in copy)
    assert dumped(copy) == dumped(original)
    rec = cluster.store.get_session(new_sid)
    assert rec.state.value == "idle" and rec.workspace == str(workspace.resolve())
    assert rec.last_uuid == original[-1].uuid
    assert cluster.store.entries(sid) == original


def test_transfer_errors_are_messages(cluster, workspace, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "summary", "summary": "x"}\n{"type": "user", \n')
    moved = tmp_path / "moved.jsonl"
    moved.write_text(json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
                                 "cwd": str(tmp_path / "gone"), "message": {"role": "user", "content": "hi"}})
                     + "\n")
    # Each CLI start costs seconds: run them side by side.
    procs = {
        "bad": cluster.mainsail("import", str(bad), cwd=tmp_path, background=True),
        "unknown": cluster.mainsail("export", "nosuchsession", cwd=tmp_path, background=True),
        "moved": cluster.mainsail("import", str(moved), cwd=tmp_path, background=True),
        "cwd": cluster.mainsail("import", str(moved), "--cwd", str(workspace), cwd=tmp_path, background=True),
    }
    outs = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        outs[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        no_traceback(outs[name])

    out = outs["bad"]
    assert out.returncode == 1
    assert "Line 2 is not valid JSON" in out.stderr and str(bad) in out.stderr
    out = outs["unknown"]
    assert out.returncode == 1
    assert "No session matches 'nosuchsession'" in out.stderr
    out = outs["moved"]
    assert out.returncode == 1
    assert str(tmp_path / "gone") in out.stderr and "--cwd" in out.stderr
    out = outs["cwd"]
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Imported 1 entries as session ")
    (imported,) = cluster.store.session_ids()
    assert cluster.store.get_session(imported).workspace == str(workspace.resolve())
