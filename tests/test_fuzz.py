"""The fuzzing harness (tests/fuzz_harness.py) in CI: every input that ever crashed the validator
(tests/fuzz-crashes/, kept by the harness) stays fixed, and a short fuzzing run (FUZZ_BUDGET_S,
15 s; FUZZ_SEED picks the cases) finds nothing new. Long runs: `tests/fuzz_harness.py --cases N`."""
import os
from pathlib import Path

import pytest

from fuzz_harness import CRASHES, fuzz, load_crash, prepare_repo, run_case

FIXTURES = sorted(p for p in CRASHES.iterdir() if (p / "case.json").is_file()) if CRASHES.is_dir() else []


@pytest.mark.parametrize("folder", FIXTURES, ids=[p.name for p in FIXTURES])
def test_crash_fixture_stays_fixed(folder, tmp_path):
    prepare_repo(tmp_path)
    why, _ = run_case(load_crash(folder), tmp_path)
    assert why is None, why


def test_short_fuzzing_run_finds_nothing(tmp_path):
    budget = float(os.environ.get("FUZZ_BUDGET_S", "15"))
    seed = int(os.environ.get("FUZZ_SEED", "0"))
    found = tmp_path / "crashes"
    stats = fuzz(cases=10**6, seed=seed, repo=tmp_path / "repo", crashes=found, budget_s=budget,
                 shellcheck_every=50, log=lambda message: None)
    assert stats["cases"] > 0
    assert not stats["crashes"], (f"{stats['crashes']} crash(es) in {stats['cases']} cases; keep them as "
                                  f"regression fixtures: cp -r {found}/* {CRASHES}/\n" + "\n".join(stats["saved"]))
