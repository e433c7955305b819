"""The two memories: a session's running summary, and a project's durable records.

* **Session memory** is one markdown document per session (``session:{sid}:memory``),
  kept by a background fork after model turns that pass :func:`should_update_session_memory`.
  Compaction uses it first, saving a summarisation call.
* **Auto-memory** is a set of records per project (``project:{pid}:memory``, the
  project being the workspace's git root), written by the extraction fork after a
  final answer (or directly by the main agent with ``MemoryWrite``) and indexed in
  a ``MEMORY.md`` that new sessions of the project start with.

Everything here is pure: the records are kept in Redis by :class:`workflows.store.memory.ProjectMemory`
(``store.project_memory(...)``), and the forks that write them live in :mod:`workflows.forks` (extraction, session_memory).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, ValidationError

from workflows.exceptions import MemoryRecordError
from workflows.frontmatter import split_frontmatter, yaml_mapping
from workflows.models.valid_text import ValidJson

# =========================================================================== session memory: when


@dataclass(frozen=True)
class MemoryThresholds:
    """When a session-memory update is due (``MAINSAIL_SESSION_MEMORY_*``)."""

    init_tokens: int = 10_000  # the context must pass this before the first update
    update_tokens: int = 5_000  # and grow by this much between updates (always required)
    tool_calls: int = 10  # and either this many tool calls since the last update ...


def should_update_session_memory(tokens: int, tokens_at_last: int | None, tool_calls_since: int,
                                 last_turn_had_tool_calls: bool, t: MemoryThresholds = MemoryThresholds()) -> bool:
    """Whether to update the session's memory after a model turn (pure).

    ``tokens``: the context size now; ``tokens_at_last``: at the last update (None: never
    updated). The token condition is always required: past ``init_tokens`` before the
    first update, and grown by ``update_tokens`` since the last. Then either enough tool
    calls happened since, or the last assistant turn made none (a natural break).
    """
    if tokens_at_last is None and tokens < t.init_tokens:
        return False
    if tokens - (tokens_at_last or 0) < t.update_tokens:
        return False
    return tool_calls_since >= t.tool_calls or not last_turn_had_tool_calls


# =========================================================================== session memory: what

SESSION_MEMORY_TEMPLATE = """\
# Session Title
_A short and distinctive 5-10 word descriptive title for the session_

# Current State
_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._

# Task specification
_What did the user ask to build? Any design decisions or other explanatory context_

# Files and Functions
_What are the important files? In short, what do they contain and why are they relevant?_

# Workflow
_What bash commands are usually run and in what order? How to interpret their output if not obvious?_

# Errors & Corrections
_Errors encountered and how they were fixed. What did the user correct? What approaches failed and should not be tried again?_

# Codebase and System Documentation
_What are the important system components? How do they work/fit together?_

# Learnings
_What has worked well? What has not? What to avoid? Do not duplicate items from other sections_

# Key results
_If the user asked a specific output such as an answer to a question, a table, or other document, repeat the exact result here_

# Worklog
_Step by step, what was attempted, done? Very terse summary for each step_
"""


def session_memory_path(sid: str) -> str:
    """The name the session-memory fork edits the document by (it lives in Redis, not on disk)."""
    return f"/mainsail/sessions/{sid}/memory.md"


def has_content(doc: str | None) -> bool:
    """A document worth compacting with: present, and not the bare template."""
    return bool(doc and doc.strip() and doc.strip() != SESSION_MEMORY_TEMPLATE.strip())


# =========================================================================== auto-memory records

MemoryType = Literal["user", "feedback", "project", "reference"]
MEMORY_TYPES: tuple[str, ...] = ("user", "feedback", "project", "reference")
INDEX_NAME = "MEMORY"
_NAME = re.compile(r"\A[a-z0-9][a-z0-9_-]{0,63}\Z")


class MemoryRecord(ValidJson):
    name: str
    description: str
    type: MemoryType
    body: str = ""
    updated_at: float = Field(default_factory=time.time)
    session_id: str | None = None  # the session that wrote it last

    def markdown(self) -> str:
        """The record as Claude Code stores one: YAML frontmatter, then the body."""
        import yaml  # (where a record is written: a client that commits a prompt does not load it)

        head = yaml.safe_dump({"name": self.name, "description": self.description, "type": self.type},
                              sort_keys=False, allow_unicode=True, width=1000)
        body = self.body.strip()
        return f"---\n{head}---\n" + (f"\n{body}\n" if body else "")


def check_name(name: str) -> str:
    """Raises MemoryRecordError unless ``name`` is a valid record name (it is also its file name)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise MemoryRecordError(
            f"Invalid memory name {name!r}: use 1-64 lowercase letters, digits, '-' or '_', starting with a "
            "letter or digit (for example 'user-role' or 'feedback_testing').")
    if name.upper() == INDEX_NAME:
        raise MemoryRecordError("The name 'memory' is reserved for the MEMORY.md index; choose another.")
    return name


