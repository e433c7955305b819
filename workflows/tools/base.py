"""The tool contract: a pydantic input model, a run function, and a registry.

A tool never raises to its caller: :func:`run_tool` turns every
:class:`~workflows.exceptions.ToolError` (and any unexpected exception) into an
error :class:`ToolOutput`, which becomes an ``is_error`` tool_result for the
model. The session goes on.

The model that writes tool input is not trusted: :class:`ToolInput` refuses a
NUL byte or a lone surrogate in any string field (neither can be a path, and
neither can be sent on as UTF-8), and :class:`ToolOutput` replaces lone
surrogates (from file names that are not UTF-8) so a result can always be stored
and sent.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from workflows.exceptions import ToolError, ToolInputError, ToolRefused
from workflows.models import Usage
from workflows.permissions.rules import paths


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
    # Directories outside the workspace that count as inside it (--add-dir), resolved physically.
    additional_dirs: tuple[str, ...] = ()
    # The settings files' env, for Bash commands (workflows.sessions.session_keys).
    env: dict[str, str] = field(default_factory=dict)
    # The web tools' model calls and cache (workflows.tools.web.access.WebAccess); None: no web tools here.
    web: Any = None
    # The session's background shells (workflows.shells.SessionShells); None: no background commands here.
    shells: Any = None
    # The tool call being run (a retry of it after its worker died has the same id).
    tool_use_id: str = ""
    # The session's MCP servers on this worker (workflows.mcp.calls.McpCaller); MCP tools only.
    mcp: Any = None
    # A quick run (workflows/steps/tool.py): a quick tool finding more than this many bytes to read raises
    # NotQuick instead of reading them; None: not a quick run.
    quick_bytes: int | None = None
    # A mutating tool step's fence (workflows.steps.fence.CommandFence): its command starts only while the
    # step is ours, and dies before its outcome may be recorded as unknown. None: run as it stands.
    fence: Any = None
    # A git-only Bash line a rule or a person approved (workflows.steps.tool.git_writes): its sandbox leaves
    # .git writable (but .git/config and .git/hooks); every other command sees .git read-only.
    git_writes: bool = False
    # The file checkpoints of /rewind (workflows.edits.checkpoints.Checkpoints): every file write keeps the file as
    # it was first; None: nothing is kept (tests, the scripted demo, a rewind's own restore).
    checkpoints: Any = None

    def __post_init__(self) -> None:
        self.workspace = Path(os.path.realpath(self.workspace))
        self.cwd = Path(os.path.realpath(self.cwd)) if self.cwd else self.workspace
        self.home = self.home or os.path.expanduser("~")
        self.area = paths.WorkArea(str(self.workspace), self.additional_dirs)

    def resolve(self, path: str, what: str = "path") -> Path:
        """Resolve ``path`` with the permission checker's resolver and refuse it outside the workspace.

        Raises:
            ToolError: the path cannot be resolved, or is outside the session's workspace.
        """
        try:
            real = Path(paths.resolve(path, cwd=str(self.cwd), home=self.home))
        except paths.Unresolvable as exc:
            raise ToolError(f"{what} {path!r} cannot be used: {exc}. Use a plain path under the workspace.") from None
        if not paths.inside(str(real), self.area):
            added = f" or the added directories ({', '.join(self.area.dirs[1:])})" if self.area.dirs[1:] else ""
            raise ToolError(
                f"{what} {path!r} is outside the session's workspace {self.workspace}{added}: "
                "only files inside the workspace can be used. Use a path under the workspace."
            )
        return real


_SURROGATE = re.compile("[\ud800-\udfff]")
# The error types of ToolInput's text check: the message follows the field's name ("file_path contains ...").
_TEXT_ERRORS = frozenset({"nul_byte", "lone_surrogate"})


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD.

    ``os`` decodes a file name that is not UTF-8 with surrogates (``b"\\xff"`` becomes
    ``"\\udcff"``); such a string cannot be encoded as UTF-8 for Redis or the API.
    """
    return _SURROGATE.sub("\ufffd", text)


def raise_if_cancelled(ctx: ToolContext, tool: str) -> None:
    """Stop a long tool run (a walk, a search) once the session's cancel is set.

    Raises:
        ToolError: ``ctx.cancel`` is set.
    """
    if ctx.cancel.is_set():
        raise ToolError(f"{tool} was interrupted: the session was cancelled before it finished. No results.")


