"""Bash: run a shell command in the session's working directory, in its own process group.

With the session's sandbox on (``ctx.sandbox``, see :mod:`workflows.permissions.sandbox`) the
command runs inside bubblewrap; either way it gets a scrubbed environment. Killing works the
same through bwrap: the group's leader is then bwrap itself, and when it dies the kernel kills
the sandbox's whole PID namespace (``--die-with-parent``), background children included.
"""

from __future__ import annotations

import codecs
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO

from pydantic import Field

from workflows.exceptions import ConfigurationError, ToolError
from workflows.permissions import sandbox
from workflows.shells.groups import guard_argv, kill_process_group
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register

MAX_TIMEOUT_MS = 600_000
POLL_SECONDS = 0.05
# After the shell exits, how long to wait for a background child still holding the pipes.
DRAIN_SECONDS = 1.0
NO_OUTPUT = "(Bash completed with no output)"
# Said to the model when a sandboxed command failed the way the sandbox makes commands fail.
SANDBOX_HINT = (
    "\n(The command ran in the OS sandbox: only the workspace and /tmp are writable, .git/ (all of it, unless "
    "the command is a git command an allow rule or the user approved; .git/hooks and .git/config always), "
    ".claude/ and .mainsail/ are read-only, and there is no network unless the user's sandbox settings allow "
    "it. Do not try to get around it; if the task needs more, tell the user which sandbox setting or allow rule "
    "(such as Bash(git commit:*)) would allow it.)"
)
SANDBOX_SYMPTOMS = ("Read-only file system", "Could not resolve host", "Temporary failure in name resolution",
                    "Network is unreachable", "Name or service not known", "Mainsail sandbox")


def _blocked(output: str) -> bool:
    return any(symptom in output for symptom in SANDBOX_SYMPTOMS)


def sandbox_data_dir() -> str | None:
    """Mainsail's data dir (the embedded Redis's files): hidden from sandboxed commands."""
    from workflows.settings import get_settings

    try:
        return str(get_settings().data_dir)
    except ConfigurationError:
        return None


