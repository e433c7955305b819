"""The Bash checker against what bash really executes (the execution oracle, tests/exec_oracle.py).

Every line the checker approves without asking, among the adversarial table's
Bash lines and a few thousand generated ones (tests/bashgen.py, over bash's odd
corners), runs as the Bash tool runs it (bash -c in the bwrap sandbox) with
every execve traced: each program executed must be one the checker saw, with
the arguments it saw. bench/fuzz_checker.py runs the same for as long as asked.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.bashgen import lines
from tests.exec_oracle import Oracle, unavailable
from tests.unit.test_permissions_adversarial import CASES, HIDDEN, HIDDEN_FAMILY

pytestmark = pytest.mark.integration

GENERATED = 2000  # at least this many generated lines go through the oracle
BATCH = 1000


@pytest.fixture(scope="module")
def oracle():
    why = unavailable()
    if why:
        pytest.skip(f"the execution oracle cannot run here: {why}")
    return Oracle()


def _generated(n: int) -> list[str]:
    out: dict[str, None] = {}

    @settings(max_examples=n // 15, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(lines(min_size=15, max_size=25))
    def collect(batch):
        out.update(dict.fromkeys(batch))

    collect()
    return list(out)


def test_the_oracle_sees_the_hidden_command_the_old_parse_missed(oracle, monkeypatch):
    """The oracle itself can fail: with the checker's vote and splice undone, cause 1 is a disagreement."""
    from workflows.permissions.shell import bash_parse

    monkeypatch.setattr(bash_parse, "splice", lambda text: text)
    monkeypatch.setattr(bash_parse, "vote", lambda *a, **k: None)
    bash_parse.parse.cache_clear()
    try:
        result = oracle.check([HIDDEN, "ls -la", "t\\\nouch PWNED4"])
    finally:
        bash_parse.parse.cache_clear()
    assert (result.ran, result.ran_past_deny) == (2, 1)
    assert len(result.disagreements) == 2, result.disagreements
    assert "executed ['touch', 'PWNED'], which the checker did not see" in result.disagreements[0]
    assert "executed ['touch', 'PWNED4'] past the deny rules" in result.disagreements[1]


def test_every_approved_line_of_the_table_runs_only_what_the_checker_saw(oracle):
    table = list(dict.fromkeys([c[3]["command"] for c in CASES if c[2] == "Bash" and isinstance(
        c[3].get("command"), str) and "{ws" not in c[3]["command"]] + [HIDDEN, *HIDDEN_FAMILY]))
    result = oracle.check(table, past_deny=False)  # the table's deny rows say what its deny rules let through
    assert not result.disagreements, "\n".join(result.disagreements)
    assert result.ran >= 50


@pytest.mark.timeout(600)
def test_every_approved_generated_line_runs_only_what_the_checker_saw(oracle):
    start = time.monotonic()
    generated = _generated(int(GENERATED * 1.2))
    assert len(generated) >= GENERATED
    asked = ran = past_deny = 0
    disagreements: list[str] = []
    for i in range(0, len(generated), BATCH):
        result = oracle.check(generated[i:i + BATCH])
        asked, ran, past_deny = asked + result.asked, ran + result.ran, past_deny + result.ran_past_deny
        disagreements += result.disagreements
    print(f"\nexecution oracle: {asked} generated lines checked, {ran} approved and run, {past_deny} run past "
          f"the deny rule, {time.monotonic() - start:.1f} s")
    assert not disagreements, "\n".join(disagreements)
    assert ran >= 150, f"only {ran} of {asked} generated lines were approved: the oracle ran too few"
    assert past_deny >= 150, f"only {past_deny} of {asked} generated lines ran past the deny rule"


def test_a_file_a_program_found_by_listing_a_directory_is_a_tree_read_but_a_glob_of_bash_is_not(oracle, tmp_path):
    """The deny half judges the paths a line names (directly or through bash's globs), not what a program
    found by listing a directory itself (``diff . sub``: the documented recursive-read limit)."""
    import glob
    import subprocess

    from tests.exec_oracle import _opens

    (tmp_path / "sub").mkdir()
    (tmp_path / ".env").write_text("a\n")
    (tmp_path / "sub" / ".env").write_text("b\n")
    found = {}
    for name, line in (("glob", "cat .e?v"), ("tree", "diff . sub"), ("redirect", "cat < .e*"), ("plain", "cat .env")):
        out = tmp_path / f"trace-{name}"
        subprocess.run(["strace", "-f", "-ff", "-qq", "-xx", "-e", "trace=execve,open,openat,openat2", "-o",
                        str(out), "bash", "-c", line], cwd=tmp_path, capture_output=True, check=False)
        found[name] = [p for f in glob.glob(f"{out}.*") for p in _opens(open(f).read()) if p.endswith(".env")]
    assert found["glob"] == [".env"] and found["redirect"] == [".env"] and found["plain"] == [".env"]
    assert found["tree"] == []
