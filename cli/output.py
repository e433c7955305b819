"""Claude Code-compatible output for scripts: ``--output-format json|stream-json``
and ``--input-format stream-json``.

Pure formatting, no Click: the ``run -p`` command wires these in.

* :func:`result_json`: the one object ``claude -p --output-format json`` prints;
* :class:`StreamJson`: the NDJSON lines of ``--output-format stream-json`` (an
  ``init`` line, then one line per assistant message and user message, then the
  result line);
* :func:`read_stream_json_input`: the user texts of ``--input-format stream-json``.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

from cli.claude_keys import (
    RESULT_EXTRAS,
    init_extras,
    interrupt_diagnostic,
    model_usage_extras,
    permission_denied_lines,
    result_usage,
)
from cli.task_progress import TaskProgress
from workflows.context.export import assistant_api_message as api_message
from workflows.model.tokens import model_limits
from workflows.models import (
    AssistantEntry,
    ResultEntry,
    SessionRecord,
    SystemEntry,
    UserEntry,
    new_id,
)
from workflows.models.mcp import McpStatus
from workflows.tools.structured import ENFORCE
from workflows.engine import agent_stats
from workflows.engine.background import task_lines
from workflows.tools.task import SUBAGENT_NAMES

#: Mainsail's result subtypes as Claude Code names them (it has no "cancelled").
RESULT_SUBTYPES = {
    "success": "success",
    "error_max_turns": "error_max_turns",
    "error_during_execution": "error_during_execution",
    "error_max_budget_usd": "error_max_budget_usd",
    "error_max_structured_output_retries": "error_max_structured_output_retries",
    "cancelled": "error_during_execution",
}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _usage(u) -> dict:
    return {
        "input_tokens": int(u.input_tokens),
        "output_tokens": int(u.output_tokens),
        "cache_creation_input_tokens": int(u.cache_creation_input_tokens),
        "cache_read_input_tokens": int(u.cache_read_input_tokens),
    }


def usd(cost: float | None) -> float | None:
    """A cost for JSON: None (``null``) when it is unknown (a model without a price); the key stays."""
    return None if cost is None else float(cost)


def model_usage(result: ResultEntry) -> dict:
    """Claude Code's ``modelUsage``: the run's main loop per model; the ``costUSD`` add up to ``total_cost_usd``."""
    out = {}
    for model, u in result.usage_by_model.items():
        out[model] = {
            "inputTokens": int(u.input_tokens),
            "outputTokens": int(u.output_tokens),
            "cacheReadInputTokens": int(u.cache_read_input_tokens),
            "cacheCreationInputTokens": int(u.cache_creation_input_tokens),
            "webSearchRequests": 0,
            "costUSD": usd(result.cost_by_model.get(model, 0.0)),
            "contextWindow": model_limits(model)[0],
            **model_usage_extras(model, u),
        }
    return out


def cost_breakdown(result: ResultEntry) -> dict:
    """Mainsail's own key: the run's figures split into its main loop and its memory forks.

    ``main`` is what ``total_cost_usd`` and ``usage`` report; ``memory`` the memory forks that
    finished while the run went on (``saving``: one still ran when it ended; what it costs
    goes to the session); ``session`` the session's totals at the end of the run, forks included.
    """
    out = {
        "main": {"cost_usd": usd(result.total_cost_usd), "usage": _usage(result.usage)},
        "memory": {"cost_usd": usd(result.memory_cost_usd), "usage": _usage(result.memory_usage),
                   "saving": bool(result.memory_saving)},
    }
    if result.session_usage is not None:
        out["session"] = {"cost_usd": usd(result.session_cost_usd), "usage": _usage(result.session_usage)}
    return out


#: Why the run ended, in Claude Code's ``terminal_reason`` words.
TERMINAL_REASONS = {
    "success": "completed",
    "error_max_turns": "max_turns",
    "error_max_budget_usd": "max_budget_usd",
    "error_during_execution": "error",
    "error_max_structured_output_retries": "structured_output_retry_exhausted",
    "cancelled": "interrupted",
}


def result_json(result: ResultEntry, stop_reason: str | None = None) -> dict:
    """The object Claude Code prints with ``--output-format json`` (and last in stream-json).

    Claude Code's keys mean what they mean there: ``usage`` is the run's main loop (its
    model turns, here with its compactions) and ``total_cost_usd`` what those calls cost.
    Memory forks are not inside them (a run's answer never waits for its memory, so they
    could only ever be partly inside); ``cost_breakdown`` names them, and ``modelUsage``
    splits ``total_cost_usd`` per model. A success carries the answer in ``result``; an error
    carries its message in ``errors`` (a list) and no ``result``, as Claude Code's does.
    ``stop_reason``: the last model reply's (None when the run ended before one).
    """
    subtype = RESULT_SUBTYPES.get(result.subtype, "error_during_execution")
    is_error = bool(result.is_error or subtype != "success")
    out = {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": int(result.duration_ms),
        "duration_api_ms": int(result.duration_api_ms),
        "num_turns": int(result.num_turns),
        "stop_reason": stop_reason,
        "terminal_reason": result.terminal_reason or TERMINAL_REASONS.get(result.subtype, "error"),
        "session_id": result.session_id,
        "total_cost_usd": usd(result.total_cost_usd),
        "usage": result_usage(_usage(result.usage)),
        "modelUsage": model_usage(result),
        "cost_breakdown": cost_breakdown(result),
        "permission_denials": [dict(d) for d in result.permission_denials],
        "subagent_stats": result.subagent_stats or agent_stats.blank(),
        **RESULT_EXTRAS,
        "uuid": result.uuid,
    }
    if result.origin:  # a run a background agent's notification started
        out["origin"] = result.origin
    if is_error:  # (Claude Code's error results have no api_error_status)
        out.pop("api_error_status")
        out["errors"] = ([interrupt_diagnostic(stop_reason)] if result.terminal_reason in ("aborted_tools", "aborted_streaming")
                         else [result.result] if result.result else [])
    else:
        out["result"] = result.result
    if result.structured_output is not None:  # --json-schema: the object the model gave (result: its JSON)
        out["structured_output"] = result.structured_output
    return out


def content_blocks(content) -> list[dict]:
    """Message content as a list of API blocks (a plain string becomes one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b.model_dump(mode="json", exclude_none=True) for b in content]


