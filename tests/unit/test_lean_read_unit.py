"""The lean reading path's settings and records agree with the full path's (cli/lean_read.py)."""

from __future__ import annotations

import pytest

from cli import lean_read
from cli.session_table import FIELDS
from workflows.models import SessionRecord


def test_it_reads_what_the_table_shows_and_the_records_hold():
    assert set(lean_read.Row.__slots__) == set(FIELDS) | {"epoch"}
    assert set(FIELDS) <= set(SessionRecord.model_fields)


@pytest.fixture
def clean(monkeypatch, tmp_path):
    import os

    for k in list(os.environ):
        if k.upper().startswith("MAINSAIL_") or k == "XDG_DATA_HOME":
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))
    return monkeypatch


def test_the_redis_it_reads_is_the_full_paths(clean, tmp_path):
    from workflows.settings import load_settings

    clean.setenv("MAINSAIL_REDIS_URL", "redis://:pw@host:7000/3")
    assert lean_read.redis_url() == ("redis://:pw@host:7000/3", None) and load_settings().redis_url == \
        "redis://:pw@host:7000/3"
    clean.delenv("MAINSAIL_REDIS_URL")
    with pytest.raises(lean_read.Fallback):  # (no embedded server's URL either)
        lean_read.redis_url()
    clean.setenv("MAINSAIL_LOCAL_REDIS_URL", "redis://127.0.0.1:6379/0")
    with pytest.raises(lean_read.Fallback):  # (the full path probes it, then falls back to the embedded one)
        lean_read.redis_url()
    clean.delenv("MAINSAIL_LOCAL_REDIS_URL")
    for data in (None, tmp_path / "d1", "rel/d2"):
        if data is None:
            clean.delenv("MAINSAIL_DATA_DIR", raising=False)
        else:
            clean.setenv("MAINSAIL_DATA_DIR", str(data))
        where = load_settings().data_dir / "redis"  # (the full path's: settings.data_dir / "redis" / "url")
        (tmp_path / where if not where.is_absolute() else where).mkdir(parents=True, exist_ok=True)
        clean.chdir(tmp_path)
        (where / "url").write_text("redis://:secret@127.0.0.1:6390/0\n")
        url, say = lean_read.redis_url()
        assert url == "redis://:secret@127.0.0.1:6390/0" and f"(data in {where})" in say and "secret" not in say


@pytest.mark.parametrize("env", [{"MAINSAIL_SERVER": "https://team:8750"}, {"MAINSAIL_REDIS_CA_FILE": "/ca.pem"},
                                 {"mainsail_redis_url": "redis://h/0"}, {"MAINSAIL_LEAN_READ": "0"}])
def test_it_leaves_what_it_cannot_be_sure_of(clean, env):
    clean.setenv("MAINSAIL_REDIS_URL", "redis://127.0.0.1:6379/0")
    for k, v in env.items():
        clean.setenv(k, v)
    with pytest.raises(lean_read.Fallback):
        lean_read.redis_url()


def test_a_record_of_another_shape_is_left_to_the_full_path():
    data = SessionRecord(id="s", workspace="/w", model="m").model_dump(mode="json")
    assert lean_read.Row(data).state.value == "idle"
    for broken in ({k: v for k, v in data.items() if k != "turns"}, {**data, "state": "dreaming"}):
        with pytest.raises(lean_read.Fallback):
            lean_read.Row(broken)


def test_the_table_module_loads_no_records():
    import subprocess
    import sys

    probe = ("import sys, cli.session_table, cli.lean_read, workflows.store.wire\n"
             "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'redis', 'workflows.models'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_steps_finished_and_background_are_the_records():
    from workflows.models import StepKind, StepRecord, StepStatus

    for kind in StepKind:
        for status in StepStatus:
            for event in (None, "Notification", "SessionEnd", "PreToolUse", "Stop"):
                rec = StepRecord(id="st", session_id="s", kind=kind, epoch=1, status=status, event=event, queue="q")
                view = lean_read.Step(rec.model_dump(mode="json"))
                assert (view.finished, view.background) == (rec.finished, rec.background), (kind, status, event)
