"""``--trust-project``: the person trusts this workspace's own settings (hooks, sandbox, env, allow rules, MCP
servers...) for a new session, and the trust is recorded for their current content (:mod:`workflows.trust`).
Kept light (click only), as ``--agents``: every command that starts a session takes it."""

from __future__ import annotations

import click

HELP = ("Trust this folder's own settings that run commands or widen access (hooks, sandbox, env, allow rules, "
        "MCP servers): they apply, and trust is recorded until they change. Without it they are ignored unless "
        "trusted before.")


def _trust_flag(ctx: click.Context, param: click.Parameter, value: bool):
    if value:
        ctx.meta["mainsail.trust_project"] = True
    return value


def trust_option(f):
    return click.option("--trust-project", is_flag=True, expose_value=False, callback=_trust_flag, help=HELP)(f)


def flag_trust() -> str | None:
    """``"--trust-project"`` when the command being run was given it, else None."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if ctx.meta.get("mainsail.trust_project"):
            return "--trust-project"
        ctx = ctx.parent
    return None


def ask_trust(ask):
    """The trust prompt for interactive mode: prints Claude Code's question and reads y/n with ``ask``."""

    def prompt(lines: list[str]) -> bool:
        for line in lines:
            click.secho(line, fg="yellow" if line.lstrip().startswith("!") else None)
        answer = (ask("Yes, I trust this folder (y) / No, continue without these settings (n): ") or "").strip()
        return answer.lower() in ("y", "yes")

    return prompt


__all__ = ["ask_trust", "flag_trust", "trust_option"]
