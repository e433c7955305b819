"""Mainsail and Claude Code side by side: scripted conversations, both CLIs, one comparer.

A :class:`Conversation` is a prompt, the tool calls the fake model makes (one a reply), the CLI's arguments
and files, and what a client writes to stdin (stream-json input: more prompts, an interrupt). :func:`run_all`
runs a table of them, each through ``mainsail`` and through the bundled ``claude``, against one fake
Messages API and one Mainsail worker, several at once; :func:`differences` compares the two runs field by
field: every stream-json line (paired by type and subtype) and key, and the messages of the last request
each CLI sent the model. What must differ is normalized (:data:`NORMALIZED`, each with its reason); what
differs by decision is allowed by name only (:class:`Allowed`, listed in docs/claude-code.md)."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL
from tests.fakeapi import FakeMessagesServer, first_prompt

#: Values that must differ between two runs, replaced by their key's name: key -> why.
NORMALIZED = {
    "session_id": "each run makes its own session",
    "uuid": "each line's own random id",
    "parentUuid": "the line before's random id",
    "id": "message ids (msg_...) are the fake API's, one a request (tool_use ids are the script's: kept)",
    "duration_ms": "wall-clock time",
    "duration_api_ms": "wall-clock time",
    "total_cost_usd": "follows the token counts (below)",
    "costUSD": "follows the token counts (below)",
    "input_tokens": "the fake counts a request's tokens from its size, and the system prompts differ",
    "cache_creation_input_tokens": "as input_tokens",
    "cache_read_input_tokens": "as input_tokens",
    "output_tokens": "the fake counts a reply's tokens from the request's size too",
    "inputTokens": "as input_tokens",
    "outputTokens": "as output_tokens",
    "cacheReadInputTokens": "as input_tokens",
    "cacheCreationInputTokens": "as input_tokens",
    "ephemeral_5m_input_tokens": "as input_tokens",
    "timestamp": "wall-clock time",
    "agent_id": "each run makes its own sub-agent (Mainsail's id is the child session's: docs/claude-code.md)",
    "agentId": "as agent_id",
    "totalDurationMs": "wall-clock time",
    "totalTokens": "as input_tokens",
    "total_tokens": "as input_tokens (a sub-agent's task lines)",
    "task_id": "each run makes its own sub-agent, whose task id it is",
    "run_id": "as task_id",
    "end_time": "wall-clock time",
}

#: The same volatile values inside a sub-agent's hand-back text (its agent id, tokens and duration).
HANDBACK_FIGURES = re.compile(r"(agentId|subagent_tokens|duration_ms): [\w-]+")

#: A prompt's tag, ``[NAME]``: which conversation (or ``[NAME/sub]``: which sub-agent) a request belongs to.
TAG = re.compile(r"\[([\w-]+(?:/sub)?)\]")
SIDE = re.compile(r"(/[^\s\"'\\]*/(?:ours|theirs))\b")


@dataclass(frozen=True)
class Allowed:
    """A difference Mainsail keeps on purpose, and why: the diff paths it covers and what they say (regexes,
    matched in full: ``what`` is "ours only VALUE", "theirs only VALUE", "ours X, theirs Y", ...), in the
    conversations named (all when none)."""

    name: str
    path: str
    reason: str
    what: str = ".*"
    conversations: tuple[str, ...] = ()

    def covers(self, conv: str, where: str, what: str) -> bool:
        return ((not self.conversations or conv in self.conversations) and re.fullmatch(self.path, where) is not None
                and re.fullmatch(self.what, what, re.S) is not None)


@dataclass
class Conversation:
    """One scripted conversation. ``steps``: each model reply's tool calls, ``(name, input)`` (``{ws}`` in an
    input is the CLI's workspace); after the last, the model says "Done.". ``feed``: what a client writes to
    stdin, each ``(when, message)`` with ``when`` "start", "result" (after the next result line) or "tool_use"
    (after the next assistant line with a tool call); stdin closes at the result line after the last.
    ``sub``: the replies a sub-agent gets (same shape as ``steps``)."""

    name: str
    steps: list[list[tuple[str, dict]]]
    args: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    feed: list[tuple[str, dict]] = field(default_factory=list)
    sub: list[list[tuple[str, dict]]] = field(default_factory=list)
    slow: float = 0.0  # seconds between SSE events of the replies with tool calls

    @property
    def prompt(self) -> str:
        return f"[{self.name}] go"


@dataclass
class Run:
    """One CLI's run of a conversation: its stream-json lines and the requests it sent the model."""

    lines: list[dict]
    requests: list[dict]
    ws: Path
    home: Path
    stderr: str
    returncode: int
    seconds: float


def user_message(text: str) -> dict:
    return {"type": "user", "session_id": "", "message": {"role": "user", "content": text}, "parent_tool_use_id": None}


