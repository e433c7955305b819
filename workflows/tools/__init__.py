"""Claude Code's core tools (Task, Bash, Glob, Grep, Read, Edit, MultiEdit, Write, NotebookEdit, WebFetch,
TodoWrite, WebSearch, BashOutput, KillShell), the memory tools, and StructuredOutput (offered only with
--json-schema: workflows/tools/structured.py).

Importing this package registers all of them in :data:`REGISTRY`. The memory
tools (MemoryRead, MemoryWrite, MemoryDelete) are offered only where auto-memory
is on.
"""

from __future__ import annotations

from typing import Any

from workflows.tools import (  # noqa: F401  (registers)
    background,
    bash,
    edit,
    glob,
    grep,
    memory_tools,
    multi_edit,
    notebook_edit,
    read,
    skill,
    structured,
    task,
    todo,
    web,
    write,
)
from workflows.tools.base import (
    REGISTRY,
    MemoryTracker,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
    get_tool,
    run_tool,
    validate_input,
)
from workflows.tools.bash import kill_process_group

TOOL_ORDER = ("Task", "Bash", "Glob", "Grep", "Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "WebFetch",
              "TodoWrite", "WebSearch", "BashOutput", "KillShell", "TaskStop", "Skill")
MEMORY_TOOLS = memory_tools.MEMORY_TOOL_NAMES


def tool_schemas(names: list[str] | None = None) -> list[dict[str, Any]]:
    """The Messages API tool definitions, in a stable order (Claude Code's, then by name).

    ``names`` None: the core tools (:data:`TOOL_ORDER`).

    Raises:
        ToolInputError: ``names`` holds a tool that is not registered.
    """
    wanted = list(TOOL_ORDER) if names is None else [get_tool(n).name for n in names]
    rank = {name: i for i, name in enumerate(TOOL_ORDER)}
    ordered = sorted(dict.fromkeys(wanted), key=lambda n: (rank.get(n, len(rank)), n))
    return [REGISTRY[n].schema() for n in ordered]


__all__ = [
    "MEMORY_TOOLS",
    "REGISTRY",
    "TOOL_ORDER",
    "MemoryTracker",
    "Tool",
    "ToolContext",
    "ToolInput",
    "ToolOutput",
    "get_tool",
    "kill_process_group",
    "run_tool",
    "tool_schemas",
    "validate_input",
]