class ToolOutput(BaseModel):
    """What a tool returns: the text for the model, and a short line for the user."""

    content: str
    is_error: bool = False
    display: str = ""
    # Content blocks the model gets instead of ``content`` (Read of an image or a PDF: workflows.tools.media),
    # in the Messages API's shape; ``content`` then says in a line what they hold, for hooks and front ends.
    blocks: list[dict[str, Any]] | None = None
    # A model call the tool made (WebFetch, WebSearch): charged to the session with the result.
    usage: Usage | None = None
    model: str | None = None
    duration_ms: int = 0
    # A text the model gets after the result, as a block of its own (a skill's instructions: workflows.tools.skill).
    followup: str | None = None
    # The tool cut its output at ``ToolContext.max_output_chars`` (its content then ends with a note of what
    # it dropped): a saved result is then not the whole output, and its note says so.
    truncated: bool = False
    # What Claude Code sends as a tool result's ``tool_use_result`` (stream-json, the SDK's UserMessage): Read
    # ``{"type": "text", "file": {...}}``, Edit, Write and Bash their own objects; None: the text (an error's
    # as ``Error: ...``). Never sent to the model.
    result: dict[str, Any] | str | None = None
    # The call was refused by a permission rule, mode, person or hook, not run (stream-json's
    # ``system/permission_denied`` line).
    denied: bool = False

    @field_validator("content", "display")
    @classmethod
    def _sendable(cls, text: str) -> str:
        return clean_text(text)


class NotQuick(Exception):
    """A quick run of a call (``ToolContext.quick_bytes``) stopped before its work: too much to read
    there. The call goes to a tool step instead."""


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
    # Needs no worker (it changes only the session record, e.g. TodoWrite): applied where the reply is committed.
    inline: ClassVar[bool] = False
    # An inline tool that reads the session's commands and skills: ``apply(rec, args, commands=...)`` (Skill).
    reads_commands: ClassVar[bool] = False
    # Starts a child session (Task): the engine runs it, never a tools worker (workflows.engine.subagents).
    subagent: ClassVar[bool] = False
    # Read-only and cheap: a model step whose worker serves the tools queue runs such a call itself,
    # before the commit of its reply (workflows/steps/tool.py); it honours ``ToolContext.quick_bytes``.
    quick: ClassVar[bool] = False

    def validate(self, raw: Any) -> Any:
        """The model's input for this tool, validated (what :meth:`run` gets).

        Raises:
            ToolInputError: not a JSON object, or input that does not match the schema; the
                message lists each bad field so the model can correct its call.
        """
        if not isinstance(raw, dict):
            raise ToolInputError(f"{self.name} input must be a JSON object, got {type(raw).__name__}.")
        try:
            return self.input_model.model_validate(raw)
        except ValidationError as exc:
            raise ToolInputError(f"Invalid input for {self.name}: " + "; ".join(_problems(exc))) from None

    def run(self, args: Any, ctx: ToolContext) -> ToolOutput:  # pragma: no cover - abstract
        raise NotImplementedError

    def apply(self, rec: Any, args: Any) -> ToolOutput:  # pragma: no cover - inline tools only
        """An inline tool's effect on the session record ``rec``, and its result (see ``inline``)."""
        raise NotImplementedError

    def summary(self, args: dict[str, Any]) -> str:
        """The argument shown in ``⏺ Name(summary)``; raw input, so it works on invalid input too."""
        for key in ("file_path", "notebook_path", "pattern", "command", "path", "bash_id", "shell_id"):
            if key in args:
                return clean_text(str(args[key]))
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
    """Base of tool input models: unknown fields are refused, as the API schema says.

    Every string, however deeply nested, is checked for a NUL byte and a lone
    surrogate (JSON can carry ``"\\u0000"`` and ``"\\ud800"``): the kernel refuses
    the first in a path and UTF-8 cannot encode the second, so either would fail
    deep inside a tool. Here it fails as a field error the model can act on.
    """

    model_config = ConfigDict(extra="forbid")

    @field_validator("*")
    @classmethod
    def _plain_text(cls, value: Any) -> Any:
        found = _bad_text(value, "")
        if found is not None:
            kind, where, message = found
            raise PydanticCustomError(kind, "{message}", {"where": where, "message": message})
        return value