#: A server's status as Claude Code's ``system/init`` says it (an unapproved .mcp.json server is "pending").
INIT_STATUS = {McpStatus.PENDING: "pending", McpStatus.CONNECTED: "connected", McpStatus.FAILED: "failed",
               McpStatus.UNAPPROVED: "pending"}

#: The Claude Code release whose stream-json and control protocol this output mirrors (the one the
#: Agent SDK bundles; the SDK warns when a CLI reports none).
CLAUDE_CODE_VERSION = "2.1.332"


class StreamJson:
    """Writes ``--output-format stream-json`` lines: one compact JSON object per line, flushed.

    As Claude Code writes them: an assistant message is one line per content block (sharing the
    message id); a tool result's ``user`` line carries ``tool_use_result``; the prompt is echoed only
    with ``replay_user_messages``; text deltas become ``stream_event`` lines only with
    ``partial_messages``. ``write`` receives whole lines (with their newline); ``flush`` is called
    after each (by default the flush of the object ``write`` is bound to, if any). Thread-safe: the
    control protocol writes its responses from another thread.
    """

    def __init__(self, write: Callable[[str], None] | None = None,
                 flush: Callable[[], None] | None = None, *, replay_user_messages: bool = False,
                 partial_messages: bool = False) -> None:
        import threading

        if write is None:
            write = sys.stdout.write
        self._write = write
        self._flush = flush or getattr(getattr(write, "__self__", None), "flush", None)
        self._lock = threading.Lock()
        self.replay_user_messages = replay_user_messages
        self.partial_messages = partial_messages
        self.stop_reason: str | None = None
        self.sid: str | None = None  # the main session (its replies name it)
        self.task_prompts: dict[str, str] = {}  # a Task call's prompt -> its tool_use id
        self.child_calls: dict[str, str | None] = {}  # sub-agent session -> its Task call's tool_use id
        self.task_inputs: dict[str, dict] = {}  # a Task call's tool_use id -> its input
        self.tool_names: dict[str, str] = {}  # a tool_use id -> its tool's name (for permission_denied lines)
        self.progress = TaskProgress()  # the sub-agents' task_progress notices
        #: Called when a prompt's entry arrives, before its lines (a turn's ``init`` line goes there, once the
        #: session's MCP servers are known).
        self.on_prompt: Callable[[], None] | None = None

    def emit(self, obj: dict) -> None:
        line = _dumps(obj) + "\n"
        with self._lock:
            self._write(line)
            if self._flush is not None:
                self._flush()

    def init(self, rec: SessionRecord, tools: list[str], *, api_key_source: str = "none",
             commands: dict | None = None) -> dict:
        """The first line of a turn: ``{"type": "system", "subtype": "init", ...}``; ``commands``: the session's
        skills and custom commands (``store.commands``), listed as ``slash_commands`` in Claude Code's order (skills,
        commands, the plugins' commands and skills; it lists its built-in ones too, which Mainsail's print mode does
        not run: docs/claude-code.md) and the skills as ``skills``."""
        plugins = {p.name for p in rec.plugins}
        own = {n: c for n, c in (commands or {}).items() if n.split(":")[0] not in plugins}
        theirs = {n: c for n, c in (commands or {}).items() if n not in own}
        slash_commands = ([n for n, c in own.items() if c.skill_dir] + [n for n, c in own.items() if not c.skill_dir]
                          + [n for n, c in theirs.items() if not c.skill_dir]
                          + [n for n, c in theirs.items() if c.skill_dir])
        skills = [n for n in slash_commands if commands[n].skill_dir]
        obj = {
            "type": "system",
            "subtype": "init",
            "cwd": rec.workspace,
            "session_id": rec.id,
            "tools": list(tools),
            "mcp_servers": [{"name": s.name, "status": INIT_STATUS[s.status], "source": s.config.source}
                            for s in rec.mcp_servers],
            "model": rec.model,
            "permissionMode": rec.permission_mode.value,
            "slash_commands": list(slash_commands),
            "apiKeySource": api_key_source,
            "claude_code_version": CLAUDE_CODE_VERSION,
            "output_style": rec.output_style.name if rec.output_style else "default",
            "agents": sorted(rec.agents),  # Claude Code lists the agent types' names
            "skills": skills,
            "plugins": [{"name": p.name, "path": p.path, "source": f"{p.name}@inline",
                         **({"version": p.version} if p.version else {})} for p in rec.plugins],
            "uuid": new_id(),
            **init_extras(rec),
        }
        self.emit(obj)
        return obj

    def entry(self, e) -> list[dict]:
        """The lines for a transcript entry (assistant, user, result); none for other entries."""
        if isinstance(e, AssistantEntry):
            self.stop_reason = e.message.stop_reason
            self.sid = e.session_id
            for tu in e.message.tool_uses():
                self.tool_names[tu.id] = tu.name
                if tu.name in SUBAGENT_NAMES and isinstance(tu.input.get("prompt"), str):
                    self.task_prompts[tu.input["prompt"]] = tu.id
                    self.task_inputs[tu.id] = tu.input
        if isinstance(e, UserEntry) and e.origin in ("prompt", "inbox") and self.on_prompt is not None:
            self.on_prompt()
        if (isinstance(e, UserEntry) and e.origin not in ("tool_result", "skill", "interrupt")
                and not self.replay_user_messages
                and e.message.content != ENFORCE):  # (Claude Code streams its structured-output reminder)
            return []
        lines = stream_json_lines(e, stop_reason=self.stop_reason)
        if isinstance(e, SystemEntry) and e.subtype == "task" and e.task:  # a sub-agent's launch or end
            lines = task_lines(e.task, self.sid or e.session_id)
        if isinstance(e, UserEntry) and e.denied:
            lines = permission_denied_lines(e, self.tool_names) + lines
        for obj in lines:
            self.emit(obj)
        if isinstance(e, ResultEntry):
            self.stop_reason = None
        return lines

    def link_child(self, child: str, tool_use_id: str | None) -> None:
        """Sub-agent ``child`` runs Task call ``tool_use_id`` (from its session record): two calls with one
        prompt are then told apart."""
        if tool_use_id:
            self.child_calls[child] = tool_use_id

    def child_entry(self, child: str, e) -> list[dict]:
        """A sub-agent's entry as Claude Code streams it: its prompt, tool calls and tool results, each with its
        Task call's id in ``parent_tool_use_id`` and the main session's id; never its text replies (its report
        comes back as the Agent call's result) nor its result line."""
        if isinstance(e, UserEntry) and e.origin == "prompt" and not self.child_calls.get(child):
            self.child_calls[child] = self.task_prompts.get(e.message.text())
        if not isinstance(e, (AssistantEntry, UserEntry)):
            return []
        lines = [obj for obj in stream_json_lines(e)
                 if obj["type"] != "assistant" or obj["message"]["content"][0].get("type") == "tool_use"]
        call = self.child_calls.get(child)
        task = self.task_inputs.get(call or "", {})
        progress = [task_lines(n, self.sid or e.session_id)[0] for n in self.progress.notices(child, e, call, task)]
        out = []
        for obj in lines:
            obj["parent_tool_use_id"] = call
            obj["session_id"] = self.sid or obj["session_id"]
            obj.pop("tool_use_result", None)  # Claude Code 2.1.332 sends none for a sub-agent's tool results
            if obj["type"] in ("user", "assistant"):  # as Claude Code 2.1.332 marks a sub-agent's lines
                obj.update(agent_id=child, subagent_type=task.get("subagent_type"),
                           task_description=task.get("description"))
            # a tool call's task_progress: before its line for a foreground agent, after it for a background one
            tick = [progress.pop(0)] if obj["type"] == "assistant" and progress else []
            out += [obj, *tick] if task.get("run_in_background") is True else [*tick, obj]
        for obj in out:
            self.emit(obj)
        return out

    def delta(self, sid: str, text: str) -> None:
        """A text delta of the reply being streamed (only with ``partial_messages``)."""
        if self.partial_messages and text:
            self.emit({"type": "stream_event", "uuid": new_id(), "session_id": sid, "parent_tool_use_id": None,
                       "event": {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}})


