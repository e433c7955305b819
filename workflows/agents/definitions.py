"""Where sub-agent types come from, as in Claude Code.

- the built-in ``general-purpose`` agent (every tool but Task, the session's model);
- ``~/.claude/agents/*.md`` (user), then ``<workspace>/.claude/agents/*.md`` (project: it wins over a
  user agent of the same name): YAML frontmatter ``name``, ``description`` (both required), ``tools``
  (a comma-separated string or a list; omitted: every tool), ``disallowedTools``, ``model``
  (``sonnet``, ``opus``, ``haiku``, a model id, or ``inherit``), and the body as the system prompt;
- ``--agents JSON`` (and the Agent SDK's ``agents`` option): ``{"name": {"description", "prompt",
  "tools", "model"}}``, over everything else.

A file that cannot be understood is left out with a warning (it names the file and the fix); it
never stops the session. The definitions are snapshotted into the session record when it is
created, so every worker starts the same children.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from workflows.frontmatter import split_frontmatter, yaml_mapping
from workflows.models import AgentDefinition

log = logging.getLogger(__name__)

GENERAL_PURPOSE = AgentDefinition(
    name="general-purpose",
    description=("General-purpose agent for researching complex questions, searching for code, and executing "
                 "multi-step tasks. When you are searching for a keyword or file and are not confident that you "
                 "will find the right match in the first few tries use this agent to perform the search for you."),
    prompt="",
    tools=None,
    source="built-in",
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


class AgentFileError(ValueError):
    """An agent definition that cannot be used; the message names it and the fix."""


def _tool_list(value: Any, where: str, field: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return [t.strip() for t in value if t.strip()]
    raise AgentFileError(f"{where}: '{field}' must be a comma-separated string or a list of tool names, "
                         f"not {type(value).__name__}.")


def _definition(name: Any, fields: dict[str, Any], prompt: str, where: str, source: str) -> AgentDefinition:
    if not isinstance(name, str) or not _NAME.match(name):
        raise AgentFileError(f"{where}: the agent needs a 'name' of letters, digits, '-', '_', '.' or ':' "
                             f"(got {name!r}).")
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise AgentFileError(f"{where}: agent {name!r} needs a 'description' saying when to use it.")
    model = fields.get("model")
    if model is not None and not isinstance(model, str):
        raise AgentFileError(f"{where}: agent {name!r}: 'model' must be a name such as sonnet, opus, haiku or "
                             "inherit.")
    return AgentDefinition(
        name=name, description=description.strip(), prompt=prompt.strip(),
        tools=_tool_list(fields.get("tools"), where, "tools"),
        disallowed_tools=_tool_list(fields.get("disallowedTools"), where, "disallowedTools") or [],
        model=None if model in (None, "", "inherit") else model.strip(), source=source)


def parse_agent_file(text: str, where: str, source: str) -> AgentDefinition:
    """An agent from a markdown file with YAML frontmatter.

    Raises:
        AgentFileError: no frontmatter, bad YAML, a missing or invalid field.
    """
    split = split_frontmatter(text)
    if split is None:
        raise AgentFileError(f"{where}: no YAML frontmatter. An agent file starts with '---', then 'name:' and "
                             "'description:' lines, then '---' and the agent's system prompt.")
    fields = yaml_mapping(split[0], where, AgentFileError)
    return _definition(fields.get("name"), fields, split[1], where, source)


def _from_dir(folder: Path, source: str) -> dict[str, AgentDefinition]:
    out: dict[str, AgentDefinition] = {}
    try:
        files = sorted(p for p in folder.glob("*.md") if p.is_file())
    except OSError:
        return out
    for path in files:
        try:
            agent = parse_agent_file(path.read_text(encoding="utf-8"), str(path), source)
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("agent file %s left out: cannot be read (%s)", path, exc)
            continue
        except AgentFileError as exc:
            log.warning("agent file left out: %s", exc)
            continue
        out[agent.name] = agent
    return out


def agents_from_json(raw: str | dict[str, Any]) -> dict[str, AgentDefinition]:
    """``--agents`` (JSON text) or the SDK's ``agents`` option (a dict): ``{name: {description, prompt,
    tools?, model?}}``.

    Raises:
        AgentFileError: not JSON, not an object of objects, or an entry without a description or prompt.
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise AgentFileError(f"--agents is not valid JSON ({exc.msg} at position {exc.pos}). Pass an object "
                                 """such as '{"reviewer": {"description": "...", "prompt": "..."}}'.""") from None
    if not isinstance(raw, dict):
        raise AgentFileError("--agents must be a JSON object of agent name to definition.")
    out: dict[str, AgentDefinition] = {}
    for name, fields in raw.items():
        where = f"--agents entry {name!r}"
        if not isinstance(fields, dict):
            raise AgentFileError(f"{where} must be an object with 'description' and 'prompt'.")
        prompt = fields.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise AgentFileError(f"{where} needs a 'prompt' (the agent's system prompt).")
        out[name] = _definition(name, fields, prompt, where, "flag")
    return out


def plugin_agents(plugins: list) -> dict[str, AgentDefinition]:
    """The agent types of a session's plugins (:mod:`workflows.plugins`), named ``PLUGIN:NAME`` as in Claude Code."""
    out: dict[str, AgentDefinition] = {}
    for p in plugins:
        for name, agent in _from_dir(Path(p.path) / "agents", "plugin").items():
            short = name.removeprefix(f"{p.name}:")
            out[f"{p.name}:{short}"] = agent.model_copy(update={"name": f"{p.name}:{short}"})
    return out


def load_agents(workspace: str, home: str, extra: dict[str, AgentDefinition] | None = None
                ) -> dict[str, AgentDefinition]:
    """The agent types a session in ``workspace`` offers: built-in, user, project, then ``extra``."""
    agents = {GENERAL_PURPOSE.name: GENERAL_PURPOSE}
    agents.update(_from_dir(Path(home or os.path.expanduser("~")) / ".claude" / "agents", "user"))
    agents.update(_from_dir(Path(workspace) / ".claude" / "agents", "project"))
    agents.update(extra or {})
    return agents


__all__ = ["GENERAL_PURPOSE", "AgentFileError", "agents_from_json", "load_agents", "parse_agent_file", "plugin_agents"]
