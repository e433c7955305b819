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


#: Command name -> ("module:attribute", its one-line help as ``mainsail --help`` lists it). A command's module is
#: imported only when that command runs or shows its own help, so that ``mainsail --version`` or ``sessions``
#: loads neither Celery nor the model SDK (tests/unit/test_lazy_commands_unit.py holds each line to the command's).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("cli.run:run", "Run PROMPT in a session and watch it until it finishes."),
    "submit": ("cli.run:submit",
               "Submit PROMPT and return at once, printing the session id (watch it with `mainsail watch`)."),
    "sessions": ("cli.sessions_list:sessions", "List sessions, newest first (QUEUED: messages waiting to run next, in order)."),
    "show": ("cli.sessions:show", "Print a session's facts and its transcript."),
    "watch": ("cli.sessions:watch",
              "Replay a session's transcript and follow it live; Ctrl-C detaches (it never cancels)."),
    "send": ("cli.sessions:send",
             "Send MESSAGE to a session; while it is busy it waits in the inbox and runs next, in order."),
    "cancel": ("cli.sessions:cancel",
               "Stop a session's running turn (and any running command); its next queued message then runs."),
    "compact": ("cli.sessions:compact", "Compact an idle session now: its conversation is summarised for the model "
                                        "(the transcript keeps it)."),
    "worker": ("cli.worker:worker",
               "Start a Celery worker for Mainsail's queues (for -Q model: several supervised processes)."),
    "reap": ("cli.worker:reap",
             "Re-dispatch steps whose worker died or that nobody picked up (workers do this on their own)."),
    "demo": ("cli.demo:demo", "Run a scripted session (Read, Edit, Bash) through Redis, a worker and the machine."),
    "fsm": ("cli.fsm:fsm", "Print the session state machine as a mermaid diagram."),
    "pending": ("cli.pending_list:pending", "List permission requests waiting for a decision, across sessions."),
    "approve": ("cli.approvals:approve", "Approve a pending request of SESSION (id or prefix); REQUEST may be "
                                         "omitted when only one waits."),
    "deny": ("cli.approvals:deny",
             "Deny a pending request of SESSION; the model gets an error result with your message."),
    "export": ("cli.transfer:export_cmd",
               "Write SESSION's transcript (id or unique prefix) as JSONL, one entry a line."),
    "import": ("cli.transfer:import_cmd",
               "Import a JSONL transcript (Mainsail's export or Claude Code's) as a new idle session."),
    "memory": ("cli.memory:memory",
               "Session memory (a session's notes) and auto-memory (the project's durable records)."),
    "mcp": ("cli.mcp:mcp", "Configure and check MCP servers (Claude Code's `claude mcp`)."),
    "doctor": ("cli.doctor:doctor", "Check Redis, workers, the API key and the OS sandbox; say what to fix."),
    "rm": ("cli.housekeeping:rm", "Remove sessions (id or unique prefix): records, transcripts, steps, queues, "
                                  "memory notes, and the saved tool results of their own calls."),
    "gc": ("cli.housekeeping:gc",
           "Remove sessions inactive for longer than AGE, and forget old finished steps of the others."),
    "serve": ("cli.serve:serve",
              "Serve the HTTP API (/api), the web console (/) and metrics (/metrics) for a team."),
    "token": ("cli.token:token",
              "API tokens for `mainsail serve` (who may read, decide and act through the HTTP API)."),
    "notify": ("cli.notify:notify",
               "Webhooks when a session waits for approval, finishes or fails (Slack, or signed JSON to any URL)."),
    "costs": ("cli.costs:costs",
              'What sessions cost, from the usage every model call recorded ("local": sessions without a token).'),
    "budget": ("cli.costs:budget",
               "Budgets per API token or workspace: past its limit, no new turn starts (the reason is shown)."),
    "schedule": ("cli.schedule:schedule",
                 "Cron schedules of unattended sessions (fired by `mainsail beat`; times are UTC)."),
    "beat": ("cli.beat:beat", "Fire the schedules (`mainsail schedule`) on time; several may run, one leads."),
    "warm": ("cli.warm_command:warm", "Warm start: a server that has Mainsail loaded runs your commands in a fork "
                                      "(docs/warm-start.md)."),
    "rewind": ("cli.rewind:rewind_cmd", "Rewind a session to before one of its messages: its files (checkpoints "
                                        "taken before each Edit, Write, MultiEdit and NotebookEdit), its "
                                        "conversation, or both."),
}


def load_command(name: str) -> click.Command:
    """The command ``name`` of :data:`COMMANDS`, its module imported now."""
    import importlib

    module, _, attr = COMMANDS[name][0].partition(":")
    return getattr(importlib.import_module(module), attr)