INTERRUPT = {"type": "control_request", "request_id": "req_interrupt", "request": {"subtype": "interrupt"}}


def router(conversations: list[Conversation]) -> Callable[[dict], Turn]:
    """The fake model for every conversation at once: a request's tag picks the conversation (or its
    sub-agent), its assistant turns so far pick the reply."""
    table = {c.name: c for c in conversations}

    def turn(body: dict) -> Turn:
        text = json.dumps(body["messages"][0])
        tag = TAG.search(first_prompt(body)) or TAG.search(text)
        if tag is None:  # a side call (a title, a summary): nothing to script
            return Turn(text="Side.")
        name, _, sub = tag.group(1).partition("/")
        conv = table[name]
        steps = conv.sub if sub else conv.steps
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if n >= len(steps):
            return Turn(text="Sub report." if sub else "Done.")
        ws = SIDE.search(json.dumps(body)).group(1)
        uses = [ToolUse(name=tool, id=f"toolu_{'s' if sub else ''}{n:02d}{i}",
                        input=json.loads(json.dumps(raw).replace("{ws}", ws)))
                for i, (tool, raw) in enumerate(steps[n])]
        return Turn(text=f"Step {n}.", tool_uses=uses, stream_delay_seconds=conv.slow)

    return turn


def drive(cmd: list[str], conv: Conversation, cwd: Path, env: dict) -> tuple[str, str, int]:
    """Run one CLI; write ``conv.feed`` to its stdin as its stdout says; its stdout, stderr and exit code."""
    if not conv.feed:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        return done.stdout, done.stderr, done.returncode
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(90, proc.kill)
    watchdog.start()
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    reader.start()
    pending, out = list(conv.feed), []

    def send() -> None:
        while pending and pending[0][0] == "start":
            proc.stdin.write(json.dumps(pending.pop(0)[1]) + "\n")
        proc.stdin.flush()

    try:
        send()
        for raw in proc.stdout:
            out.append(raw)
            line = json.loads(raw) if raw.strip().startswith("{") else {}
            if line.get("type") == "result" and not pending:
                proc.stdin.close()
                continue
            tool_use = line.get("type") == "assistant" and any(
                b.get("type") == "tool_use" for b in line["message"]["content"])
            if pending and ((pending[0][0] == "result" and line.get("type") == "result")
                            or (pending[0][0] == "tool_use" and tool_use)
                            or (pending[0][0] == "stream_event" and line.get("type") == "stream_event")):
                pending[0] = ("start", pending[0][1])
                send()
        proc.wait(30)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(10)
    return "".join(out), "".join(err), proc.returncode


def claude_env(home: Path, api_url: str) -> dict:
    """Claude Code's environment for a run: ``home`` as HOME, the fake API, no updates or side traffic;
    IS_SANDBOX lets it take bypassPermissions as root."""
    return dict(os.environ, HOME=str(home), ANTHROPIC_BASE_URL=api_url, ANTHROPIC_API_KEY="test-key",
                IS_SANDBOX="1", DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                MCP_TIMEOUT="60000")  # (a loaded machine starts an MCP server slowly)


def lines(stdout: str) -> list[dict]:
    return [json.loads(ln) for ln in stdout.splitlines() if ln.strip()]


def run_all(conversations: list[Conversation], base: Path, claude: Path, worker_env: dict,
            parallel: int = 4) -> dict[str, tuple[Run, Run]]:
    """Every conversation through both CLIs against ``worker_env``'s fake API (``ANTHROPIC_BASE_URL``), at
    most ``parallel`` CLIs at once: {name: (ours, theirs)}."""
    api_url = worker_env["ANTHROPIC_BASE_URL"]

    def one(conv: Conversation, side: str) -> Run:
        ws, home = base / conv.name / side, base / conv.name / f"home-{side}"
        for d in (ws, home):
            d.mkdir(parents=True, exist_ok=True)
        for rel, text in conv.files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        args = ["-p", *([] if conv.feed else [conv.prompt]), "--output-format", "stream-json", "--verbose", *conv.args]
        if side == "ours":
            cmd, env = [MAINSAIL, *args], dict(worker_env, HOME=str(home))
        else:
            cmd, env = [str(claude), *args], claude_env(home, api_url)
        started = time.monotonic()
        stdout, stderr, code = drive(cmd, conv, ws, env)
        (ws / "release").touch()  # a command the run left waiting (an interrupted one) ends
        return Run(lines(stdout), [], ws, home, stderr, code, time.monotonic() - started)

    jobs = [(c, s) for c in conversations for s in ("ours", "theirs")]
    with ThreadPoolExecutor(parallel) as pool:
        runs = dict(zip(((c.name, s) for c, s in jobs), pool.map(lambda j: one(*j), jobs)))
    return {c.name: (runs[c.name, "ours"], runs[c.name, "theirs"]) for c in conversations}


