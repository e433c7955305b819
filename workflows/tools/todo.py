"""TodoWrite: Claude Code's task list, kept in the session record.

The model sends the whole list each time (Claude Code's schema: ``todos``, each with ``content``,
``status`` pending / in_progress / completed, and ``activeForm``). It touches no file, so it needs no
worker: the engine applies it where the model's reply is committed (:attr:`Tool.inline`), in the
same transaction as the reply, and `watch`, `show` and interactive mode show the list as a checklist.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register

RESULT = ("Todos have been modified successfully. Ensure that you continue to use the todo list to track your "
          "progress. Please proceed with the current tasks if applicable")

DESCRIPTION = (
    "Use this tool to create and manage a structured task list for your current coding session. This helps you "
    "track progress, organize complex tasks, and demonstrate thoroughness to the user.\n\n"
    "Use it for complex multi-step tasks (3 or more distinct steps), when the user gives several tasks, and to "
    "mark progress as you work: exactly one task in_progress at a time, and mark each task completed as soon as "
    "it is done. Skip it for a single trivial task. Send the whole list each time.")

MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☒"}


class TodoItem(BaseModel):
    content: str = Field(min_length=1, description="What to do, in the imperative: \"Run the tests\".")
    status: Literal["pending", "in_progress", "completed"]
    activeForm: str = Field(min_length=1, description="The same, as it is being done: \"Running the tests\".")


class TodoWriteInput(ToolInput):
    todos: list[TodoItem] = Field(description="The updated todo list")


@register
class TodoWriteTool(Tool):
    name = "TodoWrite"
    description = DESCRIPTION
    input_model = TodoWriteInput
    read_only = True  # it changes the session's own list, never the workspace
    idempotent = True
    inline = True

    def summary(self, args: dict) -> str:
        todos = args.get("todos") if isinstance(args, dict) else None
        return f"{len(todos)} todo{'s' if len(todos) != 1 else ''}" if isinstance(todos, list) else ""

    def run(self, args: TodoWriteInput, ctx: ToolContext) -> ToolOutput:
        return output(args.todos)

    def apply(self, rec, args: TodoWriteInput) -> ToolOutput:
        rec.todos = [t.model_dump() for t in args.todos]
        return output(args.todos)


def output(todos: list[TodoItem]) -> ToolOutput:
    done = sum(t.status == "completed" for t in todos)
    return ToolOutput(content=RESULT, display=f"{done}/{len(todos)} done")


def checklist(todos) -> list[str]:
    """One line per todo: ``☒ Run the tests`` (the active form for the one in progress)."""
    return [f"{MARKS.get(t.status, '☐')} {t.activeForm if t.status == 'in_progress' else t.content}" for t in todos]


__all__ = ["TodoItem", "TodoWriteTool", "checklist", "output"]
