"""The session service as a CLI command uses it: on the command's engine, its steps dispatched to the
workers (:mod:`workflows.sessions.service`), and its warnings said on stderr."""

from __future__ import annotations

import click

from cli.connect import Runtime
from tasks.dispatch import dispatch
from workflows.sessions.service import SessionService


def service(rt: Runtime) -> SessionService:
    """The session service of this command: its engine, its steps dispatched to the workers."""
    return SessionService(rt.engine, lambda steps: dispatch(steps))  # (looked up at each call: tests replace it)


def say_warnings(warnings: list[str]) -> None:
    """Each warning on stderr, in yellow."""
    for warning in warnings:
        click.secho(f"Warning: {warning}", fg="yellow", err=True)


__all__ = ["service", "say_warnings"]
