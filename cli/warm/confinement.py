"""Is a client confined exactly as the warm server is? Only then may the server run its command.

A command run by the server runs in the server's confinement, not the client's. A client in a sandbox (the
Bash tool's bwrap, a container, a seccomp filter, another cgroup whose kill must reach the command, tighter
limits) would otherwise get its command run outside of it: an escape. So the server compares what Linux
says of both processes (``/proc/PID``): every namespace, the root directory, the cgroup, the user and groups,
the capabilities, no_new_privs and seccomp, the resource limits, the nice value and scheduling policy, the
CPUs and memory nodes allowed, the OOM score adjustment and the security label. Anything that differs, or that cannot be read, refuses (fail closed).
"""

from __future__ import annotations

import os

#: The lines of /proc/PID/status that must match.
STATUS_FIELDS = ("Uid", "Gid", "Groups", "NoNewPrivs", "Seccomp", "Seccomp_filters", "CapInh", "CapPrm", "CapEff",
                 "CapBnd", "CapAmb", "Cpus_allowed_list", "Mems_allowed_list")
#: Whole files of /proc/PID that must match (a missing one must be missing on both sides).
FILES = ("cgroup", "limits", "oom_score_adj", "attr/current")


def facts(pid: int | str) -> dict[str, str]:
    """What confines process ``pid`` ("self" for this one); OSError where it cannot all be read."""
    base = f"/proc/{pid}"
    out = {f"ns/{name}": os.readlink(f"{base}/ns/{name}") for name in sorted(os.listdir(f"{base}/ns"))}
    out["root"] = os.readlink(f"{base}/root")
    with open(f"{base}/status") as f:
        status = dict(line.rstrip("\n").split(":", 1) for line in f if ":" in line)
    for name in STATUS_FIELDS:
        out[name] = status.get(name, "(none)").strip()
    with open(f"{base}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    out["nice"], out["policy"] = fields[16], fields[38]  # (stat's fields 19 and 41: after "pid (comm)", 17 and 39)
    for name in FILES:
        try:
            with open(f"{base}/{name}", "rb") as f:
                out[name] = f.read().decode("utf-8", "replace")
        except OSError as exc:  # (the same error on both sides is the same fact: no LSM, say)
            out[name] = f"(unreadable: {exc.strerror})"
    return out


def difference(pid: int, own: dict[str, str]) -> str | None:
    """Why process ``pid`` may not have its command run here (None: it may). ``own`` is :func:`facts` of
    this process."""
    try:
        theirs = facts(pid)
    except OSError as exc:
        return f"its confinement cannot be read ({exc.strerror or exc})"
    differ = sorted(k for k in own.keys() | theirs.keys() if own.get(k) != theirs.get(k))
    return f"it is confined otherwise ({', '.join(differ)} differ)" if differ else None
