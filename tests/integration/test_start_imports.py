"""What a command loads at start: the commands a person types often (``--version``, ``--help``, ``sessions``,
``show``, ``pending``) load neither Celery nor the model SDK, and ``approve``/``send`` (which send a step to
the workers) not the model SDK (issue 29: start like a native tool). Checked on ``sys.modules`` of the real
command in a subprocess against a real Redis, never by timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: Run the command as the console script does, then write the names of the modules it loaded.
PROBE = """
import json, sys
out = sys.argv.pop(1)
from cli.main import main
try:
    main()
except SystemExit:
    pass
finally:
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
"""

NEVER_AT_START = ("celery", "kombu", "anthropic", "httpx", "rich", "workflows.engine", "fastapi", "mcp")


def loaded(args: list[str], env: dict, tmp_path) -> set[str]:
    out = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(out), *args], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return set(json.loads(out.read_text()))


@pytest.fixture
def env(redis_server, real_redis, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
    env.update(MAINSAIL_REDIS_URL=redis_server.url, MAINSAIL_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path))
    return env


def packages(modules: set[str], names: tuple[str, ...]) -> set[str]:
    return {name for name in names if name in modules}


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["sessions"], ["show", "0000"], ["pending"],
                                  ["sessions", "--help"]], ids=" ".join)
def test_reading_commands_load_no_celery_no_sdk_no_engine(args, env, tmp_path):
    modules = loaded(args, env, tmp_path)
    assert "cli.main" in modules and (args[0].startswith("-") or "redis" in modules)  # (the command did run)
    assert packages(modules, NEVER_AT_START) == set()


@pytest.mark.parametrize("args", [["approve", "0000"], ["send", "0000", "hi"]], ids=" ".join)
def test_verbs_that_dispatch_load_celery_but_not_the_model_sdk(args, env, tmp_path):
    modules = loaded(args, env, tmp_path)
    assert packages(modules, ("anthropic", "httpx", "rich", "fastapi", "mcp")) == set()