class _Collector:
    """Reads one pipe to its end in a thread; keeps the first ``cap`` characters, counts the rest."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0
        self._stream = stream
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _add(self, text: str) -> None:
        with self._lock:
            room = self.cap - self.kept
            if room > 0:
                self.parts.append(text[:room])
                self.kept += min(room, len(text))
            self.dropped += max(0, len(text) - max(room, 0))

    def _run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while True:
                chunk = self._stream.read1(65536)  # type: ignore[attr-defined]
                if not chunk:
                    break
                self._add(decoder.decode(chunk))
        except (OSError, ValueError):
            pass
        finally:
            self._add(decoder.decode(b"", final=True))

    def snapshot(self) -> tuple[str, int]:
        with self._lock:
            return "".join(self.parts), self.dropped


class BashInput(ToolInput):
    command: str = Field(description="The command to execute")
    timeout: int | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_MS,
        description=f"Optional timeout in milliseconds (max {MAX_TIMEOUT_MS})",
    )
    description: str | None = Field(
        default=None,
        description="Clear, concise description of what this command does in 5-10 words, in "
        "active voice.",
    )
    run_in_background: bool = Field(
        default=False,
        description="Set to true to run this command in the background. Use BashOutput to read the output later.",
    )


@register
class BashTool(Tool):
    name = "Bash"
    description = (
        "Executes a given bash command with an optional timeout, in the session's working "
        "directory.\n\n"
        "Usage notes:\n"
        "- The command argument is required.\n"
        f"- You can specify an optional timeout in milliseconds (up to {MAX_TIMEOUT_MS}ms / "
        "10 minutes). If not specified, commands will timeout after 120000ms (2 minutes).\n"
        "- It is very helpful if you write a clear, concise description of what this command "
        "does in 5-10 words.\n"
        "- If the output exceeds 30000 characters, output will be truncated before being "
        "returned to you.\n"
        "- Avoid using Bash with the `find`, `grep`, `cat`, `head`, `tail`, `sed`, `awk`, or "
        "`echo` commands to search and read files; use the dedicated Glob, Grep, Read, Edit "
        "and Write tools instead.\n"
        "- When issuing multiple commands, use ';' or '&&' to separate them. DO NOT use "
        "newlines (newlines are ok in quoted strings).\n"
        "- A non-zero exit code is reported as an error with the output and the exit code.\n"
        "- You can use the `run_in_background` parameter to run the command in the background, which "
        "allows you to continue working while the command runs. You can monitor the output using the "
        "BashOutput tool as it becomes available, and stop it with KillShell. Never use "
        "`run_in_background` to run 'sleep' as it will return immediately. You do not need to use '&' "
        "at the end of the command when using this parameter."
    )
    input_model = BashInput
    read_only = False
    idempotent = False

    def summary(self, args: dict) -> str:
        return str(args.get("command", ""))

    def run(self, args: BashInput, ctx: ToolContext) -> ToolOutput:
        timeout_ms = min(args.timeout or ctx.bash_default_timeout_ms, ctx.bash_max_timeout_ms)
        if ctx.cancel.is_set():
            return ToolOutput(
                content="Command was interrupted (the session was cancelled) before it started.",
                is_error=True,
                display="interrupted",
            )
        launch = sandbox.prepare(args.command, workspace=str(ctx.workspace), cwd=str(ctx.cwd), home=ctx.home,
                                 settings=ctx.sandbox, data_dir=sandbox_data_dir() if ctx.sandbox else None,
                                 added_dirs=ctx.area.dirs[1:], env=ctx.env, git_writable=ctx.git_writes)
        if args.run_in_background:
            return _background(args, ctx, launch)
        try:
            return self._run(args, ctx, launch, timeout_ms)
        finally:
            launch.close()

    def _run(self, args: BashInput, ctx: ToolContext, launch: sandbox.Launch, timeout_ms: int) -> ToolOutput:
        timeout_label = f"{timeout_ms / 1000:g}s"
        done = run_process(launch, cwd=str(ctx.cwd), timeout=timeout_ms / 1000, cancel=ctx.cancel,
                           cap=ctx.max_output_chars, timeout_label=timeout_label, fence=ctx.fence)
        text, cut = combine(done.out, done.err, ctx.max_output_chars)
        rc, stopped = done.returncode, done.stopped
        if stopped:
            content = f"{text}\n{stopped}" if text else stopped
            return ToolOutput(content=content, is_error=True, display=stopped.split(" (")[0], truncated=cut)

        first = next((line for line in text.splitlines() if line.strip()), "")
        if rc != 0:
            code = 128 - rc if rc is not None and rc < 0 else rc
            tail = f"Exit code {code}" + (SANDBOX_HINT if launch.sandboxed and _blocked(text) else "")
            content = f"{text}\n{tail}" if text else tail
            display = f"exit {code}" + (f": {first}" if first else "")
            return ToolOutput(content=content, is_error=True, display=display[:100], truncated=cut)
        # Claude Code's tool_use_result: its stdout holds both streams, as the text does.
        result = {"stdout": text if text.strip() else "", "stderr": "", "interrupted": False, "isImage": False,
                  "noOutputExpected": False}
        if not text.strip():
            return ToolOutput(content=NO_OUTPUT, display="(no output)", result=result)
        return ToolOutput(content=text, display=first[:100], truncated=cut, result=result)


def _background(args: BashInput, ctx: ToolContext, launch: sandbox.Launch) -> ToolOutput:
    """Start the command as a background shell of the session (the shell's host closes ``launch``)."""
    if ctx.shells is None:
        launch.close()
        raise ToolError("run_in_background is not available here: only a session's own tool calls can start "
                        "background commands. Run the command without run_in_background.")
    shell_id = ctx.shells.start(args.command, args.description, launch, str(ctx.cwd))
    return ToolOutput(content=f"Command running in background with ID: {shell_id}",
                      display=f"running in background ({shell_id})")


@dataclass
class Finished:
    """How a command ended: its two collected outputs, its exit code, and why it was stopped (if it was)."""

    out: _Collector
    err: _Collector
    returncode: int | None
    stopped: str | None


def run_process(launch: sandbox.Launch, *, cwd: str, timeout: float, cancel: threading.Event, cap: int,
                stdin: bytes | None = None, timeout_label: str | None = None, fence=None) -> Finished:
    """Start ``launch`` in its own process group, feed it ``stdin``, collect its output, stop it on
    timeout or cancel (the whole group). What the Bash tool and command hooks both run.

    ``fence`` (a :class:`~workflows.steps.fence.CommandFence`: a mutating tool step's command): the command
    runs under the guard, starts only once the fence is passed, and dies when its deadline lapses.

    Raises:
        ToolError: the command cannot be started.
    """
    argv, pass_fds, feed = launch.argv, launch.pass_fds, None
    if fence is not None:
        feed = DeadlineFeed()
        argv = guard_argv(launch.argv, launch.pass_fds, feed.read_fd, fence.tag)
        pass_fds = (*launch.pass_fds, feed.read_fd)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=launch.env,
            pass_fds=pass_fds,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        if feed is not None:
            feed.close()
        where = "in the sandbox " if launch.sandboxed else ""
        raise ToolError(f"Cannot start the command {where}in {cwd}: {exc}") from None
    launch.handed_over()
    if feed is not None:  # before note_child(): the guard starts the command (bwrap) only once it has this
        feed.start(fence)  # (refused: the guard exits without running the command, and says so)
    launch.note_child()
    if stdin is not None:
        threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True).start()

    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Collector(proc.stdout, cap), _Collector(proc.stderr, cap)
    deadline = time.monotonic() + timeout
    stopped: str | None = None
    while True:
        try:
            proc.wait(timeout=POLL_SECONDS)
            break
        except subprocess.TimeoutExpired:
            pass
        if feed is not None:
            feed.push(fence.deadline())
        if cancel.is_set():
            stopped = "Command was interrupted (the session was cancelled)"
            break
        if time.monotonic() >= deadline:
            stopped = f"Command timed out after {timeout_label or f'{timeout:g}s'}"
            break
    if stopped:
        kill_process_group(proc)
    if feed is not None:
        feed.close()

    # The shell is gone; wait for the pipes to close (a background child may hold them).
    drain_until = time.monotonic() + DRAIN_SECONDS
    for c in (out, err):
        c.thread.join(timeout=max(0.0, drain_until - time.monotonic()))
    for c, stream in ((out, proc.stdout), (err, proc.stderr)):
        if not c.thread.is_alive():
            stream.close()
    return Finished(out, err, proc.returncode, stopped)


