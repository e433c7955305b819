"""The ``mainsail`` command: a root group; each command group lives in its own module.

Domain errors become clear messages and exit codes here; a traceback shown to
a user is a bug.
"""

from __future__ import annotations

import os
import sys

import click

from cli.agents_flag import agents_option
from cli.trust_flag import trust_option
from demo import PROVIDER as _SCRIPTED  # noqa: F401  (registers the scripted models every command accepts)
from statemachines import InvalidTransition
from workflows.exceptions import MainsailError, StoreUnavailable
from workflows.store.resilience import AuthenticationError, NoPermissionError, RedisConnectionError, RedisTimeoutError


def _debug(exc: BaseException) -> None:
    """With MAINSAIL_DEBUG=1, show the traceback behind a message (for bug reports)."""
    if os.environ.get("MAINSAIL_DEBUG", "").lower() in ("1", "true", "yes"):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)


class FriendlyErrors:
    """Domain errors become one clear message (and exit code 1), never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt, SystemExit):
            raise
        except BrokenPipeError:
            # The reader went away (`mainsail ... | head`): stop quietly, as Unix tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(141) from None
        except Exception as exc:
            _debug(exc)
            raise click.ClickException(_message(exc)) from None


class MainsailGroup(FriendlyErrors, click.Group):
    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from cli.remote import route

        # With MAINSAIL_SERVER set, session commands go through the server's API (cli/remote/).
        return route(super().get_command(ctx, cmd_name))


class MainsailCommand(FriendlyErrors, click.Command):
    pass


def _message(exc: Exception) -> str:
    """The one-paragraph message a user sees for an exception."""
    if isinstance(exc, (MainsailError, InvalidTransition)):
        return str(exc)
    if isinstance(exc, FileNotFoundError) and (gone := missing_cwd()) is not None:
        return gone
    if isinstance(exc, (AuthenticationError, NoPermissionError)):
        return str(StoreUnavailable(f"Redis refused this client ({exc}): its password or ACL user is no longer "
                                    "accepted. Check the credentials in MAINSAIL_REDIS_URL."))
    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
        return str(StoreUnavailable(f"Lost the connection to Redis ({exc}). Is it running? Check MAINSAIL_REDIS_URL."))
    return (f"Internal error: {type(exc).__name__}: {exc}. This is a bug in Mainsail; "
            "rerun with MAINSAIL_DEBUG=1 to see where it happened.")


def missing_cwd() -> str | None:
    """The message for a current directory that no longer exists (deleted or moved while a shell was in
    it), naming it as the shell knows it ($PWD); None while it exists."""
    try:
        os.getcwd()
        return None
    except FileNotFoundError:
        pwd = os.environ.get("PWD", "")
        where = f"The current directory {pwd}" if pwd and not os.path.isdir(pwd) else "The current directory"
        return (f"{where} no longer exists (it was deleted or moved). Run mainsail from an existing "
                "directory: cd to one (or recreate it), or give the workspace with --cwd DIR.")


@click.group(cls=MainsailGroup, invoke_without_command=True)
@click.version_option(package_name="mainsail")
@click.option("-r", "--resume", metavar="SID", help="Interactive mode on this session (id or unique prefix).")
@click.option("-c", "--continue", "continue_", is_flag=True, help="Interactive mode on this directory's latest session.")
@click.option("--fork-session", "fork", is_flag=True, help="With --resume/--continue: work on a copy.")
@click.option("--model", help="Model for the session.")
@click.option("--permission-mode", type=click.Choice(["default", "acceptEdits", "plan", "dontAsk",
                                                      "bypassPermissions"]))
@click.option("--allowedTools", "--allowed-tools", "allowed_tools", multiple=True, metavar="RULES")
@click.option("--disallowedTools", "--disallowed-tools", "disallowed_tools", multiple=True, metavar="RULES")
@click.option("--approval-timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS")
@click.option("--no-memory", "no_memory", is_flag=True, help="No auto-memory for the session.")
@agents_option
@trust_option
@click.option("--add-dir", "add_dirs", multiple=True, metavar="DIR",
              help="A directory outside the workspace that tools may use as if inside it (repeatable).")
@click.option("--fallback-model", metavar="MODEL", help="Retry a call once with this model when the main one is "
                                                         "overloaded (529).")
@click.pass_context
def cli(ctx: click.Context, resume, continue_, fork, model, permission_mode, allowed_tools, disallowed_tools,
        approval_timeout, no_memory, add_dirs, fallback_model) -> None:
    """Mainsail: durable coding-agent sessions on Celery and Redis.

    With no command, opens an interactive prompt loop on a new session (or the
    one --resume/--continue names). Type /help there for the slash commands.

    Claude Code's command line works too: `mainsail "fix it"` (interactive,
    starting with that message), `mainsail -p "..."` (print mode),
    `--output-format json|stream-json --verbose`, `--input-format stream-json`
    (the Agent SDK's), and Claude Code's flags (`mainsail -p --help` lists them).
    """
    if ctx.invoked_subcommand is not None:
        return
    from pathlib import Path

    from cli.remote import require_redis

    require_redis("Interactive mode (`mainsail` with no command)")

    from cli.interactive import run_interactive
    from cli.opening import flag_options

    options = flag_options(model=model, permission_mode=permission_mode, allowed_tools=allowed_tools,
                           disallowed_tools=disallowed_tools, approval_timeout=approval_timeout, add_dirs=add_dirs,
                           no_memory=no_memory, fallback_model=fallback_model)
    run_interactive(options, resume=resume, continue_=continue_, fork=fork, workspace=Path.cwd())


def _register() -> None:
    from cli import (
        approvals,
        beat,
        costs,
        demo,
        doctor,
        fsm,
        housekeeping,
        mcp,
        memory,
        notify,
        rewind,
        run,
        schedule,
        serve,
        sessions,
        token,
        transfer,
        worker,
    )

    cli.add_command(run.run)
    cli.add_command(run.submit)
    for command in (sessions.sessions, sessions.show, sessions.watch, sessions.send, sessions.cancel,
                    sessions.compact):
        cli.add_command(command)
    cli.add_command(worker.worker)
    cli.add_command(worker.reap)
    cli.add_command(demo.demo)
    cli.add_command(fsm.fsm)
    cli.add_command(approvals.pending)
    cli.add_command(approvals.approve)
    cli.add_command(approvals.deny)
    cli.add_command(transfer.export_cmd)
    cli.add_command(transfer.import_cmd)
    cli.add_command(memory.memory)
    cli.add_command(mcp.mcp)
    cli.add_command(doctor.doctor)
    cli.add_command(housekeeping.rm)
    cli.add_command(housekeeping.gc)
    cli.add_command(serve.serve)
    cli.add_command(token.token)
    cli.add_command(notify.notify)
    cli.add_command(costs.costs)
    cli.add_command(costs.budget)
    cli.add_command(schedule.schedule)
    cli.add_command(beat.beat)
    cli.add_command(rewind.rewind_cmd)


_register()


def claude_style(args: list[str]) -> bool:
    """True when ``args`` are Claude Code's command line (``mainsail -p "hi"``, ``mainsail "hi"``, the
    Agent SDK's flags) rather than one of Mainsail's subcommands (``mainsail run ...``): the first word
    that is neither a flag nor a flag's value is not a subcommand's name, or there is none."""
    from cli.headless.command import main_command

    takes_value = {}
    for p in main_command.params:
        if isinstance(p, click.Option):
            for opt in (*p.opts, *p.secondary_opts):
                takes_value[opt] = not p.is_flag and not p.count
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return True
        if a.startswith("-") and a != "-":
            i += 2 if ("=" not in a and takes_value.get(a)) else 1
            continue
        return a not in cli.commands
    # `mainsail --help` / `--version` alone: the group's; with any other flag (`mainsail -p --help`): Claude Code's.
    return not (args and all(a in ("--help", "-h", "--version") for a in args))


def _claude_command() -> click.Command:
    from cli.headless.command import main_command
    from cli.remote import route

    main_command.__class__ = MainsailCommand
    return route(main_command)


def main() -> None:
    code: int | str | None = 0
    try:
        if claude_style(sys.argv[1:]):
            _claude_command()(args=sys.argv[1:], prog_name="mainsail", standalone_mode=True)
        else:
            cli(standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        code = 130
    except SystemExit as exc:
        code = exc.code
    from cli import in_process

    if in_process.in_process_threads_started():
        # Celery's pool threads of an in-process worker cannot be joined reliably
        # (a blocking broker read may never return); the session state is all in
        # Redis, so leave without waiting for them.
        if isinstance(code, str):
            click.echo(code, err=True)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code or 0)
    sys.exit(code)
