"""The session-memory update fork: keeps the session's notes document current with Edit, its only tool
(the notes live in Redis; the edits are staged in the fork's state and land with the step)."""

from __future__ import annotations

import threading
from typing import Any

from workflows.context.assemble import model_view
from workflows.exceptions import ToolInputError
from workflows.forks.state import ForkState, after, denied, render_conversation
from workflows.forks.verbs import ForkEngine
from workflows.memory.records import SESSION_MEMORY_TEMPLATE, session_memory_path
from workflows.model.side_calls import SESSION_MEMORY_MARK
from workflows.models import SessionRecord, StepKind, StepRecord
from workflows.tools import ToolOutput, tool_schemas, validate_input

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
        recent = after(entries, self.rec.memory_covers)
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
            return denied(f"{name} is not allowed here: {allowed}. Put what you want to keep in that file.")
        try:
            args = validate_input("Edit", tool_input)
        except ToolInputError as exc:
            return denied(str(exc))
        if args.file_path != self.path:
            state.denied.append(f"Edit {args.file_path}")
            return denied(f"Editing {args.file_path} is not allowed here: {allowed}.")
        doc = state.doc or ""
        old, new = args.old_string, args.new_string
        if old == new:
            return denied("No changes to make: old_string and new_string are exactly the same.")
        if old == "":
            if doc.strip():
                return denied("The notes file is not empty: use a non-empty old_string to edit it.")
            state.doc = new
        else:
            count = doc.count(old)
            if count == 0:
                return denied(f"String to replace not found in {self.path}.\nString: {old}")
            if count > 1 and not args.replace_all:
                return denied(f"Found {count} matches of the string to replace, but replace_all is false. "
                               f"Give more context to make it unique.\nString: {old}")
            state.doc = doc.replace(old, new) if args.replace_all else doc.replace(old, new, 1)
        state.edits += 1
        return ToolOutput(content=f"The notes file {self.path} has been updated.", display="notes updated")

    def commit(self, step: StepRecord, owner: str, state: ForkState) -> list[StepRecord]:
        return self.engine.record_session_memory(
            self.rec.id, step.id, owner, state.doc if state.edits else None, covers=state.until,
            usage=state.usage, duration_ms=state.api_ms)
