"""A session's entries as the lines Claude Code writes in its own transcript files.

Claude Code keeps each session as ``~/.claude/projects/<sanitized cwd>/<session id>.jsonl``
(workflows/context/claude_copy.py writes Mainsail's there). Its lines are :func:`workflows.context.export.export_entries`'
lines, reshaped where Claude Code's own differ:

* an assistant message is one line per content block (the same ``message.id``; Claude Code writes each block
  as it streams): the last line carries the entry's uuid, the others a uuid derived from it, chained in order,
  so the next entry's ``parentUuid`` (the entry's uuid) is the last line's;
* a tool result's ``user`` line carries ``toolUseResult`` (its structured form where the tool gave one, as
  stream-json's ``tool_use_result``; else the result's text, ``Error: ...`` for an error);
* a compact boundary is Claude Code's: a ``system`` line ``compact_boundary`` that starts a new chain
  (``parentUuid`` null, ``logicalParentUuid`` the one before), with ``compactMetadata``; the summary is the
  ``user`` line the model sees instead of what came before (``isCompactSummary``);
* every line says ``entrypoint: mainsail``.

Mainsail-only entries (state, result, permission, hook, rewind) stay ``system`` lines with their subtype, as in
an export: Claude Code keeps them in the chain and sends none of them to the model.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterator

from workflows.context.assemble import CONTINUE, SUMMARY_INTRO
from workflows.context.export import export_entries
from workflows.models import AssistantEntry, CompactBoundaryEntry, SessionRecord, SummaryEntry, UserEntry

ENTRYPOINT = "mainsail"
#: The namespace of the uuids of an assistant message's lines before its last (uuid5 of ``<entry uuid>/<index>``).
_BLOCK_LINES = uuid.UUID("6f1e0c52-3d0b-4a4e-9a57-8d2f4f0c1b7a")


def claude_lines(entries: list, rec: SessionRecord) -> Iterator[dict]:
    """The Claude Code transcript lines (JSON-able dicts) of ``entries``, in order; see the module docstring."""
    for line, e in zip(export_entries(entries, rec), entries):
        line["entrypoint"] = ENTRYPOINT
        if isinstance(e, AssistantEntry):
            yield from _assistant_lines(line)
        elif isinstance(e, UserEntry):
            yield _user_line(line, e)
        elif isinstance(e, CompactBoundaryEntry):
            yield _boundary_line(line, e)
        elif isinstance(e, SummaryEntry):
            yield _summary_line(line, e)
        else:
            yield line


def block_uuid(entry_uuid: str, index: int) -> str:
    """The uuid of line ``index`` (not the last) of an assistant message's lines."""
    return str(uuid.uuid5(_BLOCK_LINES, f"{entry_uuid}/{index}"))


def _assistant_lines(line: dict) -> Iterator[dict]:
    message = line["message"]
    blocks = message["content"]
    if not isinstance(blocks, list) or len(blocks) < 2:
        yield line
        return
    parent, extras = line["parentUuid"], line.pop("mainsail", None)
    for i, block in enumerate(blocks):
        last = i == len(blocks) - 1
        one = dict(line, parentUuid=parent, message=dict(message, content=[block]))
        one["uuid"] = line["uuid"] if last else block_uuid(line["uuid"], i)
        if last and extras is not None:
            one["mainsail"] = extras
        parent = one["uuid"]
        yield one


def _user_line(line: dict, e: UserEntry) -> dict:
    results = [b for b in e.message.blocks() if getattr(b, "type", "") == "tool_result"]
    if results:
        last = results[-1]
        line["toolUseResult"] = (e.tool_use_result if e.tool_use_result is not None
                                 else f"Error: {last.text}" if last.is_error else last.text)
    return line


def _boundary_line(line: dict, e: CompactBoundaryEntry) -> dict:
    meta: dict[str, Any] = {"trigger": e.trigger, "preTokens": e.pre_tokens}
    line.update(parentUuid=None, logicalParentUuid=e.parent_uuid, subtype="compact_boundary",
                content="Conversation compacted", level="info", isMeta=False, compactMetadata=meta)
    return line


def _summary_line(line: dict, e: SummaryEntry) -> dict:
    """The summary as the user message the model receives (workflows/context/assemble.py ``_intro``)."""
    for key in ("subtype", "content", "level"):
        line.pop(key, None)
    line.update(type="user", message={"role": "user", "content": SUMMARY_INTRO + e.summary + CONTINUE},
                isCompactSummary=True, isVisibleInTranscriptOnly=True, isMeta=False)
    return line


__all__ = ["ENTRYPOINT", "block_uuid", "claude_lines"]