def _bad_text(value: Any, where: str) -> tuple[str, str, str] | None:
    """``(error type, sub-path, message)`` for the first bad string in ``value``, or None."""
    if isinstance(value, str):
        return _text_problem(value, where)
    if isinstance(value, BaseModel):
        items: Any = value.__dict__.items()
    elif isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        sub = f"{where}.{key}"
        found = (_text_problem(key, sub) if isinstance(key, str) else None) or _bad_text(item, sub)
        if found is not None:
            return found
    return None


def _text_problem(text: str, where: str) -> tuple[str, str, str] | None:
    nul = text.find("\0")
    if nul >= 0:
        return ("nul_byte", where, f"contains a NUL byte (\\x00) at character {nul}; "
                "paths and text cannot hold NUL bytes: remove it")
    bad = _SURROGATE.search(text)
    if bad is not None:
        code = f"\\u{ord(bad.group()):04x}"
        return ("lone_surrogate", where, f"contains a lone surrogate ({code}) at character {bad.start()}, "
                "which is not valid Unicode text; paths and text cannot hold one: remove it or write "
                "the character it was meant to be")
    return None


REGISTRY: dict[str, Tool] = {}
_SCHEMAS: dict[str, dict[str, Any]] = {}
#: Other names a call may give a registered tool (``Agent`` for ``Task``: workflows/tools/task.py).
ALIASES: dict[str, str] = {}


def register(tool_cls: type[Tool]) -> type[Tool]:
    REGISTRY[tool_cls.name] = tool_cls()
    return tool_cls


def get_tool(name: str) -> Tool:
    """Raises ToolInputError naming the available tools when ``name`` is unknown."""
    try:
        return REGISTRY[ALIASES.get(name, name)]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise ToolInputError(f"Unknown tool {name!r}. Available tools: {known}.") from None


def validate_input(name: str, raw: Any) -> BaseModel:
    """Validate the model's input for registered tool ``name`` (see :meth:`Tool.validate`).

    Raises:
        ToolInputError: unknown tool, or input that does not match the schema.
    """
    return get_tool(name).validate(raw)


def _problems(exc: ValidationError) -> list[str]:
    """One line per bad field: ``"limit: Input should be greater than or equal to 1"``."""
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "input"
        if err["type"] in _TEXT_ERRORS:
            problems.append(f"{_printable(loc + err['ctx']['where'])} {err['msg']}")
        else:
            problems.append(f"{_printable(loc)}: {err['msg']}")
    return problems


def _printable(loc: str) -> str:
    # A location may name a key the model sent, itself holding a NUL byte or a surrogate.
    return clean_text(loc).replace("\0", "\\x00")


def refused_output(text: str, **fields: Any) -> ToolOutput:
    """The result of a call refused before it ran (input that does not validate, the tool's own checks): in
    ``<tool_use_error>`` tags for the model, ``Error: ...`` in ``tool_use_result``, as Claude Code 2.1.332 sends it."""
    return ToolOutput(content=f"<tool_use_error>{text}</tool_use_error>", is_error=True, result=f"Error: {text}",
                      **{"display": text.splitlines()[0][:120] if text else "", **fields})


def run_tool(name: str, raw: Any, ctx: ToolContext, tool: Tool | None = None) -> ToolOutput:
    """Validate and run one tool call; every failure becomes an error :class:`ToolOutput`.

    ``tool``: the tool itself when it is not a registered one (a session's MCP tool).

    Raises:
        NotQuick: a quick run (``ctx.quick_bytes``) found the call is not quick after all.
    """
    try:
        tool = tool or get_tool(name)
        return tool.run(tool.validate(raw), ctx)
    except NotQuick:
        raise
    except (ToolInputError, ToolRefused) as exc:
        return refused_output(str(exc))
    except ToolError as exc:
        text = str(exc) or f"{name} failed."
        return ToolOutput(content=text, is_error=True, display=text.splitlines()[0][:120])
    except Exception as exc:  # a bug in a tool must not kill the session
        msg = f"{name} failed unexpectedly: {type(exc).__name__}: {exc}"
        return ToolOutput(content=msg, is_error=True, display=msg[:120])
