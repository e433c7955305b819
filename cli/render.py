"""Rendering a session for a person at a terminal (rich). Following it live is :func:`cli.follow.follow`'s."""

from __future__ import annotations

import re
import sys
from typing import Callable

from rich.console import Console
from rich.text import Text

from cli.diff_view import diff_text
from cli.figures import memory_note, money, tokens
from cli.shown import shown_path
from workflows.agents.labels import TaskLabels
from workflows.mcp.tools import is_mcp_name
from workflows.mcp.tools import summary as mcp_summary
from workflows.models import (
    AssistantEntry,
    HookEntry,
    PermissionDecisionEntry,
    PermissionRequestEntry,
    ResultEntry,
    RewindEntry,
    SystemEntry,
    UserEntry,
)
from workflows.models.valid_text import repair_note
from workflows.permissions import prompt_text
from workflows.tools import REGISTRY
from workflows.tools.task import SUBAGENT_NAMES

#: Input fields that name a file or directory: shown relative to the session's directory when inside it.
PATH_KEYS = ("file_path", "notebook_path", "path", "pattern")


def _summary(name: str, tool_input: dict, cwd: str = "") -> str:
    tool = REGISTRY.get(name)
    if tool is not None:
        s = tool.summary(tool_input)
    elif is_mcp_name(name):
        s = mcp_summary(tool_input)
    else:
        s = ""
    if cwd and name != "Bash" and isinstance(tool_input, dict) and any(tool_input.get(k) == s for k in PATH_KEYS):
        s = shown_path(s, cwd)
    s = " ".join(s.split())
    return s if len(s) <= 80 else s[:77] + "..."


def _shown_name(name: str) -> str:
    """A tool's name as Claude Code shows it: ``mcp__srv__tool`` is ``srv - tool (MCP)``."""
    if not is_mcp_name(name):
        return name
    server, _, tool = name[len("mcp__"):].partition("__")
    return f"{server} - {tool} (MCP)"


BASH_LINES_SHOWN = 20  # lines of a bash-mode command's output printed (all of it goes into the conversation)


def todo_lines(todos: list) -> list[str]:
    """A todo list's checklist lines (``☒ Run the tests``), its dicts read loosely (the model's input may be
    invalid)."""
    from types import SimpleNamespace

    from workflows.tools.todo import checklist

    return checklist([SimpleNamespace(content=str(t.get("content", "")), activeForm=str(t.get("activeForm", "")),
                                      status=t.get("status")) for t in todos if isinstance(t, dict)])