def attach_requests(results: dict[str, tuple[Run, Run]], requests: list[dict]) -> None:
    """Give each run the main conversation's requests it sent (not its sub-agents', not side calls)."""
    for body in requests:
        tag = TAG.search(first_prompt(body))
        side = SIDE.search(json.dumps(body))
        if tag and side and tag.group(1) in results:
            ours, theirs = results[tag.group(1)]
            (ours if side.group(1).endswith("/ours") else theirs).requests.append(body)


# -- comparing ------------------------------------------------------------------------------------------------

def label(line: dict) -> str:
    kind = line.get("type", "?")
    sub = line.get("subtype") or (line.get("response") or {}).get("subtype")
    return f"{kind}/{sub}" if sub and kind != "result" else kind


def normalize(value, run: Run):
    """``value`` with the run's paths named WS and HOME and :data:`NORMALIZED` keys' values by their key."""
    text = json.dumps(value).replace(str(run.ws), "WS").replace(str(run.home), "HOME")
    text = text.replace(str(run.ws.parent), "CONV")
    text = HANDBACK_FIGURES.sub(lambda m: f"{m[1]}: {m[1]}", text)

    def walk(v):
        if isinstance(v, dict):
            return {k: (k if k in NORMALIZED and not isinstance(x, (dict, list)) and x is not None
                        and (k != "id" or str(x).startswith("msg_")) else walk(x)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(json.loads(text))


def reminders_cut(text: str) -> str:
    return text.split("\n\n<system-reminder>\n")[0].rstrip()


def sent(run: Run) -> list[dict]:
    """The messages of the last request the run's CLI sent the model, Claude Code's <system-reminder>
    blocks (and reminders appended to a tool result) left out."""
    if not run.requests:
        return []
    out = []
    for m in run.requests[-1]["messages"]:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        blocks = []
        for b in content:
            b = {k: v for k, v in b.items() if k != "cache_control"}
            if b["type"] == "text":
                if b["text"].startswith("<system-reminder>"):
                    continue
                b["text"] = reminders_cut(b["text"])
            if b["type"] == "tool_result":
                c = b.get("content", "")
                if isinstance(c, list):
                    c = "\n".join(x.get("text", "") for x in c if x.get("type") == "text")
                b["content"] = reminders_cut(c)
            blocks.append(b)
        out.append({"role": m["role"], "content": blocks})
    return normalize(out, run)


def diff(a, b, path: str) -> list[tuple[str, str]]:
    """(path, what) for each place ``a`` (ours) and ``b`` (theirs) differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in [*a, *(k for k in b if k not in a)]:
            if k not in b:
                out.append((f"{path}.{k}", f"ours only {json.dumps(a[k])[:300]}"))
            elif k not in a:
                out.append((f"{path}.{k}", f"theirs only {json.dumps(b[k])[:300]}"))
            else:
                out += diff(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if all(isinstance(x, str) for x in (*a, *b)) and (len(set(a)) == len(a) and len(set(b)) == len(b)) \
                and set(a) != set(b):
            return ([(f"{path}[{x}]", "ours only") for x in a if x not in b]
                    + [(f"{path}[{x}]", "theirs only") for x in b if x not in a])
        out = [] if len(a) == len(b) else [(f"{path}[]", f"ours {len(a)} items, theirs {len(b)}")]
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [(path, f"ours {json.dumps(a)[:300]}, theirs {json.dumps(b)[:300]}")]


def differences(ours: Run, theirs: Run) -> list[tuple[str, str]]:
    """Every difference between two runs: lines one side has (by label), keys and values of paired lines,
    and the messages each sent the model last."""
    a = [normalize(x, ours) for x in ours.lines]
    b = [normalize(x, theirs) for x in theirs.lines]
    la, lb = [label(x) for x in a], [label(x) for x in b]
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if op == "equal":
            for x, y in zip(a[i1:i2], b[j1:j2]):
                out += diff(x, y, label(x))
            continue
        out += [(lab, "ours only line") for lab in la[i1:i2]] + [(lab, "theirs only line") for lab in lb[j1:j2]]
    return out + diff(sent(ours), sent(theirs), "request.messages")


def unexplained(conv: str, found: list[tuple[str, str]], allowed: list[Allowed], used: set[str]) -> list[str]:
    """The differences no allowance covers; the names of those that cover one go into ``used``."""
    out = []
    for where, what in found:
        hit = next((a for a in allowed if a.covers(conv, where, what)), None)
        if hit is None:
            out.append(f"{where}: {what}")
        else:
            used.add(hit.name)
    return out
