"""Golden fixtures: ok/ produces nothing; each err/<case>/ produces exactly its expected lines."""
import pytest

from conftest import FIXTURES, run_validator

ERR_CASES = sorted(p for p in (FIXTURES / "err").iterdir() if p.is_dir())


def test_ok_fixtures_are_silent():
    ok = sorted(str(p) for p in (FIXTURES / "ok").iterdir())
    proc = run_validator(*ok)
    assert proc.stdout == ""
    assert proc.returncode == 0, proc.stderr


def test_there_are_enough_bad_input_cases():
    assert len(ERR_CASES) >= 40


@pytest.mark.parametrize("case", ERR_CASES, ids=[p.name for p in ERR_CASES])
def test_err_case(case):
    args = (case / "args").read_text().split()
    expected = (case / "expected.txt").read_text()
    proc = run_validator(*args, cwd=case)
    assert proc.stdout == expected
    assert expected, "an err case must expect at least one finding"
    assert proc.returncode in (1, 2), proc.stderr
    assert "Traceback" not in proc.stderr


# security-eval is strict-only (a policy of our presets): its harmless readings (shell hooks, getopt, the
# script's own arguments, spack load --sh) must hold where it runs, so these ok/ cases run --strict too.
STRICT_SILENT_EVAL = ["foreign-eval-getopt", "foreign-eval-hooks", "foreign-eval-own-args",
                      "foreign-eval-own-arguments", "foreign-eval-spack-load"]


@pytest.mark.parametrize("name", STRICT_SILENT_EVAL)
def test_harmless_eval_is_silent_in_the_strict_profile_too(name):
    proc = run_validator("--strict", str(FIXTURES / "ok" / f"{name}.sbatch"))
    assert "[security-eval]" not in proc.stdout
    assert "Traceback" not in proc.stderr
