"""The installed ``mainsail doctor``: a real worker process is listed with its queues; on
a bare machine it starts nothing; a broken MAINSAIL_REDIS_URL is a ✗ and exit code 1."""

from __future__ import annotations

import pytest

from tests.conftest import free_port
from tests.e2e.test_cli import bare_env, mainsail, no_traceback  # noqa: F401 - bare_env is a fixture

pytestmark = pytest.mark.e2e


def test_doctor_lists_a_running_worker_and_its_queues(cluster, tmp_path):
    proc = cluster.start_worker("-Q", "model,tools,memory")
    out = cluster.mainsail("doctor", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"✓ Workers      1 registered: mainsail-{proc.pid}@" in out.stdout
    assert "(model,tools,memory)" in out.stdout
    assert "✓ API key      ANTHROPIC_API_KEY is set; workers elsewhere need their own" in out.stdout
    no_traceback(out)


def test_doctor_on_a_bare_machine_starts_nothing(bare_env, tmp_path):
    out = mainsail(dict(bare_env, ANTHROPIC_API_KEY="sk-ant-xxxxxxxx-abcd"), "doctor")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "! Redis        nothing answers at redis://127.0.0.1:" in out.stdout
    assert "(…abcd)" in out.stdout and "xxxxxxxx" not in out.stdout
    assert not (tmp_path / "data" / "redis").exists()
    no_traceback(out)


def test_doctor_fails_on_an_unreachable_redis_url(bare_env):
    url = f"redis://ops:hunter2@127.0.0.1:{free_port()}/0"
    out = mainsail(dict(bare_env, MAINSAIL_REDIS_URL=url, ANTHROPIC_API_KEY="k"), "doctor")
    assert out.returncode == 1
    assert "✗ Redis        Could not connect to Redis at redis://ops:***@127.0.0.1:" in out.stdout
    assert "hunter2" not in out.stdout + out.stderr
    no_traceback(out)