class Renderer:
    """Prints entries and deltas: streamed text, ``⏺ Tool(arg)`` lines, short results."""

    def __init__(self, console: Console | None = None, *, show_prompts: bool = True,
                 show_requests: bool = True) -> None:
        self.console = console or Console(highlight=False, soft_wrap=True)
        self.show_prompts = show_prompts
        self.show_requests = show_requests
        self.streamed: dict[str, int] = {}  # step id -> attempt whose text was shown
        self.shown: dict[str, str] = {}  # step id -> the text its deltas showed
        self.calls: dict[str, str] = {}  # tool_use id -> "Name(arg)" when a turn made several calls
        self.tasks = TaskLabels()  # Task call id -> its sub-agent's label, unique in the session
        self.task_prompts: dict[str, list[str]] = {}  # a Task call's prompt -> the ids of calls not yet linked
        self.child_calls: dict[str, str] = {}  # sub-agent session id -> the id of its Task call
        # Replay: called with a Task call's id right after its line is shown (prints its sub-agent's lines).
        self.nest: Callable[[str], None] | None = None
        self.nested = False  # a replay: a sub-agent's lines come right under its Task call (no label needed)
        self._mid_line = False
        self._held: list[SystemEntry] = []  # background notes that came while a reply was streaming

    def _end_line(self) -> None:
        if self._mid_line:
            self.console.file.write("\n")
            self.console.file.flush()
            self._mid_line = False
        held, self._held = self._held, []
        for e in held:
            self._memory_note(e)

    def delta(self, step: str, attempt: int, text: str) -> None:
        seen = self.streamed.get(step)
        if seen is not None and seen != attempt:
            self._end_line()
            self.console.print(Text("(the model call restarted on another worker)", style="yellow"))
            self.shown[step] = ""
        self.streamed[step] = attempt
        self.shown[step] = self.shown.get(step, "") + text
        self.console.file.write(text)
        self.console.file.flush()
        self._mid_line = not text.endswith("\n")

    def _checklist(self, tool_input: dict) -> None:
        """TodoWrite's list, as Claude Code shows it (the model's input, checked loosely: it may be invalid)."""
        todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
        if not isinstance(todos, list):
            return
        for line in todo_lines(todos):
            self.console.print(Text(f"  ⎿  {line}"[:160], style="bold" if line.startswith("◐") else "dim"))

    def entry(self, e) -> None:
        self._entry(e)
        if getattr(e, "repaired", None):  # text UTF-8 cannot encode was stored as U+FFFD: say where
            self._end_line()
            self.console.print(Text(f"  ⚠ {repair_note(e.repaired)}", style="yellow"))

    def _entry(self, e) -> None:
        if isinstance(e, SystemEntry) and e.subtype == "memory" and self.shown:
            # A memory fork's note (the previous turn's extraction) committed while this reply streams:
            # shown after the reply's line ends, not in the middle of it ("Answer to: Say\n✎ ...\n hello").
            self._held.append(e)
            return
        if isinstance(e, AssistantEntry):
            text = e.message.text()
            shown = self.shown.pop(e.step_id, None) if e.step_id in self.streamed else None
            if shown is None and text:
                self._end_line()
                self.console.print(Text(text))
            elif shown is not None and text != shown:  # deltas were missed (a slow reader, a capped stream)
                if text.startswith(shown):
                    self.console.file.write(text[len(shown):])
                else:
                    self._end_line()
                    self.console.print(Text(text))
            self._end_line()
            uses = e.message.tool_uses()
            for tu in uses:
                shown = _shown_name(tu.name)
                if tu.name in SUBAGENT_NAMES:
                    label = f"{shown}({self.tasks.add(tu.id, tu.input.get('description'))})"
                    self.task_prompts.setdefault(str(tu.input.get("prompt")), []).append(tu.id)
                else:
                    label = f"{shown}({_summary(tu.name, tu.input, e.cwd)})"
                if len(uses) > 1:  # results may arrive in any order: say whose each is
                    self.calls[tu.id] = label
                self.console.print(Text.assemble(("⏺ ", "cyan"), (shown, "bold"), label[len(shown):]))
                if tu.name == "TodoWrite":
                    self._checklist(tu.input)
                if tu.name in SUBAGENT_NAMES and self.nest is not None:
                    self.nest(tu.id)
        elif isinstance(e, UserEntry):
            self._end_line()
            if e.origin == "tool_result":
                block = e.message.blocks()[0]
                line = e.display or (block.text.splitlines() or [""])[0]
                owner = self.calls.pop(getattr(block, "tool_use_id", ""), None)
                if owner:
                    line = f"{owner}: {line}"
                style = "red" if getattr(block, "is_error", False) else "dim"
                self.console.print(Text(f"  ⎿  {line[:160]}", style=style))
            elif e.origin == "synthetic" and e.message.text().startswith("<bash-stdout>"):
                self._bash_output(e.message.text())
            elif self.show_prompts and e.command is None and e.origin not in ("synthetic", "skill", "interrupt"):
                # (a command's prompt: its start entry showed it)
                self.console.print(Text(f"> {e.message.text()}", style="bold"))
        elif isinstance(e, SystemEntry) and e.subtype == "command":
            self._command_entry(e)
        elif isinstance(e, SystemEntry) and e.task and e.task.get("is_backgrounded") is False:
            pass  # a foreground agent's start or end, for stream-json: its ⏺ Agent line and result show it
        elif isinstance(e, SystemEntry):
            self._end_line()
            style = {"error": "bold red", "warning": "yellow", "interrupted": "yellow",
                     "unreadable": "yellow"}.get(e.subtype, "dim")
            if e.subtype == "memory":
                self._memory_note(e)
            else:
                self.console.print(Text(f"{e.subtype}: {e.content}", style=style))
        elif isinstance(e, PermissionRequestEntry):
            self._end_line()
            if self.show_requests:
                self.console.print(Text.assemble(("⚡ ", "yellow"), prompt_text(e.tool, e.input, e.always),
                                                 diff_text(e.diff, e.diff_note),
                                                 (f"\n  waiting for approval (request {e.request_id})", "dim")))
        elif isinstance(e, PermissionDecisionEntry):
            if e.decided_by in ("user", "timeout") or e.rules_added:
                self._end_line()
                verb = "approved" if e.decision == "allow" else "denied"
                added = f"; always allowed now: {', '.join(e.rules_added)}" if e.rules_added else ""
                style = "green" if e.decision == "allow" else "yellow"
                by = e.decider or e.decided_by  # the team server's token (token:alice), when one decided
                self.console.print(Text(f"  {verb} by {by}{added}", style=style))
        elif isinstance(e, HookEntry):
            line, style = hook_line(e)
            if line:
                self._end_line()
                self.console.print(Text(line[:300], style=style))
        elif isinstance(e, ResultEntry):
            self._end_line()
            self.console.print(closing_line(e))
        elif isinstance(e, RewindEntry):
            self._end_line()
            self.console.print(Text(rewind_line(e), style="yellow"))

    def _memory_note(self, e: SystemEntry) -> None:
        cost = f" · {money(e.cost_usd)}, {tokens(e.usage):,} tokens" if e.usage is not None else ""
        text = e.content.rstrip(".") if cost else e.content
        self.console.print(Text(f"✎ {text}{cost}", style="dim"))

    def _bash_output(self, text: str) -> None:
        """Bash mode's output (``<bash-stdout>…</bash-stdout><bash-stderr>…</bash-stderr>``), its first lines."""
        self._end_line()
        body = re.sub(r"</?bash-(stdout|stderr)>", "", text).rstrip("\n")
        lines = body.splitlines() or ["(no output)"]
        for line in lines[:BASH_LINES_SHOWN]:
            self.console.print(Text(f"  ⎿  {line}"[:200], style="dim"))
        if len(lines) > BASH_LINES_SHOWN:
            self.console.print(Text(f"  ⎿  … {len(lines) - BASH_LINES_SHOWN} more lines (in the conversation)",
                                    style="dim"))

    def _command_entry(self, e: SystemEntry) -> None:
        """A custom command's start (``/review a.py``: shown as a prompt) or one of its lines that ran."""
        if e.content.startswith("<bash-input>"):  # bash mode (!cmd): shown as typed
            if self.show_prompts:
                self._end_line()
                self.console.print(Text(f"! {e.content[len('<bash-input>'):-len('</bash-input>')]}", style="bold"))
            return
        if e.content.startswith("/"):
            if self.show_prompts:
                self._end_line()
                self.console.print(Text(f"> {e.content}", style="bold"))
            return
        self._end_line()
        self.console.print(Text(f"  ⎿  {e.content}"[:160], style="dim"))

    def link_child(self, child: str, tool_use_id: str | None) -> None:
        """Sub-agent ``child`` runs Task call ``tool_use_id`` (from its session record)."""
        if tool_use_id and child not in self.child_calls:
            self.child_calls[child] = tool_use_id
            for waiting in self.task_prompts.values():
                if tool_use_id in waiting:
                    waiting.remove(tool_use_id)

    def child_entry(self, child: str, e) -> None:
        """A sub-agent's entry, indented under its Task call: its tool calls, their results, its asks, its end."""
        if isinstance(e, UserEntry) and e.origin == "prompt":
            if child not in self.child_calls:  # no link given: the first unlinked Task call with this prompt
                waiting = self.task_prompts.get(e.message.text()) or []
                if waiting:
                    self.child_calls[child] = waiting.pop(0)
            return
        label = self.tasks.get(self.child_calls.get(child)) or child[:8]
        pad = f"    [{label}] " if len(self.tasks.labels) > 1 and not self.nested else "    "
        if isinstance(e, AssistantEntry):
            for tu in e.message.tool_uses():
                self._end_line()
                self.console.print(Text.assemble(pad, ("⏺ ", "cyan"), (_shown_name(tu.name), "bold"),
                                                 f"({_summary(tu.name, tu.input, e.cwd)})"))
        elif isinstance(e, UserEntry) and e.origin == "tool_result":
            block = e.message.blocks()[0]
            line = e.display or (block.text.splitlines() or [""])[0]
            self._end_line()
            self.console.print(Text(f"{pad}  ⎿  {line[:150]}",
                                    style="red" if getattr(block, "is_error", False) else "dim"))
        elif isinstance(e, PermissionRequestEntry) and self.show_requests:
            self._end_line()
            self.console.print(Text.assemble(pad, ("⚡ ", "yellow"), prompt_text(e.tool, e.input, e.always),
                                             diff_text(e.diff, e.diff_note, pad=pad + "  "),
                                             (f"\n{pad}  sub-agent {child[:8]} waits for approval "
                                              f"(request {e.request_id})", "dim")))
        elif isinstance(e, ResultEntry):
            self._end_line()
            mark, style = ("✗", "red") if e.is_error else ("✓", "dim")
            self.console.print(Text(f"{pad}{mark} sub-agent {child[:8]} {'answered' if not e.is_error else e.subtype}"
                                    f" · {e.num_turns} turns · {money(e.total_cost_usd)}", style=style))

    def close(self) -> None:
        self._end_line()


