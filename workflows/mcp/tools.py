"""MCP tools as Mainsail tools: ``mcp__<server>__<tool>``, validated against the server's schema.

An :class:`McpTool` is built from the session's recorded tool list (:mod:`workflows.mcp.catalog`),
never from a live server, so every worker offers, validates and decides the same tools. It is
never read-only (a server's ``readOnlyHint`` is its own claim: Claude Code asks for every MCP tool
without a rule, and so does Mainsail) and never idempotent: a call whose worker died is reported
as of unknown outcome, never sent again blindly.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from workflows.exceptions import McpServerError, ToolError, ToolInputError
from workflows.models.mcp import McpToolDef
from workflows.tools.base import Tool, ToolContext, ToolOutput, _bad_text, clean_text

__all__ = ["McpTool", "PREFIX", "full_name", "is_mcp_name", "to_output", "tool_prefix"]

PREFIX = "mcp__"
MAX_NAME = 64  # the Messages API's limit on a tool's name
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def is_mcp_name(name: str) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def tool_prefix(server: str) -> str:
    """``mcp__server__``: a plugin's ``plugin:P:S`` becomes ``mcp__plugin_P_S__`` (as Claude Code names it)."""
    return f"{PREFIX}{_INVALID.sub('_', server)}__"


def full_name(server: str, tool: str) -> str:
    """``mcp__server__tool``, with characters the API refuses in a tool name replaced by ``_`` (as Claude Code)."""
    return f"{tool_prefix(server)}{_INVALID.sub('_', tool)}"


class McpTool(Tool):
    """One server tool of a session (see the module docstring)."""

    read_only = False
    idempotent = False

    def __init__(self, definition: McpToolDef) -> None:
        self.definition = definition
        self.name = definition.name
        self.description = definition.description

    def schema(self) -> dict[str, Any]:
        return self.definition.schema()

    def validate(self, raw: Any) -> dict:
        """The model's input, checked against the server's input schema (JSON Schema).

        Raises:
            ToolInputError: not an object, a NUL byte or lone surrogate in it, or a schema violation.
        """
        if not isinstance(raw, dict):
            raise ToolInputError(f"{self.name} input must be a JSON object, got {type(raw).__name__}.")
        found = _bad_text(raw, "input")
        if found is not None:
            raise ToolInputError(f"Invalid input for {self.name}: {clean_text(found[1])} {found[2]}")
        validator = _validator(json.dumps(self.definition.input_schema, sort_keys=True))
        if validator is not None:
            try:
                errors = sorted(validator.iter_errors(raw), key=lambda e: list(e.absolute_path))[:5]
            except Exception:  # a $ref that does not resolve here (never fetched): the server validates
                errors = []
            if errors:
                lines = [f"{'.'.join(str(p) for p in e.absolute_path) or 'input'}: {e.message}" for e in errors]
                raise ToolInputError(f"Invalid input for {self.name}: " + "; ".join(lines))
        return raw

    def run(self, args: Any, ctx: ToolContext) -> ToolOutput:
        if ctx.mcp is None:
            raise ToolError(f"{self.name} cannot run here: this worker was given no MCP servers for the session.")
        try:
            return ctx.mcp.call(self.definition, args, ctx.cancel)
        except McpServerError as exc:
            raise ToolError(str(exc)) from None

    def summary(self, args: dict[str, Any]) -> str:
        return summary(args)


def summary(args: Any) -> str:
    """An MCP call's arguments on one line, as Claude Code shows them: ``a: 1, b: "x"``."""
    if not isinstance(args, dict):
        return ""
    return clean_text(", ".join(f"{k}: {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items()))


@lru_cache(maxsize=512)
def _validator(schema_json: str):
    """A JSON Schema validator for a server's input schema; None when the schema itself is not valid
    (then the server validates its own input, as it would for Claude Code).

    Its registry is empty: a ``$ref`` to a URL is never fetched (jsonschema would otherwise download it,
    from whichever worker validates, at the server's say-so).
    """
    import jsonschema
    from referencing import Registry

    schema = json.loads(schema_json)
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except Exception:  # SchemaError, or a schema too odd to check
        return None
    return cls(schema, registry=Registry())


def to_output(result: Any, name: str) -> ToolOutput:
    """A ``CallToolResult`` as a tool result: its structured content as compact JSON when it has some
    (what Claude Code gives the model), else its content blocks as text (a non-text block is named)."""
    structured = getattr(result, "structured_content", None)
    is_error = bool(getattr(result, "is_error", False))
    if structured is not None and not is_error:
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    else:
        text = "\n".join(_block_text(b) for b in getattr(result, "content", None) or [])
    if not text.strip():
        text = f"{name} returned no content." if not is_error else f"{name} failed and said nothing more."
    first = text.strip().splitlines()[0] if text.strip() else ""
    return ToolOutput(content=text, is_error=is_error, display=first[:120])


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind}: {getattr(block, 'mime_type', '') or 'unknown type'}, {size:,} bytes, not shown]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        return text if text is not None else f"[resource {res.uri}: binary, not shown]"
    if kind == "resource_link":
        return f"[resource link: {block.uri}]"
    return f"[{kind or 'unknown'} content, not shown]"