class DeadlineFeed:
    """The pipe on which the worker gives a fenced command's guard its deadlines (workflows/shells/guard.py)."""

    #: A new deadline is written once it moved by this much (the lease keeper renews every third of a lease).
    STEP = 0.1

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()
        self._read_open = True
        self._sent: float | None = None

    def start(self, fence) -> None:
        """Close our copy of the guard's end, pass the fence, and write the first deadline (or close: refused)."""
        self._close_read()
        try:
            deadline = fence.go()
        except BaseException:
            self.close()
            raise
        if deadline is None:
            self.close()
        else:
            self.push(deadline)

    def push(self, deadline: float) -> None:
        if self._write_fd is None or (self._sent is not None and abs(deadline - self._sent) < self.STEP):
            return
        try:
            os.write(self._write_fd, f"{deadline!r}\n".encode())
            self._sent = deadline
        except OSError:  # the guard is gone (the command ended)
            self.close()

    def close(self) -> None:
        self._close_read()
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None

    def _close_read(self) -> None:
        if self._read_open:
            os.close(self.read_fd)
            self._read_open = False


def _feed(pipe: IO[bytes] | None, data: bytes) -> None:
    """Write ``data`` to a command's stdin and close it; a command that does not read it is fine."""
    if pipe is None:
        return
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            pipe.close()
        except (BrokenPipeError, OSError):
            pass


def combine(out: _Collector, err: _Collector, cap: int) -> tuple[str, bool]:
    """stdout then stderr, cut at ``cap`` characters with a note of what was dropped; and whether it was cut."""
    o, o_drop = out.snapshot()
    e, e_drop = err.snapshot()
    o, e = o.rstrip("\n"), e.rstrip("\n")
    if o_drop:  # stdout alone is past the cap: stderr is all beyond it
        text, dropped = o, o_drop + len(e) + e_drop
    else:
        text = f"{o}\n{e}" if o and e else (o or e)
        dropped = e_drop
    if len(text) > cap:
        dropped += len(text) - cap
        text = text[:cap]
    if dropped:
        text += f"\n\n... [output truncated: {dropped} more characters]"
    return text, bool(dropped)
