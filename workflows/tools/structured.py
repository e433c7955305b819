"""StructuredOutput: the tool a session started with ``--json-schema`` (the Agent SDK's ``output_format``) gives its
final answer through, as Claude Code's does.

The tool's ``input_schema`` is the session's schema itself; the model is told (in the tool's description) to call it
once at the end. The engine applies a call where the reply is committed (:attr:`Tool.inline`, like TodoWrite): the
input is checked against the schema with ``jsonschema``; a mismatch is an error result naming every problem in
Claude Code's (ajv's) words, so the model can call again; a match is kept in the run's record and ends the run
(:mod:`workflows.engine.turn`), whose result then carries it as ``structured_output`` and its JSON as ``result``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from workflows.exceptions import ToolInputError
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register

if TYPE_CHECKING:  # (jsonschema, ~100 ms of imports, loads when a schema is checked: not in every command's start)
    from jsonschema.exceptions import ValidationError

NAME = "StructuredOutput"
DESCRIPTION = ("Use this tool to return your final response in the requested structured format. You MUST call this "
               "tool exactly once at the end of your response to provide the structured output.")
PROVIDED = "Structured output provided successfully"
MISMATCH = "Output does not match required schema: "
#: What the model is told, once a run, when it ends without calling the tool (Claude Code's words).
ENFORCE = ("[structured-output-enforce] You MUST call the StructuredOutput tool to complete this request. Call this "
           "tool now.")
#: Calls that do not match the schema before the run ends with ``error_max_structured_output_retries``.
MAX_ATTEMPTS = 5


def tool_definition(schema: dict[str, Any]) -> dict[str, Any]:
    """The Messages API definition of StructuredOutput for ``schema`` (sent as given)."""
    return {"name": NAME, "description": DESCRIPTION, "input_schema": schema}


def check_schema(schema: Any) -> dict[str, Any]:
    """``schema`` (a ``--json-schema`` value, parsed) if it can be the tool's input schema.

    Raises:
        ValueError: not an object, not a valid JSON Schema, or not one of an object (a tool's input is one).
    """
    if not isinstance(schema, dict):
        raise ValueError("--json-schema must be a JSON object")
    from jsonschema import Draft7Validator, validators
    from jsonschema.exceptions import SchemaError

    try:
        validators.validator_for(schema, default=Draft7Validator).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        where = f"{where}: " if where else ""
        raise ValueError(f"--json-schema is not a valid JSON Schema: {where}{exc.message}") from None
    if schema.get("type", "object") != "object":
        raise ValueError(f"--json-schema must describe an object (\"type\": \"object\"), not {schema['type']!r}: the "
                         "model gives its output as a tool call's input, which is an object")
    return schema


def problems(schema: dict[str, Any], value: Any) -> str | None:
    """Every way ``value`` fails ``schema``, in Claude Code's words (``/answer: must be integer, root: ...``);
    None when it matches."""
    from jsonschema import Draft7Validator, validators

    validator = validators.validator_for(schema, default=Draft7Validator)(schema)
    errors = sorted(validator.iter_errors(value), key=_ajv_order)
    return ", ".join(_describe(e, value) for e in errors) or None


#: The order ajv checks keywords in (type first, then by the instance's kind), which Claude Code's list follows.
_ORDER = ["type", "maximum", "minimum", "multipleOf", "exclusiveMaximum", "exclusiveMinimum", "maxLength",
          "minLength", "pattern", "format", "maxItems", "minItems", "items", "additionalItems", "uniqueItems",
          "contains", "maxProperties", "minProperties", "required", "dependencies", "propertyNames",
          "additionalProperties", "properties", "patternProperties", "const", "enum", "not", "anyOf", "oneOf",
          "allOf", "if"]
_RANK = {k: i for i, k in enumerate(_ORDER)}


def _ajv_order(error: ValidationError) -> tuple:
    path = list(error.absolute_schema_path)
    return (_RANK.get(path[0], len(_RANK)) if path else 0, len(error.absolute_path))


def _pointer(error: ValidationError) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in error.absolute_path]
    return "/" + "/".join(parts) if parts else "root"


def _json(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "\u2026"


def _describe(error: ValidationError, value: Any) -> str:
    """One problem as ajv words it, with Claude Code's additions (the extra property, the count, the values)."""
    kw, arg, got = error.validator, error.validator_value, error.instance
    if kw == "type":
        message = f"must be {','.join(arg) if isinstance(arg, list) else arg}"
    elif kw == "required":
        missing = next((p for p in arg if isinstance(got, dict) and p not in got), "")
        message = f"must have required property '{missing}'"
    elif kw == "additionalProperties":
        extra = _extra_properties(error)
        message = "must NOT have additional properties" + (f" ('{extra[0]}' is not allowed)" if extra else "")
    elif kw in _COUNTS:
        noun, fewer = _COUNTS[kw]
        message = f"must NOT have {'fewer' if fewer else 'more'} than {arg} {noun} (got {_count(got)})"
    elif kw in _BOUNDS:
        message = f"must be {_BOUNDS[kw]} {arg}"
    elif kw == "enum":
        message = f"must be equal to one of the allowed values: {_json(arg)}"
    elif kw == "const":
        message = f"must be equal to constant: {_json(arg)}"
    elif kw == "pattern":
        message = f'must match pattern "{arg}"'
    elif kw == "format":
        message = f'must match format "{arg}"'
    elif kw == "multipleOf":
        message = f"must be multiple of {arg}"
    else:
        message = error.message
    return f"{_pointer(error)}: {message}"


_COUNTS = {"minLength": ("characters", True), "maxLength": ("characters", False), "minItems": ("items", True),
           "maxItems": ("items", False), "minProperties": ("properties", True), "maxProperties": ("properties", False)}
_BOUNDS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


def _count(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, dict)) else 0


