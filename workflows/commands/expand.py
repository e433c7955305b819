"""A command invoked: its arguments put in its template, its ``!`` lines and ``@`` references found, and (once
those ran) the prompt the model gets. Pure string work; the engine runs the lines
(:mod:`workflows.engine.commands`).

As Claude Code 2.1.330 does it:

- ``$ARGUMENTS`` is everything after the name as typed; ``$ARGUMENTS[N]`` and ``$N`` the N-th argument
  (from 0, split like a shell: ``"a b" c`` is two), left as written when there is no such argument. A
  template that uses none of these gets ``ARGUMENTS: <args>`` appended when arguments were given.
- ``!`command``` (at the start of a line or after whitespace) runs with Bash before the prompt is sent;
  its output replaces it. The lines are found in the template *before* the arguments go in, so an
  argument can fill a placeholder of a line the file wrote but never add a line of its own.
- ``@path`` (after whitespace or at the start; ``@"a b.txt"`` for spaces) attaches the file, read with
  Read, as reminders before the command's text (which keeps ``@path`` as written).
- The prompt is two text blocks: ``<command-message>``/``<command-name>``/``<command-args>``, then the text.
"""

from __future__ import annotations

import json
import re
import shlex

from workflows.models.commands import CommandDefinition, CommandLine, CommandRun

__all__ = ["CommandError", "MAX_FILE_REFS", "MAX_SHELL_LINES", "attached_files", "bash_mode", "bash_mode_texts",
           "expand", "mentions", "parse_invocation", "prompt_blocks", "split_args", "substitute"]

MAX_SHELL_LINES = 20  # ``!`…``` lines in one command
MAX_FILE_REFS = 20  # ``@path`` references in one command (its text and its arguments)

_INVOCATION = re.compile(r"\A/([A-Za-z0-9][A-Za-z0-9_.:-]*)(?:\s+(.*?))?\s*\Z", re.S)
_SHELL = re.compile(r"(?<!\S)!`([^`]+)`")
_FILE = re.compile(r"(?<!\S)@(?:\"([^\"\n]+)\"|([^\s\"'`<>()\[\]{}]+))")
_PLACEHOLDER = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)")


class CommandError(ValueError):
    """A command that cannot run as invoked; the message names it and the fix."""


def parse_invocation(text: str) -> tuple[str, str] | None:
    """``("review", "src/a.py now")`` for ``/review src/a.py now``; None when ``text`` is not ``/name ...``."""
    m = _INVOCATION.match(text.strip())
    if m is None:
        return None
    return m.group(1), (m.group(2) or "").strip()


def split_args(args: str) -> list[str]:
    """The arguments as a shell splits them (quotes group words); plain whitespace where quotes do not pair."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def substitute(template: str, args: str, argv: list[str]) -> str:
    """``template`` with ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$N`` replaced (one pass: an argument's own
    ``$1`` stays as typed)."""

    def one(m: re.Match) -> str:
        index = m.group(1) or m.group(2)
        if index is None:
            return args
        n = int(index)
        return argv[n] if n < len(argv) else m.group(0)

    return _PLACEHOLDER.sub(one, template)


def expand(definition: CommandDefinition, typed: str, args: str) -> CommandRun:
    """The run of ``definition`` invoked as ``typed`` with ``args``: its text and the lines to run first.

    Raises:
        CommandError: more ``!`` lines or ``@`` references than a command may have.
    """
    template = definition.body
    argv = split_args(args)
    pieces = _SHELL.split(template)  # text, command, text, command, ..., text
    commands = pieces[1::2]
    if len(commands) > MAX_SHELL_LINES:
        raise CommandError(f"/{definition.name} ({definition.path}) has {len(commands)} !`…` lines; a command may "
                           f"have at most {MAX_SHELL_LINES}. Move the rest into a script it runs.")
    texts = [substitute(t, args, argv) for t in pieces[0::2]]
    if args and not _PLACEHOLDER.search(template):
        texts[-1] += f"\n\nARGUMENTS: {args}"
    if definition.skill_dir:  # a skill: its folder first, so the model can read the files beside SKILL.md
        texts[0] = f"Base directory for this skill: {definition.skill_dir}\n\n" + texts[0].lstrip("\n")
    lines = []
    for cmd in commands:
        command = substitute(cmd, args, argv)
        lines.append(CommandLine(kind="bash", pattern=f"!`{command}`", tool_input={"command": command}))
    refs = list(dict.fromkeys(ref for t in texts for ref in file_refs(t)))
    if len(refs) > MAX_FILE_REFS:
        raise CommandError(f"/{definition.name} names {len(refs)} files with @; a command may attach at most "
                           f"{MAX_FILE_REFS}. Name fewer files (or let the model Read them).")
    for ref in refs:
        lines.append(CommandLine(kind="file", pattern=f"@{ref}", tool_input={"file_path": ref}))
    return CommandRun(name=definition.name, typed=typed.strip(), args=args, texts=texts, lines=lines,
                      allowed_tools=list(definition.allowed_tools), model=definition.model, path=definition.path)


_BASH_INPUT = re.compile(r"\A<bash-input>(.*)</bash-input>\Z", re.S)


def bash_mode(typed: str) -> CommandRun | None:
    """Claude Code's bash mode (``!cmd`` in interactive mode, sent as ``<bash-input>cmd</bash-input>``, the
    transcript's own shape): a run of one Bash call; None for any other prompt."""
    m = _BASH_INPUT.match(typed.strip())
    if m is None or not m.group(1).strip():
        return None
    command = m.group(1).strip()
    return CommandRun(kind="bash", name="", typed=typed.strip(), texts=[""],
                      lines=[CommandLine(kind="bash", pattern=f"!{command}", tool_input={"command": command})])


