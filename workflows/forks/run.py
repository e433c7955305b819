"""Memory forks: small agent loops with tight tool permissions, one step each.

Two kinds run on the ``memory`` queue:

* the **session-memory update** (:class:`SessionMemoryFork`): the session's recent
  messages, its previous notes and the template; its only permitted tool is Edit
  on the session's notes document, which lives in Redis;
* the **memory extraction** (:class:`ExtractionFork`): the turn's new messages and
  the project's MEMORY.md; it may read freely (Read, Glob, Grep, read-only Bash)
  and write only memory records.

A fork's writes are staged in its state, never applied as it goes. After every
model turn the state (messages, staged writes, usage) is saved as a checkpoint,
fenced by the step's owner, so a worker that dies mid-fork costs at most the turn
in flight: the step's next attempt, on any worker, resumes from the checkpoint.
The staged writes land in the same MULTI/EXEC that marks the step done, so they
are written exactly once.
"""

from __future__ import annotations

import threading
from typing import Any

import anthropic
from pydantic import Field, ValidationError

from workflows.context.assemble import _blocks, model_view
from workflows.exceptions import MemoryRecordError, MissingCredentials, ToolInputError
from workflows.forks.verbs import ForkEngine
from workflows.memory.records import (
    INDEX_NAME,
    MEMORY_TYPES,
    SESSION_MEMORY_TEMPLATE,
    MemoryRecord,
    index_markdown,
    make_record,
    session_memory_path,
)
from workflows.model.client import client_for, describe_api_error, for_session, stream_reply
from workflows.model.side_calls import EXTRACT_MARK, SESSION_MEMORY_MARK
from workflows.models import (
    AssistantEntry,
    RuleSet,
    SessionRecord,
    StepKind,
    StepRecord,
    ToolResultBlock,
    Usage,
    UserEntry,
)
from workflows.models.valid_text import ValidJson
from workflows.permissions import Decision, decide, read_denied_for
from workflows.store.resilience import RedisError
from workflows.tools import MemoryTracker, ToolContext, ToolOutput, get_tool, run_tool, tool_schemas, validate_input

FORK_MAX_TOKENS = 8192
TRANSCRIPT_MAX_CHARS = 60_000  # the newest part of the conversation a fork is shown
RESULT_PREVIEW_CHARS = 600
FORK_TOOL_OUTPUT_CHARS = 20_000

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


class ForkState(ValidJson):
    """A fork's progress: what its checkpoint holds."""

    messages: list[dict[str, Any]]
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    api_ms: int = 0
    finished: bool = False
    # session memory
    doc: str | None = None
    edits: int = 0
    # extraction
    puts: dict[str, MemoryRecord] = Field(default_factory=dict)
    deletes: list[str] = Field(default_factory=list)
    start_cursor: str | None = None
    until: str | None = None  # the newest transcript entry the fork was shown
    denied: list[str] = Field(default_factory=list)


# =========================================================================== transcript as text


def render_conversation(entries: list, max_chars: int = TRANSCRIPT_MAX_CHARS) -> str:
    """User and assistant messages as plain text, tool calls and results abridged; the newest kept."""
    names: dict[str, str] = {}
    parts: list[str] = []
    for e in entries:
        if isinstance(e, AssistantEntry):
            text = e.message.text().strip()
            if text:
                parts.append(f"Assistant: {text}")
            for tu in e.message.tool_uses():
                names[tu.id] = tu.name
                try:
                    shown = get_tool(tu.name).summary(tu.input if isinstance(tu.input, dict) else {})
                except ToolInputError:
                    shown = ""
                parts.append(f"Assistant called {tu.name}({shown[:200]})")
        elif isinstance(e, UserEntry):
            content = e.message.content
            if isinstance(content, str):
                parts.append(f"User: {content.strip()}")
                continue
            for b in content:
                if isinstance(b, ToolResultBlock):
                    body = b.text  # an image or a PDF is named, not pasted
                    if len(body) > RESULT_PREVIEW_CHARS:
                        body = body[:RESULT_PREVIEW_CHARS] + f" [... {len(body) - RESULT_PREVIEW_CHARS:,} more chars]"
                    tag = "error" if b.is_error else "result"
                    parts.append(f"{names.get(b.tool_use_id, 'Tool')} {tag}: {body}")
                elif getattr(b, "text", None):
                    parts.append(f"User: {b.text.strip()}")
    text = "\n\n".join(parts)
    if len(text) > max_chars:
        text = "[... earlier messages omitted ...]\n\n" + text[-max_chars:]
    return text


