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
#: Loaded when first used, never at a command's start: the JSON Schema checker (``--json-schema`` only), the bash
#: grammar (the first Bash check), git (a session's opening).
LOADED_WHEN_USED = ("jsonschema", "tree_sitter", "tree_sitter_bash", "pygit2")
#: What no command needs before it talks to Redis: its client, the records, the settings.
BEFORE_REDIS = ("redis", "pydantic", "pydantic_settings", "workflows.models", "workflows.store", "workflows.settings")
#: What a command on the lean reading path (cli/lean_read.py) never loads.
LEAN_READ = ("redis", "pydantic", "pydantic_settings", "workflows.models", "workflows.settings",
             "workflows.store.redis_store")

#: Each command -> the modules it must not load (issue 29: start like a native tool). A new import that
#: pulls one of them in fails here, with the command's name.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "--version": NEVER_AT_START + LOADED_WHEN_USED + BEFORE_REDIS,
    "--help": NEVER_AT_START + LOADED_WHEN_USED + BEFORE_REDIS,
    # `sessions` reads on the lean path (cli/lean_read.py): not even redis-py, pydantic or the settings (the
    # store's keys and its standard-library client, workflows.store.wire, it does load).
    "sessions --help": NEVER_AT_START + LOADED_WHEN_USED + BEFORE_REDIS,
    "sessions": NEVER_AT_START + LOADED_WHEN_USED + LEAN_READ,
    "show SID --no-transcript": NEVER_AT_START + LOADED_WHEN_USED,
    "show 0000": NEVER_AT_START + LOADED_WHEN_USED,  # (no such session: the message, nothing more)
    "pending": NEVER_AT_START + LOADED_WHEN_USED + LEAN_READ,  # (nothing waits: said on the lean path)
    # Verbs that send a step to the workers load the engine, not Celery (a send is a message kombu would push,
    # tasks/message.py), the model SDK or the renderer.
    "approve 0000": ("celery", "kombu", "anthropic", "httpx", "rich", "fastapi", "mcp") + LOADED_WHEN_USED,
    "send SID hi": ("celery", "kombu", "anthropic", "httpx", "rich", "fastapi", "mcp") + LOADED_WHEN_USED,
}


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


def with_session(args: list[str], env: dict, tmp_path) -> list[str]:
    """``args`` with SID replaced by a real session's id (submitted with no worker: it waits in Redis)."""
    if "SID" not in args:
        return args
    made = subprocess.run([sys.executable, "-m", "cli", "submit", "hello"], env={**env, "MAINSAIL_EMBEDDED_WORKER": "false"},
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    return [made.stdout.strip()[:8] if a == "SID" else a for a in args]


def packages(modules: set[str], names: tuple[str, ...]) -> set[str]:
    return {name for name in names if name in modules}


@pytest.mark.parametrize("command", sorted(FORBIDDEN))
def test_each_command_loads_none_of_its_forbidden_modules(command, env, tmp_path):
    args = with_session(command.split(), env, tmp_path)
    modules = loaded(args, env, tmp_path)
    talked = "redis" in modules or "workflows.store.wire" in modules  # (redis-py, or the lean path's client)
    assert "cli.main" in modules and (args[0].startswith("-") or "--help" in args or talked)  # (it ran)
    assert packages(modules, FORBIDDEN[command]) == set()


def test_the_forbidden_lists_can_fail(env, tmp_path):
    """The probe sees what a command loads: ``send`` does load the engine and redis-py (so an empty list above
    is the command's, not a blind probe's)."""
    modules = loaded(with_session(["send", "SID", "hi"], env, tmp_path), env, tmp_path)
    assert packages(modules, ("workflows.engine", "redis")) == {"workflows.engine", "redis"}
