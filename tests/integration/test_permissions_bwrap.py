"""Property: a command the checker auto-approves changes nothing outside the workspace.

Each command the checker would allow (every ALLOW of the adversarial table,
and a generated corpus of file commands and redirections with tricky paths)
runs for real, under bubblewrap, against a fresh copy of the table's
workspace. The sandbox here is deliberately *permissive*: the home, the sibling
folder outside the workspace, ``/root``, ``/outside`` and ``/tmp`` are all
writable host folders, so a checker mistake would show as a change there. After
each command, everything outside the workspace, and ``.git/``, ``.claude/`` and
``.mainsail/`` inside it, must be exactly as before.

``npm`` here is a stub that exits at once: it stands for any program a rule
allows, so the test is about what the *command line* does (its redirections,
options and paths), which the checker answers for; what an allowed program does
inside is the OS sandbox's to contain (workflows/permissions/sandbox/__init__.py).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.unit.test_permissions_adversarial import BYPASS, CASES, fill, make_tree, ruleset
from workflows.models import PermissionMode
from workflows.permissions import Decision, evaluate

pytestmark = pytest.mark.integration

OBSERVED = ("home", "outside", "_root", "_slash_outside", "_tmp")
PROTECTED = (".git", ".claude", ".mainsail")

RULES = {"allow": ["Bash(npm test:*)", "Bash(echo:*)", "Bash(cat:*)", "Bash(git diff:*)", "Bash(tee:*)",
                   "Bash(cp:*)", "Bash(touch:*)", "Bash(mkdir:*)", "Bash(mv:*)", "Bash(ls:*)"]}
TEMPLATES = ["cp a.txt {p}", "cp {p} b.txt", "mv a.txt {p}", "mkdir -p {p}", "touch {p}", "cp -t{p} a.txt",
             "cp --target-directory={p} a.txt", "echo x > {p}", "echo x >> {p}", "npm test > {p}",
             "cat a.txt > {p}", "cp -r src {p}", "git diff --output={p}", "tee {p} < a.txt",
             "cd {q} && touch {p}", "touch {p} && cp a.txt {p}", "ls {p} 2> {p}"]
TOKENS = ["x", "d/x", "../x", "../outside/x", "~/x", "~+/x", "~+/../x", "~root/x", "/outside/x", "/tmp/x",
          "link-out/x", ".git/x", ".git/hooks/x", ".claude/x", ".mainsail/x", ".gi?/x", ".cl*/x", "*",
          "sub/../../x", "./x", "-x", "'~'/x", '"../x"', "\\.\\./x", "d/../../outside/x", "link-out", "~/",
          "/root/x", "${HOME}/x", "$(echo ..)/x", "sub/.git/x", "~+/.claude/settings.json", ".git/config",
          "--x/../../outside/x", "--x/../.claude/x", "~0/../outside/x", "~+0/../x", "-x/../../outside/p=",
          "node_modules/foo/../../../outside/x", "planted/b/x"]
DIRS = ["d", "..", "sub", "/tmp", "~", "link-out", "-", "~+/..", ".", "node_modules/foo/../../..", "~0/..",
        "node_modules/foo && cd ../../.."]


def _bwrap_works() -> str | None:
    exe = shutil.which("bwrap")
    if not exe:
        return "bubblewrap is not installed (apt-get install bubblewrap; .ci/run installs it)"
    probe = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-pid", "true"], capture_output=True, timeout=30)
    return None if probe.returncode == 0 else f"bwrap cannot create namespaces here: {probe.stderr.decode()[:200]}"


@pytest.fixture(scope="module")
def bwrap():
    why = _bwrap_works()
    if why:
        pytest.skip(why)
    return shutil.which("bwrap")


def _generated() -> list[tuple[dict, str, str]]:
    out = []
    for template, p in itertools.product(TEMPLATES, TOKENS):
        for q in (DIRS if "{q}" in template else [""]):
            command = template.format(p=p, q=q)
            out.append(({}, "acceptEdits", command))
            out.append((RULES, "default", command))
    return out


def _table() -> list[tuple[dict, str, str]]:
    return [(rules, mode, inp["command"]) for rules, mode, tool, inp, expected in CASES
            if tool == "Bash" and expected is Decision.ALLOW and mode != BYPASS]


CORPUS = _table() + _generated()


def _snapshot(base: Path, ws: Path) -> dict[str, tuple]:
    """Every entry outside the workspace (and in its protected folders): type, mode, size, content hash."""
    roots = [base / d for d in OBSERVED] + [ws / d for d in PROTECTED]
    out: dict[str, tuple] = {}
    for entry in base.iterdir():  # a new file next to the workspace counts too
        if entry.name not in ("ws", "_bin"):
            out[str(entry)] = ("top",)
    for root in roots:
        if not os.path.lexists(root):
            out[str(root)] = ("absent",)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                digest = ""
                if os.path.isfile(p) and not os.path.islink(p):
                    digest = hashlib.sha256(Path(p).read_bytes()).hexdigest()
                link = os.readlink(p) if os.path.islink(p) else ""
                out[p] = (st.st_mode, st.st_size, digest, link)
    return out


def _run(bwrap: str, base: Path, ws: Path, home: Path, command: str) -> subprocess.CompletedProcess:
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--tmpfs", "/"]
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc"):
        args += ["--ro-bind-try", d, d]
    args += ["--proc", "/proc", "--dev", "/dev", "--bind", str(base), str(base),
             "--bind", str(base / "_root"), "/root", "--bind", str(base / "_slash_outside"), "/outside",
             "--bind", str(base / "_tmp"), "/tmp", "--ro-bind", str(base / "_bin"), "/opt/stub",
             "--chdir", str(ws), "--clearenv",
             "--setenv", "HOME", str(home), "--setenv", "PATH", "/opt/stub:/usr/local/bin:/usr/bin:/bin",
             "/bin/bash", "-c", command]
    return subprocess.run(args, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)


def test_the_corpus_is_large_and_many_of_its_commands_are_approved():
    assert len(CORPUS) >= 1000


@pytest.mark.timeout(600)
def test_no_auto_approved_command_changes_anything_outside_the_workspace(bwrap):
    parent = Path(tempfile.mkdtemp(prefix="mainsail-bwrap-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    ran, escapes = 0, []
    try:
        for n, (rules, mode, command) in enumerate(CORPUS):
            base = parent / str(n)
            base.mkdir()
            ws_s, home_s = make_tree(base)
            ws, home = Path(ws_s), Path(home_s)
            for d in ("_root", "_slash_outside", "_tmp", "_bin"):
                (base / d).mkdir()
            stub = base / "_bin" / "npm"
            stub.write_text("#!/bin/sh\nexit 0\n")
            stub.chmod(0o755)
            command = fill(command, ws_s)
            verdict = evaluate("Bash", {"command": command}, mode=PermissionMode(mode), rules=ruleset(rules),
                               workspace=ws_s, home=home_s, read_only=False)
            if verdict.decision is not Decision.ALLOW:
                shutil.rmtree(base)
                continue
            before = _snapshot(base, ws)
            _run(bwrap, base, ws, home, command)
            after = _snapshot(base, ws)
            ran += 1
            if before != after:
                changed = sorted(set(before.items()) ^ set(after.items()))
                escapes.append(f"{mode} {rules.get('allow', [])}: {command!r} changed {changed[:3]}")
            shutil.rmtree(base)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    assert not escapes, "\n".join(escapes)
    assert ran >= 100, f"only {ran} commands were auto-approved: the corpus no longer exercises the sandbox"
