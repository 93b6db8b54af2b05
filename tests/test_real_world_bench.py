"""The real-world benchmark's held-out split: drawn reproducibly, scored apart, checked against the corpus."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


holdout, real_world = _load("real_world_holdout"), _load("real_world")


def _corpus(tmp_path, n):
    (tmp_path / "MANIFEST.tsv").write_text("".join(f"o/r\tjob{i}.sbatch\tabc\n" for i in range(n)))
    return tmp_path


def _held(capsys, corpus, seed):
    holdout.main(["--corpus", str(corpus), "--seed", str(seed)])
    return capsys.readouterr().out.splitlines()[1:]


def test_holdout_draws_a_quarter_rounded_up_and_the_same_one_for_the_same_seed(tmp_path, capsys):
    corpus = _corpus(tmp_path, 9)
    first = _held(capsys, corpus, 7)
    assert len(first) == 3 and first == _held(capsys, corpus, 7)
    assert any(_held(capsys, corpus, seed) != first for seed in range(8, 20))


def test_holdout_entries_missing_from_the_corpus_are_refused(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path, 2)
    listing = tmp_path / "held.tsv"
    listing.write_text("repository\tpath\tcommit\no/r\tgone.sbatch\tabc\n")
    judgements = tmp_path / "j.tsv"
    judgements.write_text("repository\tpath\tline\trule\tverdict\twhy\n")
    monkeypatch.setattr(real_world, "run", lambda *a: pytest.fail("the validator must not run"))
    with pytest.raises(SystemExit, match="not in the corpus manifest"):
        real_world.main(["--corpus", str(corpus), "--judgements", str(judgements), "--holdout", str(listing)])


def test_tuning_and_held_out_parts_are_scored_apart(tmp_path, monkeypatch, capsys):
    corpus = _corpus(tmp_path, 2)
    listing = tmp_path / "held.tsv"
    listing.write_text("o/r\tjob1.sbatch\tabc\n")
    judgements = tmp_path / "j.tsv"
    judgements.write_text("o/r\tjob0.sbatch\t3\tlaunch-time-limit\ttrue\tx\no/r\tjob1.sbatch\t3\tlaunch-time-limit\tfalse\ty\n")
    findings = [{"repo": "o/r", "file": f"job{i}.sbatch", "line": 3, "rule": "launch-time-limit", "message": "m"}
                for i in (0, 1)]
    monkeypatch.setattr(real_world, "run", lambda *a: (json.loads(json.dumps(findings)), 0.0))
    real_world.main(["--corpus", str(corpus), "--judgements", str(judgements), "--holdout", str(listing),
                     "--one-profile"])
    out = capsys.readouterr().out
    tuning, held = out.split("held-out part")
    assert "| own rules | 1 | 1 | 100 % | 0 |" in tuning
    assert "| own rules | 0 | 1 | 0 % | 0 |" in held


@pytest.mark.parametrize("line, launches", [
    ("./wrf.exe\n", True), ("  ./a.out > log\n", True), ("time ./prog -n 4\n", True),
    ("mpirun ./x\n", True), ("srun hostname\n", True),
    ("# ./commented\n", False), ("cd ../run\n", False), ("echo a/./b\n", False), ("cat notes\n", False),
    ("uv run train.py\n", True), ("conda run -n env python x.py\n", True), ("bash scripts/train.sh 4\n", True),
    ("sh -x run.sh\n", True), ("# bash run.sh\n", False), ("source env.sh\n", False), ("echo bash\n", False),
])
def test_pick_counts_a_program_run_by_its_path_as_a_launch_line(line, launches):
    """Round forty-six's judge: `\\b` before `\\./` never matched, so `./wrf.exe` alone drew no job."""
    pick = _load("real_world_pick")
    assert bool(pick.LAUNCHES.search(line)) is launches
