"""The one client protocol of the simple session verbs: what ``submit``, ``send``, ``cancel``,
``approve``/``deny`` and ``compact`` ask of a session, whether the session lives in this machine's Redis
(:class:`cli.clients.local.LocalClient`) or behind a team server (:class:`cli.clients.http.HttpClient`).

Each method does the verb and says on stdout (and stderr) exactly what the command says, so that one
command definition serves both modes with the same output and exit codes; :func:`cli.clients.client_for`
picks the implementation.
"""

from __future__ import annotations

from typing import Protocol

from cli.session_table import cut  # noqa: F401 (its home: importers find it here too)


class SessionClient(Protocol):
    """A session's simple verbs, by id or unique prefix (``session``), and ``submit``."""

    def submit(self, prompt: str, *, model, resume, continue_, fork, max_turns, max_budget_usd, workspace,
               permission_mode, allowed_tools, disallowed_tools, approval_timeout, system_prompt,
               append_system_prompt, no_memory, add_dirs, fallback_model, mcp_config, strict_mcp_config) -> None:
        """Queue ``prompt`` in the session the flags name (``mainsail submit``'s options, by parameter name: a new
        one, or one resumed, continued or forked), print its id on stdout and how to watch it on stderr. Through a
        server, ``workspace`` is a path on the server's machine (or ``None``) and the flags the API does not carry
        are refused."""

    def send(self, session: str, message: str | None, *, interrupt: bool, clear: bool) -> None:
        """Send ``message`` (``None``: only ``clear``), first stopping the turn (``interrupt``) or dropping the
        queued messages (``clear``)."""

    def cancel(self, session: str, *, clear: bool) -> None:
        """Stop the running turn (``clear``: and drop the queued messages)."""

    def decide(self, session: str, request: str | None, approve: bool, *, always: bool = False,
               message: str | None = None) -> None:
        """Approve (``always``: and add a session rule) or deny (with ``message``) a pending request;
        ``request`` may be ``None`` when only one waits."""

    def compact(self, session: str, instructions: str | None) -> None:
        """Compact an idle session, then print the compaction's result (exit code 1 if it failed)."""


def decided_line(approve: bool, tool: str, summary: str, sid: str, request: str, always: bool,
                 rules: list[str]) -> str:
    """What ``approve``/``deny`` say they did (``rules``: those an ``--always`` added)."""
    extra = ""
    if always:
        extra = (f" and added the session rule{'s' if len(rules) > 1 else ''} {', '.join(rules)}"
                 if rules else " (once: no rule can cover this call, so none was added)")
    return f"{'Approved' if approve else 'Denied'} {tool}: {summary} (session {sid[:8]}, request {request}){extra}."


__all__ = ["SessionClient", "cut", "decided_line"]
