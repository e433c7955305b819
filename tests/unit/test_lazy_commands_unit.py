"""The root group's lazy command table (cli.main.COMMANDS): every command is there, ``--help`` lists each
with the line its own help starts with, and the list is made without importing any command's module."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from cli.main import COMMANDS, cli, load_command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_line_is_the_commands_own_short_help(name):
    command = load_command(name)
    assert isinstance(command, click.Command) and command.name == name
    for limit in (30, 45, 80, 300):
        assert click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit) == command.get_short_help_str(limit)


def test_help_lists_every_command_and_an_unknown_one_is_refused():
    out = CliRunner().invoke(cli, ["--help"], catch_exceptions=False).output
    listed = out.split("Commands:")[1].split()
    assert all(name in listed for name in COMMANDS)
    bad = CliRunner().invoke(cli, ["nosuch"])
    assert bad.exit_code == 2 and "No such command 'nosuch'" in bad.output


def test_help_imports_no_command_module():
    code = ("import sys\nfrom click.testing import CliRunner\nfrom cli.main import COMMANDS, cli\n"
            "CliRunner().invoke(cli, ['--help'])\n"
            "print(sorted({m.partition(':')[0] for m, _ in COMMANDS.values()} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_a_command_leaves_its_heap_to_the_exit_uncollected():
    """cli.main.main freezes what is alive before the interpreter's exit, whose collections of a loaded engine's
    heap took ~1 s after `mainsail -p` had printed its result (bench/README.md); exit handlers still run."""
    code = ("import atexit, gc, sys\natexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
            "sys.argv = ['mainsail', '--version']\nfrom cli.main import main\nmain()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "mainsail" in out.stdout and "frozen True" in out.stdout, out.stdout + out.stderr