def stream_json_lines(e, stop_reason: str | None = None) -> list[dict]:
    """The stream-json objects for one transcript entry (none when stream-json has none for it)."""
    if isinstance(e, AssistantEntry):
        message = api_message(e.message)
        blocks = message["content"] if isinstance(message["content"], list) else [
            {"type": "text", "text": message["content"]}]
        return [{
            "type": "assistant",
            "message": dict(message, content=[block], stop_reason=None),  # Claude Code streams it null
            "parent_tool_use_id": None,
            "session_id": e.session_id,
            "uuid": e.uuid if i == 0 else new_id(),
            "timestamp": e.timestamp,
        } for i, block in enumerate(blocks or [{"type": "text", "text": ""}])]
    if isinstance(e, UserEntry):
        obj = {
            "type": "user",
            "message": {"role": "user", "content": [_claude_block(b) for b in content_blocks(e.message.content)]},
            "parent_tool_use_id": None,
            "session_id": e.session_id,
            "uuid": e.uuid,
            "timestamp": e.timestamp,
        }
        results = [b for b in e.message.blocks() if getattr(b, "type", "") == "tool_result"]
        if results:
            obj["tool_use_result"] = _tool_use_result(results[-1]) if e.tool_use_result is None else e.tool_use_result
        if e.origin == "skill":  # a skill's text after its Skill call, as Claude Code marks it
            obj["isSynthetic"] = True
        return [obj]
    if isinstance(e, ResultEntry):
        return [result_json(e, stop_reason)]
    return []


def _claude_block(block: dict) -> dict:
    """A user line's block as Claude Code streams it: a tool result's ``is_error`` only when it is one."""
    if block.get("type") == "tool_result" and block.get("is_error") is False:
        return {k: v for k, v in block.items() if k != "is_error"}
    return block


def _tool_use_result(block) -> str:
    """Claude Code's ``tool_use_result`` of a result with no structured form: the text, errors as ``Error: ...``."""
    return f"Error: {block.text}" if block.is_error else block.text


def stream_json_line(e) -> dict | None:
    """The first stream-json object for one transcript entry, or None (see :func:`stream_json_lines`)."""
    lines = stream_json_lines(e)
    return lines[0] if lines else None


__all__ = ["CLAUDE_CODE_VERSION", "RESULT_SUBTYPES", "StreamJson", "api_message", "content_blocks", "cost_breakdown",
           "model_usage", "result_json", "stream_json_line", "stream_json_lines"]
