"""Submitting a prompt and staying attached until the run ends (shared by run and demo).

While attached, each permission request is asked at the terminal:
the whole call (every line of a command), an edit's diff, and the rules "(a)lways" would add,
then ``(y)es / (n)o / (a)lways`` (``(y)es / (n)o`` when no rule can cover the call). Typing anything else denies the
call and passes the text to the model. The question is durable: the same
request can be answered from another shell (``mainsail approve``), and the
prompt notices.
"""

from __future__ import annotations

import select
import sys
from collections import deque
from typing import TYPE_CHECKING, Callable, TextIO

import click

from cli.connect import Runtime
from cli.diff_view import echo_diff
from cli.follow import follow
from cli.session_service import service
from workflows.exceptions import RequestClosed, RequestNotFound
from workflows.hooks.prompt_entries import is_entry_of_prompt
from workflows.models import PermissionDecisionEntry, PermissionRequestEntry, ResultEntry, parse_entry
from workflows.permissions import always_offered, answer_choices, prompt_text
from workflows.store.redis_store import stream_entries

if TYPE_CHECKING:  # (the renderer, and rich, load for a run that prints its transcript: never for -p)
    from cli.render import Renderer

YES = {"y", "yes"}
NO = {"n", "no"}
ALWAYS = {"a", "always"}


class Prompter:
    """Asks for each permission request on ``stdin``; without input, says how to answer elsewhere."""

    def __init__(self, rt: Runtime, sid: str, *, stdin: TextIO | None = None, interactive: bool = True,
                 answers: Callable[[], str | None] | None = None) -> None:
        self.rt = rt
        #: Where answers come from instead of ``stdin`` (interactive mode's line editor: the next line typed
        #: while a question is open), None when nothing was typed yet.
        self.answers = answers
        self.sid = sid
        self.stdin = stdin or sys.stdin
        self.interactive = interactive
        self.queue: deque[PermissionRequestEntry] = deque()
        self.current: PermissionRequestEntry | None = None
        self.answered: set[str] = set()
        self.asker: dict[str, str] = {}  # request id -> the session that asks (this one, or a sub-agent)

    def on_entry(self, e, sid: str | None = None) -> None:
        """An entry of the session, or (``sid``) of one of its sub-agents: their asks are asked here too."""
        if isinstance(e, PermissionRequestEntry):
            self.asker[e.request_id] = sid or self.sid
            self.queue.append(e)
        elif isinstance(e, PermissionDecisionEntry) and e.request_id:
            self.queue = deque(q for q in self.queue if q.request_id != e.request_id)
            if self.current and self.current.request_id == e.request_id:
                if e.request_id not in self.answered and self.interactive:
                    click.echo(" (answered from another shell)", err=True)  # closes the prompt line
                self.current = None

    def on_child(self, child: str, e) -> None:
        self.on_entry(e, child)

    def poll(self) -> None:
        if self.current is None and self.queue:
            self.current = self.queue.popleft()
            self._ask(self.current)
        if self.current is None or not self.interactive:
            return
        if self.answers is not None:
            line = self.answers()
            if line is not None:
                self._answer(self.current, line.strip())
            return
        try:
            ready, _, _ = select.select([self.stdin], [], [], 0)
        except (ValueError, OSError):  # no selectable stdin
            ready = []
            self.interactive = False
        if not ready:
            return
        line = self.stdin.readline()
        if line == "":
            self.interactive = False
            self._explain(self.current)
            return
        self._answer(self.current, line.strip())

    def _ask(self, req: PermissionRequestEntry) -> None:
        if self.interactive:
            asker = self.asker.get(req.request_id, self.sid)
            whose = "" if asker == self.sid else f"(sub-agent {asker[:8]}) "
            click.echo(click.style("⚡ ", fg="yellow") + whose + prompt_text(req.tool, req.input, req.always),
                       err=True)
            echo_diff(req.diff, req.diff_note)
            if self.answers is None:  # (interactive mode's editor shows the choices as its prompt)
                click.echo(click.style("  " + answer_choices(req.always), bold=True) + " ", nl=False, err=True)
        else:
            self._explain(req)

    def _explain(self, req: PermissionRequestEntry) -> None:
        click.echo("⚡ Waiting for approval of " + prompt_text(req.tool, req.input, req.always), err=True)
        echo_diff(req.diff, req.diff_note)
        asker = self.asker.get(req.request_id, self.sid)[:8]
        always = " [--always]" if always_offered(req.always) else ""
        click.echo(f"  (request {req.request_id}) Answer from any shell: mainsail approve {asker} "
                   f"{req.request_id}{always}  or  mainsail deny {asker} {req.request_id} -m '...'",
                   err=True)

    def _answer(self, req: PermissionRequestEntry, text: str) -> None:
        low = text.lower()
        if not text:
            self._ask(req)
            return
        if low in ALWAYS and not always_offered(req.always):
            click.echo(click.style("  (a)lways is not offered for this call: answer y or n (or say what to do "
                                   "instead). ", fg="yellow") + click.style(answer_choices(req.always), bold=True)
                       + " ", nl=False, err=True)
            return
        approve = low in YES or low in ALWAYS
        try:
            service(self.rt).decide(self.asker.get(req.request_id, self.sid), req.request_id, approve,
                                    always=low in ALWAYS, message=None if (approve or low in NO) else text)
        except (RequestClosed, RequestNotFound) as exc:
            click.echo(f"  {exc}", err=True)
            self.current = None
            return
        self.answered.add(req.request_id)
        self.current = None


