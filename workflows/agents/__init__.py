"""Sub-agent definitions: the types the Task tool can start (see :mod:`workflows.engine.subagents`)."""

from workflows.agents.definitions import (
    GENERAL_PURPOSE,
    AgentFileError,
    agents_from_json,
    load_agents,
    parse_agent_file,
    plugin_agents,
)

__all__ = ["GENERAL_PURPOSE", "AgentFileError", "agents_from_json", "load_agents", "parse_agent_file", "plugin_agents"]
