"""Rewinding a session (``/rewind``, ``mainsail rewind``): the conversation back to before one of its user
messages, the files its edit tools changed since back to their checkpoints (:mod:`workflows.edits.checkpoints`), or
both, as Claude Code's ``/rewind`` does.

A part of :class:`workflows.engine.Engine` (``engine.rewinding``). A human-paced verb: under the session's lock, on an
idle session (a memory extraction still running is left to go on beside it, as ``compact`` does) with no
queued message. Everything is checked before anything changes. The files are restored first, by the process
that asks (it must see the workspace); then one fenced commit appends a :class:`RewindEntry`, which
:func:`workflows.context.assemble.model_view` reads: the model no longer sees the message and what followed it (the
transcript keeps everything, like a compaction). The entry's ``parentUuid`` is the message's own parent, so the
next messages continue that chain (Claude Code's branch; an export follows it). The record follows the
conversation it now holds: its context estimate, its task list, and its session-memory notes (dropped when they
covered a message taken back; an update running on them is superseded, so it cannot land).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from statemachines import State
from workflows.commit import MAX_CONFLICTS, CommitConflict, Part, Tx
from workflows.commit.support import (
    require_idle,
)
from workflows.context.assemble import model_view
from workflows.edits.checkpoints import FileChange, apply_restore, plan_restore, turns_from
from workflows.exceptions import LockTimeout, RewindRefused, StepNotFound
from workflows.model.tokens import estimate_tokens
from workflows.models import AssistantEntry, RewindEntry, SessionRecord, UserEntry

#: What a code rewind's output says of Bash (Claude Code says the same).
BASH_NOTE = "Changes made by Bash commands are not tracked and were not undone."


@dataclass
class Rewound:
    """What a rewind did: its transcript entry, and what happened to each file (code)."""

    entry: RewindEntry
    changes: list[FileChange] = field(default_factory=list)


def rewind_points(entries: list) -> list[UserEntry]:
    """The messages a session can be rewound to, oldest first: the prompts (typed, queued, or a custom
    command's) in what the model sees now, so not those a compaction summarised or a rewind took back."""
    return [e for e in model_view(entries) if isinstance(e, UserEntry) and e.origin in ("prompt", "inbox")]


def message_text(e: UserEntry) -> str:
    """A prompt as the person typed it (a custom command's invocation rather than its expansion)."""
    return e.command or e.message.text()


class Rewinding(Part):
    """``/rewind``: the conversation, the code, or both, back to before a user message."""

    def rewind_points(self, sid: str) -> list[UserEntry]:
        """The session's messages one can rewind to (:func:`rewind_points`)."""
        return rewind_points(self.store.entries(sid))

    def rewind(self, sid: str, to: str, *, code: bool = True, conversation: bool = True,
               force: bool = False) -> Rewound:
        """Rewind session ``sid`` to before its user message ``to`` (a uuid from :meth:`rewind_points`).

        ``code``: files changed since by its edit tools go back to their checkpoints (created ones are deleted);
        ``conversation``: the model forgets the message and what followed it (one of the two at least).
        ``force``: restore files that changed since the session's last edit of them all the same.

        Raises:
            SessionBusy: the session is running (or waiting for a permission).
            RewindRefused: ``to`` is not a message to rewind to, messages are queued, the workspace is not on
                this machine (code), or files changed since (code, without ``force``); nothing was changed.
        """
        if not (code or conversation):
            raise ValueError("rewind: choose code, conversation or both")
        with self.store.lock(sid):
            rec, entries, target = self._rewind_target(sid, to)
            changes: list[FileChange] = []
            if code:
                changes = self._plan_code(rec, entries, target, force)
                apply_restore(self.store.file_checkpoints(rec.id), changes, _restore_context(rec))
            for _ in range(MAX_CONFLICTS):
                try:
                    return self._commit_rewind(rec, entries, target, changes, code, conversation)
                except CommitConflict:  # (a background fork committed meanwhile: read again and re-apply)
                    rec, entries, target = self._rewind_target(sid, to)
        raise LockTimeout(f"rewind: session {sid[:8]} changed {MAX_CONFLICTS} times while it committed; try again.")

    def _rewind_target(self, sid: str, to: str) -> tuple[SessionRecord, list, UserEntry]:
        rec = self.store.get_session(sid)
        if rec.state is not State.EXTRACTING:  # (the extraction goes on beside: nobody waits for memory)
            require_idle(rec, "rewind")
        queued = self.store.inbox(sid)
        if queued:
            raise RewindRefused(f"Cannot rewind session {sid[:8]}: {len(queued)} message(s) are queued to run "
                                f"next. Let them run, or drop them (/clear-queue, `mainsail cancel --clear "
                                f"{sid[:8]}`).")
        entries = self.store.entries(sid)
        target = next((e for e in rewind_points(entries) if e.uuid == to), None)
        if target is None:
            raise RewindRefused(f"Cannot rewind session {sid[:8]} to message {to!r}: it is not one of the messages "
                                f"the conversation holds now (see `mainsail rewind {sid[:8]} --list`).")
        return rec, entries, target

    def _plan_code(self, rec: SessionRecord, entries: list, target: UserEntry, force: bool) -> list[FileChange]:
        files = self.store.file_checkpoints(rec.id)
        changes = plan_restore(files, turns_from(files, entries, target.uuid))
        todo = [c for c in changes if c.action in ("write", "delete")]
        if todo and not os.path.isdir(rec.workspace):
            raise RewindRefused(f"Cannot rewind the code of session {rec.id[:8]}: its workspace {rec.workspace} is "
                                "not on this machine. Run the rewind where the workspace is, or use --conversation.")
        moved = [c.path for c in todo if c.moved]
        if moved and not force:
            raise RewindRefused(
                f"Cannot rewind the code of session {rec.id[:8]}: {len(moved)} file(s) changed since the session last "
                f"edited them (by you, another program or a Bash command): {', '.join(moved)}. Restoring would "
                "overwrite those changes. Nothing was changed. Use --force to restore them anyway, or --conversation "
                "to rewind only the conversation.", changed=moved)
        return changes

    def _commit_rewind(self, rec: SessionRecord, entries: list, target: UserEntry, changes: list[FileChange],
                       code: bool, conversation: bool) -> Rewound:
        tx = Tx(rec)
        if rec.state is State.EXTRACTING:
            tx.fire("extracted")
        entry = RewindEntry(
            session_id=rec.id, to=target.uuid, conversation=conversation, code=code, prompt=message_text(target),
            restored=[c.path for c in changes if c.action == "write"],
            deleted=[c.path for c in changes if c.action == "delete"],
            skipped=[f"{c.path}: {c.why}" for c in changes if c.action == "skip"])
        tx.add(entry)
        if conversation:
            entry.parent_uuid = target.parent_uuid  # the next message continues from before the one taken back
            self._follow_conversation(tx, model_view([*entries, entry]))
        self.committer.commit(tx)
        return Rewound(entry, changes)

    def _follow_conversation(self, tx: Tx, view: list) -> None:
        """The record as the conversation ``view`` leaves it: context estimate, task list, memory notes."""
        rec = tx.rec
        messages = [e for e in view if isinstance(e, (UserEntry, AssistantEntry))]
        rec.context_tokens = estimate_tokens(rec.system_context + rec.user_context) + sum(
            estimate_tokens(e.message.model_dump(mode="json")) for e in messages)
        rec.context_added = 0
        rec.run_prompt_uuid = None
        rec.todos = _last_todos(messages)
        kept = {e.uuid for e in view}
        if rec.extract_cursor is not None and rec.extract_cursor not in kept:
            rec.extract_cursor = view[-1].uuid if view else None  # what is left was all before it: covered
        running = rec.memory_step
        if running:  # an update reading the messages taken back must not land
            try:
                tx.supersede(self.store.get_step(rec.id, running))
            except StepNotFound:
                pass
            tx.checkpoints_cleared.append(running)
            rec.memory_step, rec.memory_trailing = None, False
        if rec.memory_covers is not None and rec.memory_covers not in kept:
            tx.memory_doc = ""  # notes of a conversation that is no longer: written again from what is left
            rec.memory_covers, rec.memory_tokens, rec.memory_tool_calls = None, None, 0


def _last_todos(messages: list) -> list[dict]:
    for e in reversed(messages):
        if isinstance(e, AssistantEntry):
            for use in reversed(e.message.tool_uses()):
                if use.name == "TodoWrite" and isinstance(use.input.get("todos"), list):
                    return list(use.input["todos"])
    return []


def _restore_context(rec: SessionRecord):
    from workflows.tools.base import ToolContext

    return ToolContext(workspace=rec.workspace, session_id=rec.id, home=rec.home,
                       additional_dirs=tuple(rec.additional_directories))
