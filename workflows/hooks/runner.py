"""Running command hooks: where the step runs, in the session's sandbox, with the workspace as cwd.

A command hook is started exactly like a Bash command (:func:`workflows.permissions.sandbox.prepare`
decides bwrap or not; :func:`workflows.tools.bash.run_process` runs it, kills its process group on
timeout or cancel), with Claude Code's JSON on stdin and ``CLAUDE_PROJECT_DIR`` set. The hooks of
one event run in parallel, as in Claude Code.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from workflows.exceptions import ToolError
from workflows.models import SessionRecord
from workflows.models.hook_outcome import HookOutcome, HookRun, interpret
from workflows.models.hooks import CommandHook, HookEvent
from workflows.permissions import sandbox
from workflows.permissions.bypass import effective_mode
from workflows.tools.bash import run_process, sandbox_data_dir

__all__ = ["hook_input", "run_command_hook", "run_event"]

OUTPUT_CAP = 1_000_000  # characters of a hook's stdout (and of its stderr) read


def hook_input(event: HookEvent, rec: SessionRecord, **fields: Any) -> dict[str, Any]:
    """Claude Code's stdin JSON for ``event``: the common fields, then the event's own.

    ``transcript_path`` is left out: a Mainsail transcript lives in Redis, not in a file
    (``mainsail export SID`` writes one).
    """
    return {"session_id": rec.id, "cwd": rec.workspace, "hook_event_name": event.value,
            "permission_mode": effective_mode(rec).value, **fields}


def run_event(event: HookEvent, rec: SessionRecord, payload: dict[str, Any], *, subject: str | None = None,
              cancel: threading.Event | None = None, answered: list[HookRun] | None = None) -> HookOutcome | None:
    """Run the session's command hooks of ``event`` that match ``subject``, and join ``answered`` (what
    the SDK client's callback hooks returned) to them; None when there is nothing to join."""
    hooks = [h for h in rec.hooks.for_event(event, subject) if isinstance(h, CommandHook)]
    if not hooks:
        return interpret(event, list(answered)) if answered else None
    data = json.dumps(payload).encode()
    cancel = cancel or threading.Event()
    if len(hooks) == 1:
        runs = [run_command_hook(hooks[0], data, rec, cancel)]
    else:
        with ThreadPoolExecutor(max_workers=min(len(hooks), 8), thread_name_prefix="hook") as pool:
            runs = list(pool.map(lambda h: run_command_hook(h, data, rec, cancel), hooks))
    return interpret(event, runs + list(answered or []))


def run_command_hook(hook: CommandHook, data: bytes, rec: SessionRecord, cancel: threading.Event) -> HookRun:
    """Run one command hook in the session's sandbox and say how it ended (it never raises)."""
    started = time.monotonic()
    try:
        # The worker's environment, scrubbed of secrets, whether the hook runs sandboxed or not
        # (sandbox off, unavailable, or the hook in excludedCommands): a hook is workspace code too.
        launch = sandbox.prepare(hook.command, workspace=rec.workspace, cwd=rec.workspace,
                                 home=rec.home or os.path.expanduser("~"), settings=rec.sandbox,
                                 data_dir=sandbox_data_dir(), environ=os.environ)
        # Set after the scrub, which drops every CLAUDE_* name of the worker's own environment.
        launch.env["CLAUDE_PROJECT_DIR"] = rec.workspace
        try:
            done = run_process(launch, cwd=rec.workspace, timeout=hook.timeout, cancel=cancel, cap=OUTPUT_CAP,
                               stdin=data, timeout_label=f"{hook.timeout:g}s")
        finally:
            launch.close()
    except (ToolError, OSError) as exc:
        return HookRun(command=hook.command, error=str(exc), duration_ms=_ms(started))
    out, err = done.out.snapshot()[0], done.err.snapshot()[0]
    if done.stopped:
        return HookRun(command=hook.command, stdout=out, stderr=err, error=done.stopped.replace("Command", "it", 1),
                       duration_ms=_ms(started))
    code = done.returncode
    return HookRun(command=hook.command, exit_code=128 - code if code is not None and code < 0 else code,
                   stdout=out, stderr=err, duration_ms=_ms(started))


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