def make_record(name: str, description: str, type: str, body: str, session_id: str | None = None) -> MemoryRecord:
    """A validated record. Raises MemoryRecordError naming the bad field and the allowed values."""
    check_name(name)
    if type not in MEMORY_TYPES:
        raise MemoryRecordError(f"Invalid memory type {type!r} for {name!r}: use one of {', '.join(MEMORY_TYPES)}.")
    description = " ".join((description or "").split())
    if not description:
        raise MemoryRecordError(f"Memory {name!r} needs a one-line description (it is what the index shows).")
    return MemoryRecord(name=name, description=description, type=type, body=(body or "").strip(),
                        session_id=session_id)


def parse_markdown(text: str, *, where: str, default_name: str | None = None) -> MemoryRecord:
    """A record from markdown with YAML frontmatter (``name``, ``description``, ``type``).

    Raises:
        MemoryRecordError: no frontmatter, bad YAML, or a missing or invalid field; ``where``
            (a file name) is named in the message.
    """
    split = split_frontmatter(text)
    if split is None:
        raise MemoryRecordError(f"{where}: no YAML frontmatter. A memory file starts with '---', then the lines "
                                "'name: ...', 'description: ...' and 'type: user|feedback|project|reference', "
                                "then '---'.")
    meta = yaml_mapping(split[0], where, MemoryRecordError)
    name = str(meta.get("name") or default_name or "")
    try:
        return make_record(name, str(meta.get("description") or ""), str(meta.get("type") or ""),
                           split[1])
    except MemoryRecordError as exc:
        raise MemoryRecordError(f"{where}: {exc}") from None


def index_markdown(records: list[MemoryRecord]) -> str:
    """``MEMORY.md``: one line per record, grouped by type (Claude Code's index layout)."""
    if not records:
        return ""
    lines = ["# Memory index", ""]
    for kind in MEMORY_TYPES:
        group = sorted((r for r in records if r.type == kind), key=lambda r: r.name)
        for r in group:
            lines.append(f"- [{r.name}]({r.name}.md) ({r.type}): {r.description}")
    return "\n".join(lines) + "\n"


# =========================================================================== projects


def project_root(workspace: str) -> str:
    """The project a workspace belongs to: its git root, else the workspace itself."""
    from workflows.git.locate import may_hold_repository

    if not may_hold_repository(workspace):
        return os.path.realpath(workspace)  # (libgit2 costs ~30 ms to load: only where there is a repository)
    from workflows.git import state as git_state

    return git_state.toplevel(workspace) or os.path.realpath(workspace)


def project_id(root: str) -> str:
    """A key-safe id for a project root: a readable tail of the path and a hash of all of it."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", root).strip("-")[-48:] or "root"
    return f"{slug}-{hashlib.sha256(root.encode()).hexdigest()[:10]}"


def memory_context(index: str) -> str:
    """The ``autoMemory`` section new sessions start with (empty when the project has no records)."""
    if not index.strip():
        return ""
    return ("Memories saved from earlier sessions in this project. MEMORY.md indexes them; read a record "
            "with MemoryRead when it is relevant, and save what the user asks you to remember with "
            "MemoryWrite.\n\nContents of MEMORY.md:\n\n" + index.strip())


def validation_message(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())