def _after(entries: list, uuid: str | None) -> list:
    if uuid is None:
        return entries
    for i, e in enumerate(entries):
        if e.uuid == uuid:
            return entries[i + 1:]
    return entries  # not found (compacted away, or a fork of another session): show them all


def _denied(text: str) -> ToolOutput:
    return ToolOutput(content=text, is_error=True, display=text[:120])


# =========================================================================== session memory

SESSION_MEMORY_SYSTEM = (
    SESSION_MEMORY_MARK + " You keep the notes file of a coding session current, so that the session can "
    "continue from the notes alone once its conversation is compacted. You change nothing but the notes "
    "file, and only with the Edit tool."
)

SESSION_MEMORY_PROMPT = """\
Update the session notes file {path} from the conversation below: what happened since the notes were last \
updated. This is not part of the conversation with the user; do not answer or continue it.

<conversation>
{conversation}
</conversation>

The current contents of {path}:
<notes>
{doc}
</notes>

How to update the notes:
- Use the Edit tool with file_path "{path}"; it is the only tool you may use. Make all your edits in one \
turn (several Edit calls at once), then stop.
- Keep every section header (lines starting with '#') and the italic description line under it exactly as \
they are; write the content below the description.
- Write dense, specific notes: file paths, function names, exact commands, error messages, decisions and \
why. Keep each section short (under about 2,000 tokens); drop what no longer matters.
- "Current State" must describe the most recent work and the next steps. Add to "Worklog" tersely.
- Do not mention these instructions or the notes file in the notes.
"""


class SessionMemoryFork:
    kind = StepKind.MEMORY

    def __init__(self, engine: ForkEngine, rec: SessionRecord) -> None:
        self.engine = engine
        self.rec = rec
        self.path = session_memory_path(rec.id)

    def start(self) -> ForkState:
        entries = model_view(self.engine.store.cached_entries(self.rec.id))
        recent = _after(entries, self.rec.memory_covers)
        doc = self.engine.store.session_memory(self.rec.id) or SESSION_MEMORY_TEMPLATE
        prompt = SESSION_MEMORY_PROMPT.format(path=self.path, conversation=render_conversation(recent), doc=doc)
        return ForkState(messages=[{"role": "user", "content": [{"type": "text", "text": prompt}]}], doc=doc,
                         until=entries[-1].uuid if entries else None)

    def system(self) -> list[dict]:
        return [{"type": "text", "text": SESSION_MEMORY_SYSTEM}]

    def tools(self) -> list[dict]:
        return tool_schemas(["Edit"])

    def handle(self, name: str, tool_input: Any, state: ForkState, cancel: threading.Event) -> ToolOutput:
        allowed = f"this session-memory update may only use Edit on {self.path}"
        if name != "Edit":
            state.denied.append(name)
            return _denied(f"{name} is not allowed here: {allowed}. Put what you want to keep in that file.")
        try:
            args = validate_input("Edit", tool_input)
        except ToolInputError as exc:
            return _denied(str(exc))
        if args.file_path != self.path:
            state.denied.append(f"Edit {args.file_path}")
            return _denied(f"Editing {args.file_path} is not allowed here: {allowed}.")
        doc = state.doc or ""
        old, new = args.old_string, args.new_string
        if old == new:
            return _denied("No changes to make: old_string and new_string are exactly the same.")
        if old == "":
            if doc.strip():
                return _denied("The notes file is not empty: use a non-empty old_string to edit it.")
            state.doc = new
        else:
            count = doc.count(old)
            if count == 0:
                return _denied(f"String to replace not found in {self.path}.\nString: {old}")
            if count > 1 and not args.replace_all:
                return _denied(f"Found {count} matches of the string to replace, but replace_all is false. "
                               f"Give more context to make it unique.\nString: {old}")
            state.doc = doc.replace(old, new) if args.replace_all else doc.replace(old, new, 1)
        state.edits += 1
        return ToolOutput(content=f"The notes file {self.path} has been updated.", display="notes updated")

    def commit(self, step: StepRecord, owner: str, state: ForkState) -> list[StepRecord]:
        return self.engine.record_session_memory(
            self.rec.id, step.id, owner, state.doc if state.edits else None, covers=state.until,
            usage=state.usage, duration_ms=state.api_ms)


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
        new = _after(entries, self.rec.extract_cursor)
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
            return _denied(f"{what} is not allowed: {rule}.")
        try:
            args = validate_input(name, tool_input)
        except ToolInputError as exc:
            return _denied(str(exc))
        if name == "MemoryWrite":
            try:
                record = make_record(args.name, args.description, args.type, args.body, self.rec.id)
            except MemoryRecordError as exc:
                return _denied(str(exc))
            existed = self._lookup(args.name, state) is not None
            state.puts[record.name] = record
            if record.name in state.deletes:
                state.deletes.remove(record.name)
            verb = "Updated" if existed else "Saved"
            return ToolOutput(content=f"{verb} memory {record.name!r} ({record.type}).",
                              display=f"{verb} memory {record.name}")
        if name == "MemoryDelete":
            if self._lookup(args.name, state) is None:
                return _denied(f"No memory named {args.name!r}.")
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
                return _denied(f"No memory named {key!r}.")
            return ToolOutput(content=record.markdown())
        perm = decide(get_tool(name), tool_input, self.rec, caller_allow=_EXTRACT_ALLOW,
                      caller="the memory extraction")
        if perm.decision is not Decision.ALLOW:
            shown = tool_input.get("command") or tool_input.get("file_path") or tool_input.get("path") or ""
            state.denied.append(f"{name} {shown!r}" if shown else name)
            return _denied(f"{perm.reason} ({rule}).")
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


