"""The installed command started from a directory that was deleted under the shell: a clear message naming
the directory and the fix (as Claude Code refuses to start there), never "Internal error"."""

from __future__ import annotations

import subprocess

import pytest


@pytest.mark.parametrize("args", [["-p", "hi"], ["run", "hi"]])
def test_a_deleted_current_directory_is_named_with_the_fix(cluster, tmp_path, args):
    gone = tmp_path / "gone"
    gone.mkdir()
    # The shell enters it, deletes it and runs mainsail there: $PWD names it, getcwd() fails.
    script = f'cd "{gone}" && rmdir "{gone}" && exec "$0" "$@"'
    done = subprocess.run(["sh", "-c", script, *cluster.mainsail_cmd(), *args], env=cluster.env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    assert f"The current directory {gone} no longer exists (it was deleted or moved)" in done.stderr
    assert "--cwd DIR" in done.stderr and "Internal error" not in done.stderr
