"""Agent (formerly Task): start a sub-agent (Claude Code's tool name and input schema).

The model is offered it as ``Agent`` (Claude Code 2.1's name); a call named ``Task`` (the old name)
is the same tool (:data:`AGENT_ALIASES`). Inside Mainsail, in ``--tools`` lists and in ``system/init``'s
``tools``, it is still ``Task``, as Claude Code's init still lists it.

The call never runs on a tools worker: the engine turns it into a **child session** (its own state
machine, transcript and steps) when the call's batch starts, and the parent waits in a durable step
that holds no worker until the child's final answer comes back as this call's result
(:mod:`workflows.engine.subagents`). :meth:`TaskTool.run` is reached only by a caller that bypasses
the engine, and says so.

Its description lists the session's agent types (built-in, ``.claude/agents``, ``--agents``), so the
schema the model sees is built per session by :func:`task_schema`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import Field

from workflows.tools.base import ALIASES, Tool, ToolContext, ToolInput, ToolOutput, register

INTRO = (
    "Launch a new agent to handle complex, multi-step tasks autonomously.\n\n"
    "Available agent types and the tools they have access to:\n")

OUTRO = (
    "\n\nWhen using the Agent tool, specify a subagent_type to select an agent; omitting it starts a "
    "general-purpose agent.\n\n"
    "Usage notes:\n"
    "- Launch multiple agents concurrently whenever possible, to maximize performance; to do that, use a single "
    "message with multiple tool uses\n"
    "- When the agent is done, it will return a single message back to you. The result returned by the agent is "
    "not visible to the user. To show the user the result, you should send a text message back to the user with "
    "a concise summary of the result.\n"
    "- Each agent invocation is stateless. You will not be able to send additional messages to the agent, nor "
    "will the agent be able to communicate with you outside of its final report. Therefore, your prompt should "
    "contain a highly detailed task description for the agent to perform autonomously and you should specify "
    "exactly what information the agent should return back to you in its final and only message to you.\n"
    "- The agent's outputs should generally be trusted\n"
    "- With run_in_background: true the agent runs in the background: you are notified automatically when it "
    "completes (do NOT sleep, poll, or proactively check on its progress), and you know nothing about its results "
    "until that notification arrives. Stop it with TaskStop and its agentId.\n"
    "- Clearly tell the agent whether you expect it to write code or just to do research (search, file reads, "
    "web fetches, etc.), since it is not aware of the user's intent")


class TaskInput(ToolInput):
    description: str = Field(min_length=1, description="A short (3-5 word) description of the task")
    prompt: str = Field(min_length=1, description="The task for the agent to perform")
    subagent_type: str | None = Field(default=None, min_length=1,
                                      description="The type of specialized agent to use for this task")
    model: Literal["sonnet", "opus", "haiku"] | None = Field(
        default=None, description=(
            "Optional model override for this agent. Takes precedence over the agent definition's model. "
            "If omitted, uses the agent definition's model, else the parent's."))
    run_in_background: bool | None = Field(default=None, description=(
        "Set to true to run this agent in the background; you will be notified when it completes. Leave it "
        "unset (or false) when your next action depends on this agent's result."))


@register
class TaskTool(Tool):
    name = "Task"
    description = INTRO + OUTRO
    input_model = TaskInput
    # It changes nothing itself: what the child does goes through the child's own permission checks
    # (it inherits the parent's mode and rules). Several Task calls in one reply run in parallel.
    read_only = True
    subagent = True

    def summary(self, args: dict[str, Any]) -> str:
        desc = args.get("description") if isinstance(args, dict) else None
        return desc if isinstance(desc, str) else ""

    def run(self, args: TaskInput, ctx: ToolContext) -> ToolOutput:
        text = ("Task starts a child session, which only the session engine can do; this call reached a tools "
                "worker directly, so no agent was started.")
        return ToolOutput(content=text, is_error=True, display="not started")


#: The name the model is offered the sub-agent tool by (Claude Code 2.1), and the names a call may use.
AGENT = "Agent"
AGENT_ALIASES = {AGENT: "Task"}
SUBAGENT_NAMES = frozenset({"Task", AGENT})
DEFAULT_AGENT = "general-purpose"
ALIASES.update(AGENT_ALIASES)


def agent_type(tool_input: dict) -> str:
    """The agent type a call asks for (none named: general-purpose, as in Claude Code)."""
    return tool_input.get("subagent_type") or DEFAULT_AGENT


def agents_key(agents: dict) -> tuple:
    """What of a session's agent types the Task schema shows (hashable, for the schema cache)."""
    return tuple(sorted((a.name, a.description, tuple(a.tools) if a.tools is not None else None)
                        for a in agents.values()))


@lru_cache(maxsize=256)
def task_schema(key: tuple) -> dict:
    """The Task tool's definition for a session whose :func:`agents_key` is ``key``."""
    lines = [f"- {name}: {description} (Tools: {', '.join(tools) if tools is not None else '*'})"
             for name, description, tools in key]
    return {"name": AGENT, "description": INTRO + "\n".join(lines) + OUTRO,
            "input_schema": TaskTool().schema()["input_schema"]}


__all__ = ["AGENT", "AGENT_ALIASES", "DEFAULT_AGENT", "SUBAGENT_NAMES", "TaskInput", "agent_type", "TaskTool", "agents_key", "task_schema"]
