"""A result past its tool's limit, saved in the workspace (workflows/tools/saved.py), through the engine and
the step runner (fakeredis, inline steps): a note that says exactly what the file holds, and a clean error
result at once when the file cannot be written (a full disk), never a step left running to its lease."""

from __future__ import annotations

import os
import subprocess

import pytest

from demo.scripted import Script, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, scripted_model
from workflows.models import StepKind, StepStatus, UserEntry
from workflows.models.options import SessionOptions
from workflows.tools.base import ToolOutput
from workflows.tools.saved import save_large_result

BIG = 'python3 -c "print(\'x\' * 50000)"'


def run_bash(engine, ws, command):
    """A session that runs ``command`` with Bash, to its end; its tool result and its tool step."""
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={"command": command})]),
                                         Turn(text="done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (block,) = [e.message.blocks()[0] for e in engine.store.entries(rec.id)
                if isinstance(e, UserEntry) and e.origin == "tool_result"]
    steps = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.TOOL]
    return block, steps, engine.store.get_session(rec.id)


def test_a_result_under_the_save_cap_is_saved_whole_and_called_full(engine, ws):
    block, _, _ = run_bash(engine, ws, BIG)
    assert "The full output is saved at" in block.text
    (saved,) = (ws / ".mainsail" / "tool-results").glob("*.txt")
    assert saved.read_text() == "x" * 50000


def test_a_result_cut_at_the_save_cap_is_not_called_full(engine, ws, monkeypatch):
    monkeypatch.setattr("workflows.steps.tool.SAVED_RESULT_CAP", 40_000)
    block, _, _ = run_bash(engine, ws, BIG)
    assert "full output" not in block.text
    assert "exceeded the 40,000-character save limit: only its first 40,000 characters" in block.text
    (saved,) = (ws / ".mainsail" / "tool-results").glob("*.txt")
    text = saved.read_text()
    assert text.startswith("x" * 40_000) and text.endswith("[output truncated: 10001 more characters]")


def test_a_result_that_cannot_be_saved_is_an_error_result_at_once(engine, ws):
    """/dev/full answers every write with ENOSPC: the disk is full, for real, wherever the test runs."""
    folder = ws / ".mainsail" / "tool-results"
    folder.mkdir(parents=True)
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={"command": BIG})]),
                                         Turn(text="done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)  # the model step: the tool call's id is known now
    (call,) = engine.store.get_session(rec.id).tool_calls
    os.symlink("/dev/full", folder / f"{call.tool_use_id}.txt")
    inline.drain()
    (block,) = [e.message.blocks()[0] for e in engine.store.entries(rec.id)
                if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert block.is_error
    assert "could not be saved to" in block.text and "No space left on device" in block.text
    assert block.text.startswith("x" * 100)  # the preview is still there
    assert not (folder / f"{call.tool_use_id}.txt").exists()  # nothing half-written is left
    tool = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.TOOL]
    assert [s.status for s in tool] == [StepStatus.DONE]
    assert engine.store.get_session(rec.id).state is State.IDLE


@pytest.fixture
def full_disk(tmp_path):
    """A real 64 KiB tmpfs (mounting needs root; the test skips, saying so, where it cannot)."""
    where = tmp_path / "small"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_filesystem_makes_a_clean_error_result(engine, full_disk):
    ws = full_disk / "ws"
    ws.mkdir()
    block, steps, rec = run_bash(engine, ws, 'python3 -c "print(\'y\' * 200000)"')
    assert block.is_error and "No space left on device" in block.text and "could not be saved" in block.text
    assert [s.status for s in steps] == [StepStatus.DONE] and rec.state is State.IDLE
    assert not list((ws / ".mainsail" / "tool-results").glob("*.txt"))


def test_a_read_only_workspace_is_named_with_its_reason(tmp_path):
    """Any OSError on saving (here: the folder's place is a file) is the same clean error."""
    (tmp_path / ".mainsail").write_text("not a folder")
    out = save_large_result(str(tmp_path), "toolu_1", "Grep", ToolOutput(content="z" * 5000), 100)
    assert out.is_error and "could not be saved to" in out.content
    assert "Not a directory" in out.content or "File exists" in out.content
