"""``--agents JSON`` (Claude Code's flag; the Agent SDK's ``agents`` option passes it): sub-agent types for
a new session. Kept light (click only): the root command group takes it too."""

from __future__ import annotations

import click


def _agents_flag(ctx: click.Context, param: click.Parameter, value: str | None):
    """``--agents JSON``: sub-agent types for a new session, kept for :func:`cli.opening.flag_options`."""
    if value:
        from workflows.agents import AgentFileError, agents_from_json

        try:
            ctx.meta["mainsail.agents"] = agents_from_json(value)
        except AgentFileError as exc:
            raise click.BadParameter(str(exc), param_hint="--agents") from None
    return value


def agents_option(f):
    """Claude Code's ``--agents JSON``: ``{"name": {"description", "prompt", "tools"?, "model"?}}``."""
    return click.option("--agents", metavar="JSON", expose_value=False, callback=_agents_flag,
                        help='Sub-agent types for the Task tool, e.g. \'{"reviewer": {"description": "Reviews code", '
                             '"prompt": "You are a code reviewer"}}\'.')(f)


def flag_agents() -> dict | None:
    """The ``--agents`` of the command being run, if any."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get("mainsail.agents") if ctx is not None else None


__all__ = ["agents_option", "flag_agents"]
