"""Background shells: Bash's ``run_in_background``, followed by BashOutput and stopped by KillShell.

A background command runs on the tools worker that ran the Bash call, under a guard that stops it if
that worker dies; its output streams into Redis, so any worker can read it. Modules:

* :mod:`~workflows.shells.session`: a session's shells as the tools see them (start, read, kill);
* :mod:`~workflows.store.shells`: the Redis side (every change one Lua script), shared by all workers;
* :mod:`~workflows.shells.host`: the shells this process runs, and the thread that looks after them;
* :mod:`~workflows.shells.guard`: the small program each command runs under;
* :mod:`~workflows.shells.groups`: stopping a process group (foreground commands use it too).
"""

from workflows.shells.host import shutdown
from workflows.shells.session import SessionShells
from workflows.store.shells import ShellStore

__all__ = ["SessionShells", "ShellStore", "shutdown"]