def mentions(typed: str) -> CommandRun | None:
    """A plain prompt's ``@path`` mentions (Claude Code attaches each file, read with Read, before the prompt);
    None when it names none. At most :data:`MAX_FILE_REFS`: the rest stay words."""
    refs = list(dict.fromkeys(file_refs(typed)))[:MAX_FILE_REFS]
    if not refs:
        return None
    return CommandRun(kind="mention", name="", typed=typed, texts=[typed],
                      lines=[CommandLine(kind="file", pattern=f"@{ref}", tool_input={"file_path": ref})
                             for ref in refs])


def bash_mode_texts(run: CommandRun) -> tuple[str, str]:
    """What bash mode adds to the conversation, as Claude Code's transcript holds it: the input, the output."""
    line = run.lines[0]
    out, err = ("", line.output or "") if line.error is not None else (line.output or "", "")
    return (f"<bash-input>{line.tool_input.get('command', '')}</bash-input>",
            f"<bash-stdout>{out}</bash-stdout><bash-stderr>{err}</bash-stderr>")


def attached_files(run: CommandRun) -> list[str]:
    """The reminders of the files a run attached (read without error), in order."""
    blocks = []
    for line in run.lines:
        if line.kind == "file" and line.error is None and line.output is not None:
            blocks += read_reminders(str(line.tool_input.get("file_path", "")), line.output)
    return blocks


def file_refs(text: str) -> list[str]:
    """The paths ``@`` names in ``text``, in order (trailing punctuation is not part of an unquoted one)."""
    out = []
    for m in _FILE.finditer(text):
        path = m.group(1) if m.group(1) is not None else m.group(2).rstrip(".,;:!?")
        if path:
            out.append(path)
    return out


def read_reminders(path: str, content: str) -> list[str]:
    """A file attached with ``@``, as Claude Code puts it before the prompt: the Read call and its result."""
    call = json.dumps({"file_path": path}, separators=(",", ":"), ensure_ascii=False)
    return [f"<system-reminder>\nCalled the Read tool with the following input: {call}\n</system-reminder>",
            f"<system-reminder>\nResult of calling the Read tool:\n{content}\n</system-reminder>"]


def prompt_blocks(run: CommandRun) -> list[str]:
    """The texts of the prompt's blocks, once every line ran: the attached files, the command's tags, its text
    with each ``!`` line's output in place."""
    texts = run.texts
    bash = [line for line in run.lines if line.kind == "bash"]
    body = texts[0] + "".join((line.output or "") + text for line, text in zip(bash, texts[1:]))
    blocks = attached_files(run)
    tags = f"<command-message>{run.name}</command-message>\n<command-name>/{run.name}</command-name>\n"
    if run.args:
        tags += f"<command-args>{run.args}</command-args>\n"
    blocks.append(tags)
    if body.strip():
        blocks.append(body)
    return blocks
