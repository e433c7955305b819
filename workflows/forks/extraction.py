"""The memory extraction fork: reads the turn's new messages and the project's MEMORY.md, may read freely
(Read, Glob, Grep, read-only Bash) and writes only memory records, staged in its state."""

from __future__ import annotations

import threading
from typing import Any

from workflows.exceptions import MemoryRecordError, ToolInputError
from workflows.forks.state import FORK_TOOL_OUTPUT_CHARS, ForkState, after, denied, render_conversation
from workflows.forks.verbs import ForkEngine
from workflows.memory.records import INDEX_NAME, MEMORY_TYPES, MemoryRecord, index_markdown, make_record
from workflows.model.side_calls import EXTRACT_MARK
from workflows.models import RuleSet, SessionRecord, StepKind, StepRecord
from workflows.permissions import Decision, decide, read_denied_for
from workflows.tools import MemoryTracker, ToolContext, ToolOutput, get_tool, run_tool, tool_schemas, validate_input

#: Commands the extraction may run: they only read. They are its allow list, checked by the
#: session's own decision function in plan mode (so a write, a redirection, a substitution or
#: anything not understood is denied), after the session's own mode and deny rules.
READ_ONLY_COMMANDS = (
    "ls", "cat", "head", "tail", "wc", "grep", "rg", "pwd", "echo", "tree", "file", "stat", "du", "which",
    "date", "uname", "git status", "git log", "git diff", "git show", "git branch", "git rev-parse",
    "git ls-files", "git blame", "git remote -v",
)
_EXTRACT_ALLOW = RuleSet()
for _cmd in READ_ONLY_COMMANDS:
    _EXTRACT_ALLOW.add("allow", f"Bash({_cmd}:*)", "memory extraction")
for _tool in ("Read", "Glob", "Grep"):
    _EXTRACT_ALLOW.add("allow", _tool, "memory extraction")


# =========================================================================== extraction

EXTRACT_SYSTEM = EXTRACT_MARK + """ You read the newest part of a coding session and save what is worth \
remembering in later sessions of the same project, as memory records. You are not talking to the user.

Save only durable facts, of four types:
- user: who the user is: their role, goals, expertise, how they like to work.
- feedback: corrections the user made and ways of working they confirmed. Say what to do, why, and how to \
apply it next time.
- project: ongoing work, plans, decisions and their reasons that are not recorded in git or in the code.
- reference: where information lives (a dashboard, a ticket tracker, a document, a channel) and what it holds.

Do not save: code patterns or conventions visible in the code, file paths or project structure, git history, \
debugging recipes or fixes, anything already in CLAUDE.md or MAINSAIL.md, or the state of the current task \
(it is over, or the session notes keep it).

How to work:
- MEMORY.md (below) lists the records that exist. Update a record (MemoryWrite with its name) rather than \
add a near-duplicate; delete one that the conversation shows is wrong (MemoryDelete).
- You may look things up with Read, Glob, Grep and read-only Bash commands; you cannot change any file.
- Each record: a short kebab-case name, its type, a one-line description, and a body.
- You have at most {max_turns} turns: make your writes together in one turn. When nothing is worth saving, \
reply "Nothing to save." without calling a tool. Most turns have nothing worth saving."""

EXTRACT_PROMPT = """\
The new messages of the session since the last extraction:

<conversation>
{conversation}
</conversation>

MEMORY.md now:
<memory-index>
{index}
</memory-index>

Save the durable facts these messages hold, if any."""

EXTRACT_TOOLS = ("Bash", "Glob", "Grep", "Read", "MemoryRead", "MemoryWrite", "MemoryDelete")


