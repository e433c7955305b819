"""MemoryRead, MemoryWrite, MemoryDelete: the project's auto-memory records, for the agent.

The records live in Redis (:class:`workflows.store.memory.ProjectMemory`), so every
worker sees the same memory. The main agent gets these tools when auto-memory
is on for its session; the extraction fork gets them with read-only tools.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.memory.records import INDEX_NAME, make_record
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register

TYPES_HELP = (
    "Types: 'user' (the user's role, goals, expertise), 'feedback' (corrections and confirmed ways of "
    "working, with why and how to apply them), 'project' (ongoing work and decisions not recorded in git), "
    "'reference' (where information lives: dashboards, tickets, docs)."
)


def _memory(ctx: ToolContext):
    if ctx.memory is None:
        raise ToolError("Auto-memory is off for this session, so memory records cannot be used.")
    return ctx.memory


class MemoryReadInput(ToolInput):
    name: str = Field(description="The record's name, or 'MEMORY' for the index of all records.")


@register
class MemoryReadTool(Tool):
    name = "MemoryRead"
    description = ("Read one of this project's memory records by name (the names are listed in MEMORY.md), "
                   "or the MEMORY.md index itself with name 'MEMORY'.")
    input_model = MemoryReadInput
    read_only = True
    idempotent = True
    memory_tool = True

    def summary(self, args):
        return str(args.get("name", ""))

    def run(self, args: MemoryReadInput, ctx: ToolContext) -> ToolOutput:
        mem = _memory(ctx)
        if args.name.removesuffix(".md").upper() == INDEX_NAME:
            text = mem.index()
            return ToolOutput(content=text or "MEMORY.md is empty: this project has no memory records yet.",
                              display="MEMORY.md")
        rec = mem.require(args.name.removesuffix(".md"))
        return ToolOutput(content=rec.markdown(), display=f"{rec.name} ({rec.type})")


class MemoryWriteInput(ToolInput):
    name: str = Field(description="Short kebab-case name, unique in the project; writing it again replaces it.")
    type: Literal["user", "feedback", "project", "reference"] = Field(description=TYPES_HELP)
    description: str = Field(description="One line: what this memory is about (shown in MEMORY.md).")
    body: str = Field(description="The memory itself, in markdown. For feedback: the rule, why, and how to apply it.")


@register
class MemoryWriteTool(Tool):
    name = "MemoryWrite"
    description = ("Save a durable memory record for this project, for future sessions: create it, or replace "
                   "the record of the same name. " + TYPES_HELP + " Do not save code patterns, file paths, git "
                   "history, debugging recipes, anything already in CLAUDE.md, or the state of the current task.")
    input_model = MemoryWriteInput
    read_only = False
    idempotent = True  # the same input gives the same record
    memory_tool = True

    def summary(self, args):
        return f"{args.get('name', '')} ({args.get('type', '')})"

    def run(self, args: MemoryWriteInput, ctx: ToolContext) -> ToolOutput:
        mem = _memory(ctx)
        existed = mem.get(args.name) is not None if args.name else False
        rec = make_record(args.name, args.description, args.type, args.body, ctx.session_id)
        mem.put(rec)
        verb = "Updated" if existed else "Saved"
        return ToolOutput(content=f"{verb} memory {rec.name!r} ({rec.type}).", display=f"{verb} memory {rec.name}")


class MemoryDeleteInput(ToolInput):
    name: str = Field(description="The record to delete (wrong or out of date).")


@register
class MemoryDeleteTool(Tool):
    name = "MemoryDelete"
    description = "Delete one of this project's memory records that is wrong or out of date."
    input_model = MemoryDeleteInput
    read_only = False
    idempotent = True
    memory_tool = True

    def summary(self, args):
        return str(args.get("name", ""))

    def run(self, args: MemoryDeleteInput, ctx: ToolContext) -> ToolOutput:
        mem = _memory(ctx)
        mem.require(args.name)
        mem.delete(args.name)
        return ToolOutput(content=f"Deleted memory {args.name!r}.", display=f"Deleted memory {args.name}")


MEMORY_TOOL_NAMES = ("MemoryRead", "MemoryWrite", "MemoryDelete")