def submit_and_watch(rt: Runtime, sid: str, prompt: str, *, print_mode: bool = False,
                     renderer: Renderer | None = None, interactive: bool | None = None,
                     stream=None) -> ResultEntry:
    """Submit ``prompt`` to session ``sid`` and follow it to the result of the run it starts.

    A busy session queues the prompt; the watch then goes on through the current
    run to the end of the one the prompt starts. ``stream`` (a ``StreamJson``)
    receives every entry. Ctrl-C detaches (the session goes on where a worker
    serves it) and exits 130.
    """
    after = _last_id(rt, sid)
    service(rt).submit(sid, prompt)
    if interactive is None:
        interactive = not print_mode
    if print_mode:
        r = None
    else:
        from cli.render import Renderer

        r = renderer or Renderer(show_prompts=False, show_requests=False)
    prompter = Prompter(rt, sid, interactive=interactive)

    ours = {"started": False}

    def on_entry(e) -> None:
        prompter.on_entry(e)  # first: an open prompt line is closed before anything else prints
        if is_entry_of_prompt(e, prompt):
            ours["started"] = True
        if r:
            r.entry(e)
        if stream is not None:
            stream.entry(e)

    def on_child(child: str, e) -> None:  # a sub-agent's entry: shown indented, its asks asked here
        prompter.on_child(child, e)
        if r:
            r.child_entry(child, e)
        if stream is not None:
            stream.child_entry(child, e)

    def on_link(child: str, call: str | None) -> None:  # a sub-agent's Task call, before its entries
        for shown in (r, stream):
            if shown is not None:
                shown.link_child(child, call)

    try:
        result = follow(rt.store, sid, on_entry=on_entry, on_delta=(r.delta if r else None), after=after,
                        poll=prompter.poll, stop=lambda e: isinstance(e, ResultEntry) and ours["started"],
                        on_child=on_child, on_link=on_link)
    except KeyboardInterrupt:
        if r:
            r.close()
        where = ("it goes on wherever a worker serves it (this command's own worker hands over as it leaves)"
                 if rt.worker else "it keeps running on the workers")
        click.echo(f"\nDetached from session {sid[:8]}; {where}.", err=True)
        sys.exit(130)
    return result


def _last_id(rt: Runtime, sid: str) -> str | None:
    return rt.store.last_log_id(sid)


def run_start_id(store, sid: str, scan: int = 500) -> str | None:
    """The log id just before the current run: the last result entry (None: from the start)."""
    rows = store.log_rows_back(sid, scan)
    for rid, fields in rows:
        for raw in stream_entries(fields):  # (a result entry always ends its stream entry)
            try:
                entry = parse_entry(raw)
            except Exception:  # an entry this version cannot parse: not a result
                continue
            if isinstance(entry, ResultEntry):
                return rid.decode() if isinstance(rid, bytes) else rid
    if len(rows) == scan:
        rid = rows[-1][0]
        return rid.decode() if isinstance(rid, bytes) else rid
    return None


def finish(result: ResultEntry, print_mode: bool) -> None:
    """Print-mode output and the exit code: 0 only for a successful result."""
    if print_mode:
        if result.is_error:
            click.echo(f"Error ({result.subtype}): {result.result}", err=True)
        else:
            click.echo(result.result)
        for d in result.permission_denials:
            click.echo(f"Denied: {d['tool_name']} {d['tool_input']}", err=True)
    if result.is_error:
        sys.exit(1)


def wait_for_memory(rt: Runtime, sid: str, *, quiet: bool = False, timeout: float = 30.0) -> None:
    """Before a command with an in-process worker exits: let the session's memory forks (and its title
    call, workflows/titles.py) finish.

    Without this, they would wait for the next worker (their steps are durable, so
    nothing is lost either way; this only saves the wait). Ctrl-C stops waiting.
    """
    import time

    from statemachines import State
    from workflows.exceptions import StepNotFound

    def naming(rec) -> bool:
        try:
            return bool(rec.title_step) and not rt.store.get_step(sid, rec.title_step).finished
        except StepNotFound:
            return False

    def busy() -> bool:
        rec = rt.store.get_session(sid)
        return rec.memory_pending() or naming(rec)

    if not busy():
        return
    rec = rt.store.get_session(sid)
    if not (rec.state is State.EXTRACTING or rec.saving_memory()):
        quiet = True  # only the title is on its way: nothing to say
    if not quiet:
        click.echo(click.style("Saving memory…", dim=True), err=True)
    deadline = time.monotonic() + timeout
    try:
        while busy() and time.monotonic() < deadline:
            time.sleep(0.1)
    except KeyboardInterrupt:
        pass
    if busy() and not quiet:
        click.echo(click.style(f"Memory for session {sid[:8]} is still being saved; it goes on when a worker "
                               "runs (`mainsail worker`).", dim=True), err=True)