class ExtractionFork:
    kind = StepKind.EXTRACT

    def __init__(self, engine: ForkEngine, rec: SessionRecord) -> None:
        self.engine = engine
        self.rec = rec
        self.memory = engine.store.project_memory(rec.project_id, rec.project_root) if rec.project_id else None

    def start(self) -> ForkState:
        entries = self.engine.store.cached_entries(self.rec.id)
        new = after(entries, self.rec.extract_cursor)
        index = self.memory.index() if self.memory else ""
        prompt = EXTRACT_PROMPT.format(conversation=render_conversation(new) or "(no new messages)",
                                       index=index.strip() or "(empty: no records yet)")
        return ForkState(messages=[{"role": "user", "content": [{"type": "text", "text": prompt}]}],
                         start_cursor=self.rec.extract_cursor, until=entries[-1].uuid if entries else None)

    def system(self) -> list[dict]:
        text = EXTRACT_SYSTEM.format(max_turns=self.engine.settings.memory_fork_max_turns)
        return [{"type": "text", "text": text}]

    def tools(self) -> list[dict]:
        return tool_schemas(list(EXTRACT_TOOLS))

    def handle(self, name: str, tool_input: Any, state: ForkState, cancel: threading.Event) -> ToolOutput:
        rule = ("the memory extraction may read (Read, Glob, Grep, read-only Bash) and write only memory "
                "records (MemoryWrite, MemoryDelete)")
        if name not in EXTRACT_TOOLS:
            what = name
            if isinstance(tool_input, dict) and tool_input.get("file_path"):
                what = f"{name} of {tool_input['file_path']}"
            state.denied.append(what)
            return denied(f"{what} is not allowed: {rule}.")
        try:
            args = validate_input(name, tool_input)
        except ToolInputError as exc:
            return denied(str(exc))
        if name == "MemoryWrite":
            try:
                record = make_record(args.name, args.description, args.type, args.body, self.rec.id)
            except MemoryRecordError as exc:
                return denied(str(exc))
            existed = self._lookup(args.name, state) is not None
            state.puts[record.name] = record
            if record.name in state.deletes:
                state.deletes.remove(record.name)
            verb = "Updated" if existed else "Saved"
            return ToolOutput(content=f"{verb} memory {record.name!r} ({record.type}).",
                              display=f"{verb} memory {record.name}")
        if name == "MemoryDelete":
            if self._lookup(args.name, state) is None:
                return denied(f"No memory named {args.name!r}.")
            state.puts.pop(args.name, None)
            if args.name not in state.deletes:
                state.deletes.append(args.name)
            return ToolOutput(content=f"Deleted memory {args.name!r}.", display=f"Deleted memory {args.name}")
        if name == "MemoryRead":
            key = args.name.removesuffix(".md")
            if key.upper() == INDEX_NAME:
                return ToolOutput(content=index_markdown(self._records(state)) or "MEMORY.md is empty.")
            record = self._lookup(key, state)
            if record is None:
                return denied(f"No memory named {key!r}.")
            return ToolOutput(content=record.markdown())
        perm = decide(get_tool(name), tool_input, self.rec, caller_allow=_EXTRACT_ALLOW,
                      caller="the memory extraction")
        if perm.decision is not Decision.ALLOW:
            shown = tool_input.get("command") or tool_input.get("file_path") or tool_input.get("path") or ""
            state.denied.append(f"{name} {shown!r}" if shown else name)
            return denied(f"{perm.reason} ({rule}).")
        ctx = ToolContext(workspace=self.rec.workspace, session_id=self.rec.id, home=self.rec.home,
                          files_read=MemoryTracker(), cancel=cancel, max_output_chars=FORK_TOOL_OUTPUT_CHARS,
                          bash_default_timeout_ms=60_000, bash_max_timeout_ms=120_000,
                          read_denied=read_denied_for(self.rec), sandbox=self.rec.sandbox,
                          additional_dirs=tuple(self.rec.additional_directories), env=dict(self.rec.env))
        return run_tool(name, tool_input, ctx)

    def _records(self, state: ForkState) -> list[MemoryRecord]:
        stored = {r.name: r for r in (self.memory.records() if self.memory else [])}
        stored.update(state.puts)
        for name in state.deletes:
            stored.pop(name, None)
        return sorted(stored.values(), key=lambda r: (MEMORY_TYPES.index(r.type), r.name))

    def _lookup(self, name: str, state: ForkState) -> MemoryRecord | None:
        if name in state.deletes:
            return None
        if name in state.puts:
            return state.puts[name]
        return self.memory.get(name) if self.memory else None

    def commit(self, step: StepRecord, owner: str, state: ForkState) -> list[StepRecord]:
        return self.engine.record_extraction(
            self.rec.id, step.id, owner, puts=list(state.puts.values()), deletes=list(state.deletes),
            start_cursor=state.start_cursor, until=state.until, usage=state.usage, duration_ms=state.api_ms)
