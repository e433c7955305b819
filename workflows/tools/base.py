"""The tool contract: a pydantic input model, a run function, and a registry.

A tool never raises to its caller: :func:`run_tool` turns every
:class:`~workflows.exceptions.ToolError` (and any unexpected exception) into an
error :class:`ToolOutput`, which becomes an ``is_error`` tool_result for the
model. The session goes on.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from workflows.exceptions import ToolError, ToolInputError
from workflows.permissions import paths


class FileReadTracker(Protocol):
    """Remembers which files the session has read, and their mtime at that read."""

    def get(self, path: str) -> float | None: ...

    def set(self, path: str, mtime: float) -> None: ...


class MemoryTracker:
    """A :class:`FileReadTracker` in a dict, for tests and the scripted demo."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}

    def get(self, path: str) -> float | None:
        return self._seen.get(path)

    def set(self, path: str, mtime: float) -> None:
        self._seen[path] = mtime


@dataclass
class ToolContext:
    """What a tool may touch: the session's workspace, its read-tracker, its limits."""

    workspace: Path
    session_id: str = "local"
    cwd: Path | None = None
    home: str = ""  # the session's home, for ~ in paths (the permission checker uses the same)
    files_read: FileReadTracker = field(default_factory=MemoryTracker)
    cancel: threading.Event = field(default_factory=threading.Event)
    bash_default_timeout_ms: int = 120_000
    bash_max_timeout_ms: int = 600_000
    max_output_chars: int = 30_000
    memory: Any = None  # the project's ProjectMemory when auto-memory is on (memory tools only)
    # True for a resolved path the session's Read deny rules cover: Glob and Grep leave it out.
    read_denied: Callable[[str], bool] | None = None
    # The OS sandbox Bash runs in (workflows.permissions.sandbox); None: no sandbox.
    sandbox: Any = None

    def __post_init__(self) -> None:
        self.workspace = Path(os.path.realpath(self.workspace))
        self.cwd = Path(os.path.realpath(self.cwd)) if self.cwd else self.workspace
        self.home = self.home or os.path.expanduser("~")

    def resolve(self, path: str, what: str = "path") -> Path:
        """Resolve ``path`` with the permission checker's resolver and refuse it outside the workspace.

        Raises:
            ToolError: the path cannot be resolved, or is outside the session's workspace.
        """
        try:
            real = Path(paths.resolve(path, cwd=str(self.cwd), home=self.home))
        except paths.Unresolvable as exc:
            raise ToolError(f"{what} {path!r} cannot be used: {exc}. Use a plain path under the workspace.") from None
        if real != self.workspace and not real.is_relative_to(self.workspace):
            raise ToolError(
                f"{what} {path!r} is outside the session's workspace {self.workspace}: "
                "only files inside the workspace can be used. Use a path under the workspace."
            )
        return real


class ToolOutput(BaseModel):
    """What a tool returns: the text for the model, and a short line for the user."""

    content: str
    is_error: bool = False
    display: str = ""


class Tool:
    """Base class of every tool. Subclasses set the class attributes and :meth:`run`."""

    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False
    # Safe to run again after a worker died mid-run (the same input gives the same end state).
    idempotent: ClassVar[bool] = False
    # Reads or writes the project's memory records only (never the workspace).
    memory_tool: ClassVar[bool] = False

    def run(self, args: Any, ctx: ToolContext) -> ToolOutput:  # pragma: no cover - abstract
        raise NotImplementedError

    def summary(self, args: dict[str, Any]) -> str:
        """The argument shown in ``⏺ Name(summary)``; raw input, so it works on invalid input too."""
        for key in ("file_path", "pattern", "command", "path"):
            if key in args:
                return str(args[key])
        return ""

    def schema(self) -> dict[str, Any]:
        """The tool definition sent to the Messages API (built once per process: it never changes)."""
        cached = _SCHEMAS.get(self.name)
        if cached is None:
            cached = _SCHEMAS[self.name] = {
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_model.model_json_schema(),
            }
        return dict(cached)


class ToolInput(BaseModel):
    """Base of tool input models: unknown fields are refused, as the API schema says."""

    model_config = ConfigDict(extra="forbid")


REGISTRY: dict[str, Tool] = {}
_SCHEMAS: dict[str, dict[str, Any]] = {}


def register(tool_cls: type[Tool]) -> type[Tool]:
    REGISTRY[tool_cls.name] = tool_cls()
    return tool_cls


def get_tool(name: str) -> Tool:
    """Raises ToolInputError naming the available tools when ``name`` is unknown."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise ToolInputError(f"Unknown tool {name!r}. Available tools: {known}.") from None


def validate_input(name: str, raw: Any) -> BaseModel:
    """Validate the model's input for tool ``name``.

    Raises:
        ToolInputError: unknown tool, or input that does not match the schema; the
            message lists each bad field so the model can correct its call.
    """
    tool = get_tool(name)
    if not isinstance(raw, dict):
        raise ToolInputError(f"{name} input must be a JSON object, got {type(raw).__name__}.")
    try:
        return tool.input_model.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "input"
            problems.append(f"{loc}: {err['msg']}")
        raise ToolInputError(f"Invalid input for {name}: " + "; ".join(problems)) from None


def run_tool(name: str, raw: Any, ctx: ToolContext) -> ToolOutput:
    """Validate and run one tool call; every failure becomes an error :class:`ToolOutput`."""
    try:
        args = validate_input(name, raw)
        return REGISTRY[name].run(args, ctx)
    except ToolError as exc:
        return ToolOutput(content=str(exc), is_error=True, display=str(exc).splitlines()[0][:120])
    except Exception as exc:  # a bug in a tool must not kill the session
        msg = f"{name} failed unexpectedly: {type(exc).__name__}: {exc}"
        return ToolOutput(content=msg, is_error=True, display=msg[:120])
