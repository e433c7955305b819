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


def test_a_worker_builds_the_deferred_record_schemas_before_it_serves():
    """The record models build their pydantic schemas on first use (a reading command builds one); a worker's
    preload builds them all, so no step pays for it."""
    import subprocess
    import sys

    probe = ("from pydantic import BaseModel\n"
             "import workflows.models as m\n"
             "def subs(c):\n"
             "    for s in c.__subclasses__():\n"
             "        yield s; yield from subs(s)\n"
             "def waiting():\n"
             "    return sorted(c.__name__ for c in subs(BaseModel)\n"
             "                  if c.__module__.startswith('workflows.') and not c.__pydantic_complete__)\n"
             "before = waiting()\n"
             "from tasks.worker import preload\n"
             "preload(['tools'])\n"
             "print(len(before), 'SessionRecord' in before, waiting(), m.ENTRY_ADAPTER.core_schema is not None)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) > 10 and out[1] == "True" and out[2:] == ["[]", "True"], out
