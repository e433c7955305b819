"""The Bash checker's execution oracle: what an approved line runs is what the checker saw.

For a batch of lines, :meth:`Oracle.check` asks the checker about each (default,
acceptEdits and plan modes, and default with a few allow rules); every line it
approves without asking runs for real, the way the Bash tool runs it (the
launch :func:`workflows.permissions.sandbox.prepare` builds: ``/bin/bash -c``
under the session's bwrap sandbox, its environment), in a fresh copy of a
small workspace, each line under its own ``strace -f -e trace=execve``. Then
every program that line executed must be one the checker approved, with the
arguments it saw: a simple command of the line or a level inside one of its
wrappers (``nice ls`` runs nice, then ls), argv[0] as written (the file resolved
through PATH), a glob word matching one or more arguments it matches, a tilde
word its expansion. A builtin executes nothing (its level stays in the list:
``"time" ls`` runs /usr/bin/time, ``nice echo`` /usr/bin/echo); bash's own exec
of the line is left out. A program executed that the checker did not see is a
*disagreement*. A line that only the deny rules ``Bash(touch:*)`` and
``Read(**/.env)`` in bypass mode let through runs as well, and must execute no
``touch`` (in any form: a wrapper, a nested command, a hidden line) and open no
file named ``.env``.

The oracle proves what runs, not what a program then does: an approved ``cat``
reading a file is the sandbox's and the path checks' business.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.unit.test_permissions_adversarial import make_tree, ruleset
from workflows.models import PermissionMode, SandboxSettings
from workflows.permissions import Decision, evaluate, sandbox
from workflows.permissions.shell import commands
from workflows.permissions.shell.bash_parse import Word, parse

#: The checker's settings each line is asked under (a line approved under any of them runs).
CONFIGS = [({}, "default"), ({}, "acceptEdits"), ({}, "plan"),
           ({"allow": ["Bash(touch:*)", "Bash(cp:*)", "Bash(echo:*)", "Bash(grep:*)"]}, "default")]
#: Deny rules in bypass mode: a line they let through must not execute a program they name (issue 25: the
#: hidden `touch` slipped past `Bash(touch:*)`). Such a line runs too, checked for that alone.
DENY_CONFIG = ({"deny": ["Bash(touch:*)", "Read(**/.env)"]}, "bypassPermissions")
DENIED_PROGRAMS = frozenset({"touch"})
DENIED_FILE = ".env"  # no process of such a line may open a file of this name
LINE_TIMEOUT = 10
_EXECVE = re.compile(r'^execve\("((?:\\x[0-9a-f]{2})*)", \[(.*)\]\.{0,3}, .*\) = (-?\d+)')
_ARG = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')
_OPEN = re.compile(r'^open(?:at2?)?\((?:[^,]*, )?"((?:\\x[0-9a-f]{2})*)".* = (\d+)')


def unavailable() -> str | None:
    """Why the oracle cannot run here (bwrap or strace missing or not working), or None."""
    if not shutil.which("strace"):
        return "strace is not installed (apt-get install strace; .ci/run installs it)"
    status = sandbox.sandbox_status()
    if not status.available:
        return f"the bwrap sandbox is unavailable: {status.detail}"
    probe = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-o", "/dev/null", "true"],
                           capture_output=True, timeout=30)
    return None if probe.returncode == 0 else f"strace cannot trace here: {probe.stderr.decode()[:200]}"


@dataclass
class Result:
    """One batch: how many lines were asked about, how many ran, and every disagreement (a message each)."""

    asked: int = 0
    ran: int = 0
    ran_past_deny: int = 0  # lines only the deny rules of DENY_CONFIG let through
    disagreements: list[str] = field(default_factory=list)


class Oracle:
    # ----------------------------------------------------------------------------- the checker's side

    def approved(self, command: str, ws: str, home: str, past_deny: bool = True) -> str | None:
        """"all" if some CONFIG approves ``command`` without asking, "deny" if only the deny rules of
        DENY_CONFIG let it through (and ``past_deny``), else None."""
        configs = [*((c, "all") for c in CONFIGS), *([(DENY_CONFIG, "deny")] if past_deny else [])]
        for (rules, mode), kind in configs:
            verdict = evaluate("Bash", {"command": command}, mode=PermissionMode(mode), rules=ruleset(rules),
                               workspace=ws, home=home, read_only=False)
            if verdict.decision is Decision.ALLOW:
                return kind
        return None

    def expected(self, command: str) -> list[list[tuple[str, Word | None]]]:
        """The argv (word value and Word) of every program the checker saw the line may run, in any level.

        Builtins and keywords are kept: whether bash resolves a name as one depends on quoting and on the
        wrapper around it; nothing outside this list may execute."""
        out = []
        for cmd in parse(command).top:
            values = [w.value for w in cmd.words]
            for level in commands.unwrap(values).levels:
                if not level:
                    continue  # a builtin or keyword level stays: `"time" ls` runs /usr/bin/time, `nice echo` echo
                suffix = values[len(values) - len(level):] == list(level)
                words = cmd.words[len(values) - len(level):] if suffix else [None] * len(level)
                out.append(list(zip(level, words)))
        return out

    # ----------------------------------------------------------------------------- a batch

    def check(self, lines: list[str], *, past_deny: bool = True) -> Result:
        """Run the approved ``lines`` (and, with ``past_deny``, those only DENY_CONFIG lets through)."""
        result = Result()
        parent = Path(tempfile.mkdtemp(prefix="mainsail-oracle-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
        try:
            ws, home = make_tree(parent)
            run: list[tuple[str, str]] = []
            for line in lines:
                result.asked += 1
                if "\x00" not in line and (kind := self.approved(line, ws, home, past_deny)):
                    run.append((line, kind))
            if run:
                traces = self._run([line for line, _ in run], ws, home)
                for (line, kind), (execs, opens) in zip(run, traces):
                    result.ran += kind == "all"
                    result.ran_past_deny += kind == "deny"
                    why = self._compare(line, execs, ws, home) if kind == "all" else _denied_ran(line, execs, opens)
                    if why:
                        result.disagreements.append(why)
        finally:
            shutil.rmtree(parent, ignore_errors=True)
        return result

    def _run(self, lines: list[str], ws: str, home: str) -> list[tuple[list[tuple[str, list[str]]], list[str]]]:
        """Run each line under strace in one sandbox launch built as the Bash tool builds it."""
        driver = (f"i=0; while IFS= read -r -d '' c; do cd {shlex.quote(ws)} || exit 97; unset OLDPWD; "
                  f"timeout -s KILL {LINE_TIMEOUT} strace --seccomp-bpf -f -ff -qq -xx -s 65535 -e trace=execve,open,openat,openat2 "
                  "-o /tmp/oracle/t/$i -- /bin/bash -c \"$c\" </dev/null >/dev/null 2>&1; i=$((i+1)); "
                  "done </tmp/oracle/lines")
        environ = {**os.environ, "HOME": home}  # the home the checker resolved ~ against
        launch = sandbox.prepare(driver, workspace=ws, cwd=ws, home=home, settings=SandboxSettings(),
                                 environ=environ)
        try:
            assert launch.sandboxed and launch.tmp_dir, "the oracle must run its lines in the sandbox"
            work = Path(launch.tmp_dir) / "oracle"
            (work / "t").mkdir(parents=True)
            (work / "lines").write_bytes(b"".join(x.encode("utf-8", "surrogatepass") + b"\0" for x in lines))
            proc = subprocess.Popen(launch.argv, cwd=ws, env=launch.env, pass_fds=launch.pass_fds,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
            launch.started()
            out, err = proc.communicate(timeout=LINE_TIMEOUT * len(lines) + 60)
            if proc.returncode != 0:
                raise RuntimeError(f"the oracle's sandbox exited {proc.returncode}: {err.decode()[-500:]}")
            traces = []
            for i, line in enumerate(lines):
                execs, opens = [], []
                for f in sorted((work / "t").glob(f"{i}.*")):
                    text = f.read_bytes().decode("ascii", "replace")
                    execs += _execs(text)
                    opens += _opens(text)
                own = ("/bin/bash", ["/bin/bash", "-c", line])
                if own in execs:
                    execs.remove(own)
                traces.append((execs, opens))
            return traces
        finally:
            launch.close()

    # ----------------------------------------------------------------------------- the comparison

    def _compare(self, line: str, execs: list[tuple[str, list[str]]], ws: str, home: str) -> str | None:
        expected = self.expected(line)
        left = list(expected)
        for path, argv in execs:
            if not argv or os.path.basename(path) != os.path.basename(argv[0]):
                return f"{line!r} executed {path} with argv {argv!r}"
            hit = next((e for e in left if _matches(e, argv, ws, home)), None)
            if hit is None:
                seen = [[v for v, _ in e] for e in expected]
                return f"{line!r} executed {argv!r}, which the checker did not see (it saw {seen!r})"
            left.remove(hit)
        return None


def _denied_ran(line: str, execs: list[tuple[str, list[str]]], opens: list[str]) -> str | None:
    rules = DENY_CONFIG[0]["deny"]
    if hit := next((argv for path, argv in execs if os.path.basename(path) in DENIED_PROGRAMS), None):
        return f"{line!r} executed {hit!r} past the deny rules {rules} (bypass mode)"
    if read := next((p for p in opens if os.path.basename(p) == DENIED_FILE), None):
        return f"{line!r} opened {read!r} past the deny rules {rules} (bypass mode)"
    return None


#: Programs that read a whole tree of files on their own (``git diff sub`` reads sub/.env): the deny rules
#: cover the paths a line names, so what these open below a named directory is not the oracle's to judge.
TREE_READERS = frozenset({"git"})


def _opens(trace: str) -> list[str]:
    """The files opened successfully in one strace -xx output file (one process), but those a program (not
    bash) found by listing a directory itself (``diff . sub`` lists both and opens ``./.env``; ``grep -r``):
    the deny rules cover the paths a line names, and a tree read is the documented limit the sandbox's
    ``denyRead`` covers (docs/security.md, "Recursive reads"). A directory bash lists to expand a glob
    does not count, so a file named through a glob (``cat .e?v``, ``< .e*``) is still judged."""
    out, program, listed = [], "bash", set()
    for row in trace.splitlines():
        if (m := _EXECVE.match(row)) and m.group(3) == "0":
            program, listed = os.path.basename(_hex(m.group(1))), set()
        elif (m := _OPEN.match(row)) and program not in TREE_READERS:
            path = os.path.normpath(_hex(m.group(1)))
            if "O_DIRECTORY" in row and program not in ("bash", "sh"):  # (bash's own listings expand globs)
                listed.add(path)
            elif (os.path.dirname(path) or ".") not in listed:
                out.append(path)
    return out


def _execs(trace: str) -> list[tuple[str, list[str]]]:
    """The successful execve calls of one strace -xx output file: (path, argv)."""
    out = []
    for row in trace.splitlines():
        m = _EXECVE.match(row)
        if m and m.group(3) == "0":
            out.append((_hex(m.group(1)), [_hex(a) for a in _ARG.findall(m.group(2))]))
    return out


def _hex(text: str) -> str:
    return bytes.fromhex(text.replace("\\x", "")).decode("utf-8", "surrogateescape")


def _matches(expected: list[tuple[str, Word | None]], argv: list[str], ws: str, home: str) -> bool:
    """``argv`` is what bash makes of ``expected``'s words: globs match one or more arguments, tildes expand."""
    def go(i: int, j: int) -> bool:
        if i == len(expected):
            return j == len(argv)
        value, word = expected[i]
        if word is not None and word.glob and not word.brace:
            return any(all(a == value or fnmatch.fnmatchcase(a, value) for a in argv[j:k]) and go(i + 1, k)
                       for k in range(j + 1, len(argv) + 1))
        want = {value}
        if word is not None and word.tilde:
            want = _tilde(value, ws, home)
        return j < len(argv) and argv[j] in want and go(i + 1, j + 1)
    return go(0, 0)


def _tilde(value: str, ws: str, home: str) -> set[str]:
    head, sep, rest = value.partition("/")
    if head == "~":
        base = {home}
    elif re.fullmatch(r"~[+-]?[0-9]*", head):  # ~+ ~0 ~+0: the working directory (the driver's cd); ~- unset
        base = {ws, os.path.realpath(ws), head}
    else:  # ~user: whatever bash makes of it is one word; accept its home or the text unchanged
        base = {os.path.expanduser(head), head}
    return {b + sep + rest for b in base} | {value}