def hook_line(e: HookEntry) -> tuple[str, str]:
    """``  ⎿  PreToolUse hook (Bash): denied: no rm here`` and its style; "" for a hook that said nothing."""
    o = e.outcome
    what = f"{e.event} hook" + (f" ({e.tool})" if e.tool else "")
    verdict = {"deny": "denied", "block": "blocked", "ask": "asks", "allow": "allowed"}.get(o.decision or "", "ok")
    if o.stop:
        verdict = f"stopped the run: {o.stop_reason}" if o.stop_reason else "stopped the run"
    detail = o.reason or next((line for r in o.runs for line in (r.stdout or r.stderr).splitlines() if line.strip()),
                              "")
    style = "yellow" if o.blocked or o.stop or o.decision == "ask" else "dim"
    if not detail and verdict == "ok":
        return "", style  # a hook that ran, said nothing and decided nothing: nothing to show
    return f"  ⎿  {what}: {verdict}" + (f": {' '.join(detail.split())}" if detail else ""), style


def rewind_line(e: RewindEntry) -> str:
    """``⏪ Rewound the code and conversation to before "fix it" (1 file restored, 1 deleted)``."""
    what = " and ".join(p for p, on in (("code", e.code), ("conversation", e.conversation)) if on)
    prompt = " ".join(e.prompt.split())
    files = f" ({len(e.restored)} file(s) restored, {len(e.deleted)} deleted)" if e.code else ""
    return f"⏪ Rewound the {what} to before \"{prompt[:60]}\"{files}"


def closing_line(e: ResultEntry) -> Text:
    """``✓ session 1a2b · 3 turns · 3,591 tokens · $0.0126 (+ memory $0.0128, 3,356 tokens) · 2.1s``:
    the run's main loop, then the memory forks that finished while it ran (named, never mixed in)."""
    facts = (f"session {e.session_id[:8]} · {e.num_turns} turn{'s' if e.num_turns != 1 else ''} · "
             f"{tokens(e.usage):,} tokens · {money(e.total_cost_usd)}{memory_note(e)} · "
             f"{e.duration_ms / 1000:.1f}s")
    if e.is_error:
        return Text.assemble(("✗ ", "bold red"), (f"{e.subtype}: {e.result}\n  ", "red"), (facts, "dim"))
    return Text.assemble(("✓ ", "bold green"), (facts, "dim"))


def stderr_console() -> Console:
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)