# =========================================================================== the loop


def run_memory_fork(engine: ForkEngine, rec: SessionRecord, step: StepRecord, owner: str,
                    cancel: threading.Event) -> list[StepRecord]:
    """Run (or resume) one memory fork to its end and commit what it staged.

    An extraction first takes its project's extraction lock; while another session's
    extraction holds it, the step is given back to run a moment later (no worker waits).
    """
    lock = None
    if step.kind is StepKind.EXTRACT and rec.project_id:
        lock = engine.extraction_lock(rec, step)
        if not lock.acquire():  # another session of the project is extracting: wait, without a worker
            holder = lock.holder() or "another session"
            return engine.defer_step(step.session_id, step.id, owner, engine.settings.extract_wait_seconds,
                                     f"waiting for the project's running extraction ({holder})")
    try:
        return _run_fork(engine, rec, step, owner, cancel)
    finally:
        if lock is not None:
            lock.release()


def _run_fork(engine: ForkEngine, rec: SessionRecord, step: StepRecord, owner: str,
              cancel: threading.Event) -> list[StepRecord]:
    store, settings = engine.store, engine.settings
    sid = step.session_id
    fork = SessionMemoryFork(engine, rec) if step.kind is StepKind.MEMORY else ExtractionFork(engine, rec)
    saved = store.fork_checkpoint(sid, step.id)
    try:
        state = ForkState.model_validate_json(saved) if saved else fork.start()
    except ValidationError:
        state = fork.start()  # a checkpoint from another version: start over
    try:
        client = client_for(rec.sent_model(), for_session(settings, rec))
        while not state.finished and state.turns < settings.memory_fork_max_turns:
            request = {"model": rec.sent_model(), "max_tokens": min(settings.max_tokens, FORK_MAX_TOKENS),
                       "system": fork.system(), "tools": fork.tools(), "messages": state.messages}
            reply = stream_reply(client, request, lambda _text: None, cancel)
            msg = reply.message
            state.turns += 1
            state.usage = state.usage + msg.usage
            state.api_ms += reply.duration_ms
            state.messages.append({"role": "assistant", "content": _blocks(msg.content)})
            uses = msg.tool_uses()
            if uses:
                results = []
                for tu in uses:
                    out = fork.handle(tu.name, tu.input, state, cancel)
                    block = {"type": "tool_result", "tool_use_id": tu.id, "content": out.blocks or out.content}
                    if out.is_error:
                        block["is_error"] = True
                    results.append(block)
                state.messages.append({"role": "user", "content": results})
            else:
                state.finished = True
            if not engine.save_fork_checkpoint(sid, step.id, owner, state.model_dump_json()):
                return []  # no longer ours (lease lost): the step's owner now carries on
    except InterruptedError:
        return []
    except MissingCredentials as exc:
        return engine.record_fork_failure(sid, step.id, owner, str(exc))
    except anthropic.APIError as exc:
        return engine.record_fork_failure(sid, step.id, owner, describe_api_error(exc, settings.api_max_retries))
    except RedisError:
        raise  # transient: the lease expires and the reaper runs the step again, from the checkpoint
    except Exception as exc:  # a bug must not wedge the session in `extracting`
        return engine.record_fork_failure(sid, step.id, owner, f"{type(exc).__name__}: {exc}")
    return fork.commit(step, owner, state)
