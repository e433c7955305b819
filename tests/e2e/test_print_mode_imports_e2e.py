"""What ``mainsail -p`` loads while a worker is already running (issue 29: start like a native tool): the model
calls are the worker's, so the command loads neither the model SDK nor its HTTP client, nor Celery, nor the transcript
renderer (rich: -p prints no transcript), nor anything a first use loads later (the JSON Schema checker, the
bash grammar, libgit2 outside a repository). Checked on ``sys.modules`` of the real command, never by timing (bench/first_request.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.e2e.conftest import wait_for
from tests.integration.test_start_imports import PROBE, packages

#: (pygit2: the workspace here is no repository, and libgit2 loads only where there is one: workflows/git/locate.py.)
#: (celery, kombu: the prompt's step is sent as the message kombu would push, tasks/message.py.)
FORBIDDEN = ("anthropic", "httpx", "rich", "cli.render", "fastapi", "mcp", "jsonschema", "tree_sitter", "tree_sitter_bash",
             "pygit2", "celery", "kombu", "yaml")


def test_print_mode_with_a_worker_running_loads_no_model_sdk(cluster, tmp_path):
    cluster.start_worker()
    wait_for(lambda: {"model", "tools", "memory"} <= cluster.store.live_queues(), 30, what="the worker's queues")
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(out), "-p", "hi", "--model", "scripted:demo",
                           "--output-format", "json"], env=cluster.env, cwd=ws, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 or "Traceback" not in proc.stderr, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["type"] == "result" and not result["is_error"], result
    modules = set(json.loads(out.read_text()))
    assert "tasks.message" in modules  # (the probe sees what the command loaded: it sent the prompt's step)
    assert packages(modules, FORBIDDEN) == set()