def _summary(name: str) -> click.Command:
    """A stand-in for command ``name`` that holds only its line of :data:`COMMANDS` (click shortens it)."""
    return click.Command(name, help=COMMANDS[name][1])


class MainsailGroup(FriendlyErrors, click.Group):
    """The root group: its commands are :data:`COMMANDS`, each loaded when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from cli.remote import route

        # With MAINSAIL_SERVER set, session commands go through the server's API (cli/remote/).
        return route(load_command(cmd_name)) if cmd_name in COMMANDS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help`` from :data:`COMMANDS`' lines, importing no command."""
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [(name, _summary(name).get_short_help_str(limit)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class MainsailCommand(FriendlyErrors, click.Command):
    pass


def _message(exc: Exception) -> str:
    """The one-paragraph message a user sees for an exception."""
    if isinstance(exc, (MainsailError, InvalidTransition)):
        return str(exc)
    if isinstance(exc, FileNotFoundError) and (gone := missing_cwd()) is not None:
        return gone
    if "redis" in sys.modules and (lost := _redis_message(exc)):  # (no Redis error before redis-py is loaded)
        return lost
    return (f"Internal error: {type(exc).__name__}: {exc}. This is a bug in Mainsail; "
            "rerun with MAINSAIL_DEBUG=1 to see where it happened.")


def _redis_message(exc: Exception) -> str | None:
    from workflows.store.resilience import AuthenticationError, NoPermissionError, RedisConnectionError, RedisTimeoutError

    if isinstance(exc, (AuthenticationError, NoPermissionError)):
        return str(StoreUnavailable(f"Redis refused this client ({exc}): its password or ACL user is no longer "
                                    "accepted. Check the credentials in MAINSAIL_REDIS_URL."))
    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
        return str(StoreUnavailable(f"Lost the connection to Redis ({exc}). Is it running? Check MAINSAIL_REDIS_URL."))
    return None


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
@click.option("--plugin-dir", "plugin_dirs", multiple=True, metavar="DIR", expose_value=False,
              callback=lambda ctx, param, value: ctx.meta.__setitem__("mainsail.plugin_dirs", value),
              help="Before `mcp list` or `mcp get`: also the plugin in DIR's MCP servers, as Claude Code's "
                   "`claude --plugin-dir DIR mcp list` (repeatable).")
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
    if ctx.meta.get("mainsail.plugin_dirs") and ctx.invoked_subcommand != "mcp":
        raise click.UsageError(f"--plugin-dir before a command is for `mcp list` and `mcp get` only; `mainsail "
                               f"{ctx.invoked_subcommand}` does not load plugins.")
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


def claude_style(args: list[str]) -> bool:
    """True when ``args`` are Claude Code's command line (``mainsail -p "hi"``, ``mainsail "hi"``, the
    Agent SDK's flags) rather than one of Mainsail's subcommands (``mainsail run ...``): the first word
    that is neither a flag nor a flag's value is not a subcommand's name, or there is none."""
    # `mainsail --help` / `--version` alone: the group's; with any other flag (`mainsail -p --help`): Claude Code's.
    if args and all(a in ("--help", "-h", "--version") for a in args):
        return False
    takes_value: dict[str, bool] | None = None  # Claude Code's flags (loaded at the first flag met)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return True
        if a.startswith("-") and a != "-":
            takes_value = takes_value if takes_value is not None else _claude_flags()
            i += 2 if ("=" not in a and takes_value.get(a)) else 1
            continue
        return a not in COMMANDS
    return True


def _claude_flags() -> dict[str, bool]:
    """Each flag of Claude Code's command line -> whether it takes a value."""
    from cli.headless.command import main_command

    return {opt: not p.is_flag and not p.count for p in main_command.params if isinstance(p, click.Option)
            for opt in (*p.opts, *p.secondary_opts)}


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
    in_process = sys.modules.get("cli.in_process")  # (loaded only by a command that may run a worker here)
    if in_process is not None and in_process.in_process_threads_started():
        # Celery's pool threads of an in-process worker cannot be joined reliably
        # (a blocking broker read may never return); the session state is all in
        # Redis, so leave without waiting for them.
        if isinstance(code, str):
            click.echo(code, err=True)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code or 0)
    leave_heap()
    sys.exit(code)


def leave_heap() -> None:
    """Hide every object alive now from the collector for the rest of the process, which is about to end.

    At exit CPython collects again and again while it tears the modules down; a command that loaded the
    engine (~950 modules, pydantic's schemas) spent ~0.7-1 s of its wall there after printing its result
    (bench/README.md, first_request.py). Frozen objects are never walked; exit handlers still run, and
    objects still go as their references drop."""
    import gc

    gc.freeze()