def _extra_properties(error: ValidationError) -> list[str]:
    schema, got = error.schema, error.instance
    known = set(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    return [k for k in got if k not in known and not any(re.search(p, k) for p in patterns)]


class StructuredInput(ToolInput):
    """Any object: the session's schema, not this model, says what it must hold."""


@register
class StructuredOutputTool(Tool):
    name = NAME
    description = DESCRIPTION
    input_model = StructuredInput
    read_only = True  # it changes the session's own run, never the workspace
    idempotent = True
    inline = True

    def validate(self, raw: Any) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise ToolInputError(f"{NAME} input must be a JSON object, got {type(raw).__name__}.")
        return raw

    def summary(self, args: dict) -> str:
        keys = list(args) if isinstance(args, dict) else []
        return ", ".join(keys[:3]) + ("\u2026" if len(keys) > 3 else "")

    def run(self, args: dict, ctx: ToolContext) -> ToolOutput:
        # Only where the reply is committed (apply) does the session's schema decide; a call sent to a worker
        # (after a person approved it) cannot set the run's output.
        return ToolOutput(content=f"{NAME} cannot be run on approval: remove the ask rule that covers it.",
                          is_error=True, display="not applied")

    def apply(self, rec, args: dict) -> ToolOutput:
        """Check ``args`` against the session's schema: kept as the run's output, or an error the model can fix."""
        if rec.json_schema is None:
            text = f"{NAME} is not available: this session was not started with --json-schema."
            return ToolOutput(content=text, is_error=True, display=text)
        found = problems(rec.json_schema, args)
        if found is not None:
            rec.structured.failures += 1
            rec.structured.last_error = MISMATCH + found
            return ToolOutput(content=rec.structured.last_error, is_error=True, display="does not match the schema")
        rec.structured.output = args
        return ToolOutput(content=PROVIDED, display="structured output")


def output_text(output: dict[str, Any]) -> str:
    """The run's ``result`` text for a structured output: its compact JSON, as Claude Code's."""
    return json.dumps(output, separators=(",", ":"), ensure_ascii=False)


def retries_exhausted(rec) -> str | None:
    """The run's error once the model called StructuredOutput wrongly :data:`MAX_ATTEMPTS` times (else None)."""
    if rec.structured.output is not None or rec.structured.failures < MAX_ATTEMPTS:
        return None
    return (f"Failed to provide valid structured output after {rec.structured.failures} attempts \u2014 last "
            f"{NAME} error: {rec.structured.last_error}")


__all__ = ["ENFORCE", "MAX_ATTEMPTS", "NAME", "StructuredOutputTool", "check_schema", "output_text", "problems",
           "retries_exhausted", "tool_definition"]
