"""BashOutput, KillShell and TaskStop: follow and stop the session's background shells (Bash ``run_in_background``).

TaskStop (Claude Code 2.1's name) stops a background task: a shell here; a background agent's stop is
the engine's (:meth:`workflows.engine.subagents.SubagentLogic.stop_background`), which answers the call
before it reaches a worker.

Both work from any tools worker: the shells live in Redis (:mod:`workflows.shells`). Like Claude
Code, neither asks for permission (they touch only shells this session started): both are
``read_only`` for the permission check, whose deny rules still apply.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.store.shells import Read
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.read import split_lines
from workflows.tools.regex import LineSearcher

NO_SHELLS = ("Background shells are not available here: only a session's own tool calls can start, read or stop "
             "them.")

OUTPUT_DESCRIPTION = (
    "\n- Retrieves output from a running or completed background bash shell\n"
    "- Takes a bash_id parameter identifying the shell\n"
    "- Always returns only new output since the last check\n"
    "- Returns stdout and stderr output along with shell status (running, completed, killed, or lost "
    "when the worker running it stopped)\n"
    "- Supports optional regex filtering to show only lines matching a pattern\n"
    "- Use this tool when you need to monitor or check the output of a long-running shell\n"
    "- Shell IDs are returned by Bash calls with run_in_background\n"
)

KILL_DESCRIPTION = (
    "\n- Kills a running background bash shell by its ID\n"
    "- Takes a shell_id parameter identifying the shell to kill\n"
    "- Returns a success or failure status \n"
    "- Use this tool when you need to terminate a long-running shell\n"
    "- Shell IDs are returned by Bash calls with run_in_background\n"
)


class BashOutputInput(ToolInput):
    bash_id: str = Field(description="The ID of the background shell to retrieve output from")
    filter: str | None = Field(
        default=None,
        description="Optional regular expression to filter the output lines. Only lines matching this regex will "
        "be included in the result. Any lines that do not match will no longer be available to read.",
    )


class KillShellInput(ToolInput):
    shell_id: str = Field(description="The ID of the background shell to kill")


@register
class BashOutputTool(Tool):
    name = "BashOutput"
    description = OUTPUT_DESCRIPTION
    input_model = BashOutputInput
    read_only = True  # it moves this session's read cursor, nothing else
    idempotent = True

    def run(self, args: BashOutputInput, ctx: ToolContext) -> ToolOutput:
        searcher = None
        if args.filter:
            searcher = LineSearcher(args.filter, ignore_case=True, what="filter regex")
        if ctx.shells is None:
            raise ToolError(NO_SHELLS)
        got = ctx.shells.read(args.bash_id, ctx.tool_use_id)
        stdout, stderr = got.stdout, got.stderr
        if searcher is not None:
            stdout, stderr = (_matching(searcher, text, ctx) for text in (stdout, stderr))
        cap = ctx.max_output_chars
        parts = [f"<status>{got.status}</status>"]
        if got.exit_code is not None:
            parts.append(f"<exit_code>{got.exit_code}</exit_code>")
        if stdout.strip():
            parts.append(f"<stdout>\n{_cut(stdout, cap).rstrip()}\n</stdout>")
        if stderr.strip():
            parts.append(f"<stderr>\n{_cut(stderr, cap).strip()}\n</stderr>")
        if note := _note(got):
            parts.append(f"<note>{note}</note>")
        parts.append(f"<timestamp>{_now()}</timestamp>")
        lines = len(split_lines(stdout)) + len(split_lines(stderr))
        code = f" (exit {got.exit_code})" if got.exit_code is not None and got.status != "running" else ""
        return ToolOutput(content="\n\n".join(parts),
                          display=f"{got.status}{code} · {lines} new line{'' if lines == 1 else 's'}")


@register
class KillShellTool(Tool):
    name = "KillShell"
    description = KILL_DESCRIPTION
    input_model = KillShellInput
    read_only = True  # it stops a shell this session started; it changes nothing in the workspace
    idempotent = True

    def run(self, args: KillShellInput, ctx: ToolContext) -> ToolOutput:
        command = stop_shell(args.shell_id, ctx, self.name)
        message = {"message": f"Successfully killed shell: {args.shell_id} ({command})", "shell_id": args.shell_id}
        return ToolOutput(content=json.dumps(message, ensure_ascii=False, separators=(",", ":")),
                          display=f"Shell {args.shell_id} killed")


STOP_DESCRIPTION = (
    "\n- Stops a running background task by its ID\n"
    "- Takes a task_id parameter identifying the task to stop\n"
    "- Returns a success or failure status\n"
    "- Use this tool when you need to terminate a long-running task\n"
)


class TaskStopInput(ToolInput):
    task_id: str | None = Field(default=None, description="The ID of the background task to stop")
    shell_id: str | None = Field(default=None, description="Deprecated: use task_id instead")


@register
class TaskStopTool(Tool):
    name = "TaskStop"
    description = STOP_DESCRIPTION
    input_model = TaskStopInput
    read_only = True  # it stops a task this session started; it changes nothing in the workspace
    idempotent = True

    def run(self, args: TaskStopInput, ctx: ToolContext) -> ToolOutput:
        task_id = args.task_id or args.shell_id
        if not task_id:
            raise ToolError("TaskStop needs a task_id: the ID a background Agent or Bash call returned.")
        command = stop_shell(task_id, ctx, self.name)
        result = {"message": f"Successfully stopped task: {task_id} ({command})", "task_id": task_id,
                  "task_type": "local_bash", "command": command}
        return ToolOutput(content=json.dumps(result, ensure_ascii=False, separators=(",", ":")), result=result,
                          display=f"Task {task_id} stopped")


def stop_shell(shell_id: str, ctx: ToolContext, tool: str) -> str:
    """Stop this session's background shell ``shell_id`` (KillShell, and TaskStop for a shell) and wait until it
    has stopped; its command.

    Raises:
        ToolError: no shells here, no such shell or it is not running (:meth:`workflows.shells.SessionShells.kill`),
            it has not stopped yet (``tool`` again), it is lost with its worker, or it ended on its own first.
    """
    if ctx.shells is None:
        raise ToolError(NO_SHELLS)
    status, command = ctx.shells.kill(shell_id, ctx.cancel, ctx.tool_use_id)
    if status in ("running", "requested"):
        raise ToolError(f"Shell {shell_id} was asked to stop but has not stopped yet: its worker may be busy. "
                        f"Check it with BashOutput, or call {tool} again.")
    if status == "lost":
        raise ToolError(f"Shell {shell_id} is lost: the worker running it stopped before it confirmed the "
                        "kill, and the command was stopped along with that worker.")
    if status != "killed":
        raise ToolError(f"Shell {shell_id} ended on its own ({status}) before it was stopped. Read its output with "
                        "BashOutput.")
    return command


def _matching(searcher: LineSearcher, text: str, ctx: ToolContext) -> str:
    """The lines of ``text`` the filter matches (the others are consumed, as in Claude Code)."""
    if not text:
        return text
    lines = split_lines(text)
    hits = searcher.lines(searcher.prepare(text), ctx.cancel)
    return "\n".join(lines[i] for i in hits if i < len(lines))


def _cut(text: str, cap: int) -> str:
    """Claude Code's cut of BashOutput's streams: the first ``cap`` characters and a count of the lines left."""
    if len(text) <= cap:
        return text
    return f"{text[:cap]}\n\n... [{len(text[cap:].split(chr(10)))} lines truncated] ..."


def _note(got: Read) -> str:
    notes = []
    if got.dropped:
        notes.append(f"{got.dropped:,} characters of output were dropped before this read: a background shell "
                     "keeps only its latest output. Read it more often, or filter it.")
    if got.status == "lost":
        notes.append(f"The worker running this shell ({got.info.get('worker', 'unknown')}) stopped, so the shell "
                     "is lost: this is the output stored before that. Its command was stopped along with the "
                     "worker; start it again if it is still needed.")
    elif got.status == "killed" and got.info.get("kill") not in (None, "KillShell"):
        notes.append(f"It was stopped because {got.info['kill']}.")
    return " ".join(notes)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
