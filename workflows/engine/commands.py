"""Custom slash commands in the engine: a prompt ``/name args`` that names one of the session's commands
runs its ``!`` lines and ``@`` references first, then sends the prompt they complete.

A part of :class:`workflows.engine.Engine` (``engine.commands``). Where the lines run, and why: each is a call of the
Bash (``!``) or Read (``@``) tool, kept in ``SessionRecord.tool_calls`` with ``prelude`` set, decided by
the one permission function and run by the ordinary tool step on the session's tools worker, in the OS
sandbox, with the session's hooks; so a ``!`` line can do exactly what the same Bash call of the model
could, and asks exactly when it would ask (a person, durably; in print mode nobody, so it is refused).
Their results go into the prompt instead of the transcript. The run's steps:

1. ``TurnLogic.start_run`` finds the command (:meth:`invoked_command`): a ``command`` entry marks the run's
   start, the command's ``model`` and ``allowed-tools`` apply to the run;
2. UserPromptSubmit hooks (if any) see the prompt as typed; then :meth:`start_command` decides every
   line at once: a refusal ends the run before anything runs; asks wait for a person; the rest run,
   each ``!`` line in its own batch (in the file's order), the ``@`` files together;
3. each result lands in :meth:`command_output` (through ``TurnLogic.add_tool_result``); a failing ``!`` line ends
   the run, an ``@`` file that cannot be read is left out with a warning (``@`` also matches words that
   are not files);
4. :meth:`send_command`: the prompt (the files as Read reminders, the command's tags, its text with each
   ``!`` line's output in place) and the model call.

A refused or failed command ends its run with Claude Code's message (``Shell command permission check
failed for pattern "!`…`": …``) as a ``success`` result without a model call, as Claude Code does.
"""

from __future__ import annotations

import os

from workflows.commands import (
    CommandError,
    CommandRun,
    expand,
    load_commands,
    parse_invocation,
    prompt_blocks,
)
from workflows.commands.expand import attached_files, bash_mode, bash_mode_texts, mentions
from workflows.commit import Part, Tx, peers
from workflows.exceptions import ToolInputError
from workflows.model.tokens import estimate_tokens
from workflows.models import (
    Message,
    RequestStatus,
    RuleSpec,
    SystemEntry,
    TextBlock,
    ToolCall,
    ToolCallStatus,
    UserEntry,
    new_id,
)
from workflows.models.hooks import HookEvent
from workflows.permissions import Decision, decide
from workflows.permissions.rules import paths
from workflows.store import keys
from workflows.tools import get_tool, validate_input
from workflows.tools.base import ToolOutput
from workflows.tools.skill import skill_listing

__all__ = ["CommandRuns"]


class CommandRuns(Part):
    """Custom slash commands' runs (``engine.commands``)."""

    approvals: peers.Approvals
    hooks: peers.Hooks
    tools: peers.Tools
    turns: peers.Turns

    def refresh_commands(self, sid: str) -> list[str]:
        """Read the session's commands from its workspace and its user's home (the CLI's files) and keep them
        for every worker; what was wrong with the files left out."""
        rec = self.store.get_session(sid)
        found = load_commands(rec.workspace, rec.home, rec.plugins)
        self.store.put_commands(sid, found.commands)
        listing = "" if rec.parent_session_id else skill_listing(found.commands)
        if listing != rec.skill_listing:  # (the Skill tool and its reminder, for every worker)
            with self.store.lock(sid):
                rec = self.store.get_session(sid)
                rec.skill_listing = listing
                self.committer.commit(Tx(rec))
        return found.problems

    def invoked_command(self, tx: Tx, prompt: str) -> CommandRun | None:
        """The command ``prompt`` invokes, with its arguments in place (None: a plain prompt). Marks the run's
        start and gives the run the command's model and allowed tools."""
        rec = tx.rec
        if rec.parent_session_id:
            return None
        if (bash := bash_mode(prompt)) is not None:  # interactive mode's !cmd
            tx.add(SystemEntry(session_id=rec.id, subtype="command", content=prompt))
            return bash
        parsed = parse_invocation(prompt)
        definition = self.store.command(rec.id, parsed[0]) if parsed is not None else None
        if definition is None:
            return mentions(prompt)  # a plain prompt: its @ mentions (None: it has none)
        tx.add(SystemEntry(session_id=rec.id, subtype="command", content=prompt))
        try:
            run = expand(definition, prompt, parsed[1])
        except CommandError as exc:
            return CommandRun(name=definition.name, typed=prompt, args=parsed[1], texts=[""], failure=str(exc))
        rec.run_model = run.model
        rec.run_allow = [RuleSpec(rule=r, source=f"allowed-tools of /{run.name} ({run.path})")
                         for r in run.allowed_tools]
        if rec.run_allow and definition.scope == "project" and rec.untrusted_workspace:
            # The repository wrote this file: its pre-approvals count only in a trusted workspace (workflows.trust).
            rec.run_allow = []
            tx.add(SystemEntry(session_id=rec.id, subtype="warning", content=(
                f"allowed-tools of /{run.name} ({run.path}) not applied: the workspace is not trusted, so its calls "
                "ask as usual. Trust it with --trust-project (or the trust prompt) to use them.")))
        return run

    def start_command(self, tx: Tx, context: list[str]) -> None:
        """The command's prompt may go on (its hooks answered): decide its lines, then run them or send it."""
        rec = tx.rec
        run = rec.command
        run.context = list(context)
        if run.failure is None:
            calls, asked = self._line_calls(rec, run)
        for line in run.lines:
            if run.kind == "mention" and line.error is not None and line.tool_use_id == "":
                tx.add(SystemEntry(session_id=rec.id, subtype="warning",
                                   content=f"{line.pattern} was not attached: {line.error}"))
        if run.failure is not None:
            self._command_failed(tx)
            return
        if not calls:
            self.send_command(tx)
            return
        rec.tool_calls = calls
        rec.current_batch = -1
        if asked:
            self.approvals.ask(tx, asked)
            return
        tx.fire("tools_requested")
        self.tools.advance_tools(tx)

    def _line_calls(self, rec, run: CommandRun) -> tuple[list[ToolCall], list]:
        """A call for each line, decided; the first refusal sets ``run.failure`` (then nothing runs)."""
        calls, asked = [], []
        bash_lines = sum(1 for line in run.lines if line.kind == "bash")
        for i, line in enumerate(run.lines):
            name = "Bash" if line.kind == "bash" else "Read"
            why = (self._check_file(rec, line) if line.kind == "file" else None)
            tool_input = line.tool_input
            if why is None:
                try:
                    validate_input(name, tool_input)
                except ToolInputError as exc:
                    why = str(exc)
            perm = decide(get_tool(name), tool_input, rec) if why is None else None
            if perm is not None and perm.decision is Decision.DENY:
                why = perm.reason if not perm.asked else (
                    f"it needs approval ({perm.asked}), and {_nobody(perm)} "
                    "asks no one. Allow it with the command's allowed-tools or --allowedTools, or run the command "
                    "where you can answer (interactive mode)")
            if perm is not None and perm.decision is Decision.ASK and line.kind == "file":
                why = perm.reason or "it would need approval"  # an @ file is attached without asking, or not at all
            if why is not None and run.kind == "mention":  # a mention that cannot be attached stays a word
                line.error = why
                continue
            if why is not None:
                run.failure = refusal(line.kind, line.pattern, why)
                return [], []
            line.tool_use_id = f"cmd_{new_id().replace('-', '')[:24]}"
            call = ToolCall(tool_use_id=line.tool_use_id, name=name, input=tool_input, prelude=True,
                            batch=i if line.kind == "bash" else bash_lines)
            if perm.decision is Decision.ASK:
                call.status = ToolCallStatus.AWAITING_APPROVAL
                why = f"/{run.name}: {perm.reason or perm.source}"
                asked.append(self.approvals.request(rec, call, tool_input, why))
            calls.append(call)
        return calls, asked

    def _check_file(self, rec, line) -> str | None:
        """Why an ``@`` reference may not be attached (None: it may): it must name a file in the workspace."""
        raw = str(line.tool_input.get("file_path", ""))
        try:
            path = paths.resolve(raw, cwd=rec.workspace, home=rec.home)
        except paths.Unresolvable as exc:
            return f"{exc}."
        if rec.command is not None and rec.command.kind == "mention" and not os.path.isfile(path):
            return "no such file"
        if not paths.inside(path, paths.WorkArea(rec.workspace, rec.additional_directories)):
            return (f"{path} is outside the workspace {rec.workspace}. A command attaches only files in the "
                    "workspace (or an added directory); name one there, or ask the model to Read it (it asks)")
        line.tool_input = {"file_path": path}
        return None

    def command_output(self, tx: Tx, tool_use_id: str, output: ToolOutput) -> bool:
        """A line's result (every result of a call goes through here first): kept for the prompt. False when
        ``tool_use_id`` is not a line of the running command."""
        rec = tx.rec
        run = rec.command
        line = next((x for x in run.lines if x.tool_use_id == tool_use_id), None) if run else None
        if line is None:
            return False
        first = (output.display or next(iter(output.content.splitlines()), ""))[:120]
        if run.kind == "bash":  # bash mode: the output joins the conversation, failing or not
            line.output = output.content
            line.error = output.content if output.is_error else None
            return True
        if line.kind == "file" and output.is_error:
            line.error = output.content
            tx.add(SystemEntry(session_id=rec.id, subtype="warning",
                               content=f"{line.pattern} was not attached: {first}"))
        elif output.is_error:
            line.error = output.content
            if run.failure is None:
                run.failure = f'Shell command failed for pattern "{line.pattern}": {output.content}'
        else:
            line.output = output.content
            tx.add(SystemEntry(session_id=rec.id, subtype="command", content=f"{line.pattern}: {first}"))
        return True

    def command_refused(self, tx: Tx, call: ToolCall, by: str, message: str | None) -> None:
        """A person (or the approval timeout) denied a ``!`` line: the command will not run; questions about its
        other lines are dropped."""
        rec = tx.rec
        line = next((x for x in rec.command.lines if x.tool_use_id == call.tool_use_id), None)
        who = "nobody answered in time" if by == "timeout" else f"denied by {by}"
        if rec.command.failure is None and line is not None:
            rec.command.failure = refusal(line.kind, line.pattern, who + (f": {message}" if message else ""))
        call.status = ToolCallStatus.DONE
        for req in rec.pending_requests():
            other = next((c for c in rec.tool_calls if c.tool_use_id == req.tool_use_id), None)
            if other is not None and other.prelude and other is not call:
                req.status = RequestStatus.SUPERSEDED
                tx.approvals_cleared.append(keys.lease_member(rec.id, req.id))
                other.status = ToolCallStatus.DONE

    def command_failed(self, tx: Tx) -> bool:
        """End the run when its command failed (True); lines still running are superseded."""
        run = tx.rec.command
        if run is None or run.failure is None:
            return False
        self._command_failed(tx)
        return True

    def _command_failed(self, tx: Tx) -> None:
        rec = tx.rec
        failure = rec.command.failure
        if rec.tool_calls:
            rec.epoch += 1  # a line still running (an @ file read) is superseded
        rec.tool_calls = []
        tx.add(SystemEntry(session_id=rec.id, subtype="warning", content=failure))
        tx.fire("halt")
        self.turns.add_result(tx, "success", failure)
        self.turns.after_idle(tx)

    def send_command(self, tx: Tx) -> None:
        """Every line ran: the prompt, the context its UserPromptSubmit hooks gave, and the model call."""
        rec = tx.rec
        run, rec.command = rec.command, None
        if run.kind == "bash":
            self._bash_mode_done(tx, run)
            return
        if run.kind == "mention":
            attached = attached_files(run)
            if attached:  # before the prompt, as Claude Code puts them (one user message with it)
                tx.add(UserEntry(session_id=rec.id, origin="synthetic", message=Message(
                    role="user", content=[TextBlock(text=b) for b in attached])))
                rec.context_added += estimate_tokens("".join(attached))
            self.turns.add_prompt(tx, run.typed)
            self.hooks.add_context(tx, HookEvent.USER_PROMPT_SUBMIT, run.context)
            self.turns.next_model_call(tx)
            return
        blocks = prompt_blocks(run)
        entry = UserEntry(session_id=rec.id, message=Message(role="user", content=[TextBlock(text=b) for b in blocks]),
                          command=run.typed)
        tx.add(entry)
        rec.run_prompt_uuid = entry.uuid
        rec.context_added += estimate_tokens("".join(blocks))
        self.hooks.add_context(tx, HookEvent.USER_PROMPT_SUBMIT, run.context)
        self.turns.next_model_call(tx)

    def _bash_mode_done(self, tx: Tx, run) -> None:
        """Bash mode's command ran: its input and output join the conversation (the model sees them with the next
        prompt) and the run ends without a model call, as in Claude Code."""
        rec = tx.rec
        typed, output = bash_mode_texts(run)
        tx.add(UserEntry(session_id=rec.id, message=Message(role="user", content=typed), command=run.typed))
        tx.add(UserEntry(session_id=rec.id, message=Message(role="user", content=output), origin="synthetic"))
        rec.context_added += estimate_tokens(typed + output)
        tx.fire("halt")
        self.turns.add_result(tx, "success", run.lines[0].output or "")
        self.turns.after_idle(tx)


def _nobody(perm) -> str:
    return "dontAsk mode" if perm.source.startswith("mode dontAsk") else "print mode"


def refusal(kind: str, pattern: str, why: str) -> str:
    """The run's result when a line may not run: Claude Code's words for a ``!`` line."""
    why = why.rstrip(".") + "."
    if kind == "bash":
        return f'Shell command permission check failed for pattern "{pattern}": {why}'
    return f"File reference {pattern} cannot be attached: {why}"
