"""A new preset is one folder: `python -m validator new-preset` makes it, and everything that lists
presets finds it without an edit elsewhere (validator, README matrix, detect-topology, the
end-to-end matrix, the calibration set). Runs on a temporary copy of the repository."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT
from test_e2e_slurm import matrix
import test_planner
from validator import catalog, memory_fit


def _tracked(*paths):
    out = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    return [p for p in out.split("\0") if p]


@pytest.fixture
def repo(tmp_path):
    """presets/, scripts/, validator/ and README.md of this checkout, copied."""
    for rel in _tracked("presets", "scripts", "validator", "README.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, tmp_path / rel)
    return tmp_path


def run(repo, *args, tool=("-m", "validator")):
    return subprocess.run([sys.executable, *tool, *args], cwd=repo, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo)})


def test_new_preset_is_found_everywhere(repo, tmp_path_factory):
    made = run(repo, "new-preset", "h200-ib-8port", "--from", "h100-ib-8port")
    assert made.returncode == 0, made.stderr
    new = repo / "presets" / "h200-ib-8port"
    texts = {p.name: p.read_text() for p in new.iterdir()}
    assert not any("h100-ib-8port" in t for t in texts.values())
    assert "name: h200-ib-8port\n" in texts["preset.yaml"] and "job-name: smoke-h200-ib-8port\n" in texts["preset.yaml"]
    assert "#SBATCH --job-name=smoke-h200-ib-8port" in texts["train.sbatch"]
    assert "smoke_init h200-ib-8port 1 256" in texts["train.sbatch"]
    assert "SMOKE_GPU_MODEL=${SMOKE_GPU_MODEL:-H100}" in texts["train.sbatch"]  # hardware is the author's edit, not a rename
    # The author's edit: another GPU model, in the manifest and in what preflight checks.
    for name, old, want in (("preset.yaml", "model: H100", "model: H200"),
                            ("train.sbatch", "SMOKE_GPU_MODEL:-H100}", "SMOKE_GPU_MODEL:-H200}")):
        (new / name).write_text(texts[name].replace(old, want, 1))
    checked = run(repo, "presets/h200-ib-8port")
    assert (checked.returncode, checked.stdout) == (0, ""), checked.stdout + checked.stderr

    # The README matrix: drift is found, one command fixes it.
    assert run(repo, "matrix").returncode == 1
    assert run(repo, "matrix", "--write").returncode == 0
    assert run(repo, "matrix").returncode == 0
    assert "| [h200-ib-8port](presets/h200-ib-8port/) | x86_64 | 8 | 80 GiB | infiniband | 8 |" in (repo / "README.md").read_text()

    # detect-topology recommends it on a node it fits: 8 x H200, 8 active InfiniBand ports.
    sys_root = tmp_path_factory.mktemp("sys")
    shutil.copytree(FIXTURES / "runtime" / "sys-h100-8port", sys_root, dirs_exist_ok=True)
    (sys_root / "class" / "infiniband" / "ibp7" / "ports" / "1" / "state").write_text("4: ACTIVE\n")
    smi = sys_root / "smi.csv"
    smi.write_text("NVIDIA H200, 143771\n" * 8)
    proc = run(repo, "--json", "--arch", "x86_64", "--nvidia-smi-output", str(smi), "--sys-root", str(sys_root),
               "--ip-output", str(FIXTURES / "runtime" / "ip-h100.json"), "--preset", "presets/h200-ib-8port", tool=("scripts/detect-topology",))
    report = json.loads(proc.stdout)
    assert report["recommendation"]["preset"] == "h200-ib-8port", report["recommendation"]
    assert (proc.returncode, report["mismatches"]) == (0, [])

    # The end-to-end matrix and the calibration set list it; with no measurement it is "not calibrated".
    assert ("h200-ib-8port", 2) in [(name, nodes) for name, nodes, _ in matrix(catalog.manifests(repo))]
    row = next(r for r in memory_fit.preset_rows(repo) if r["name"] == "preset-h200-ib-8port")
    with pytest.raises(pytest.skip.Exception, match="not calibrated"):
        test_planner.test_preset_is_calibrated(row)


@pytest.mark.parametrize("args,message", [
    (("new-preset", "Bad_Name", "--from", "gh200"), "is not a preset name"),
    (("new-preset", "x", "--from", "nope"), "no such preset (have: ethernet-only, gh200"),
    (("new-preset", "gh200", "--from", "ethernet-only"), "already exists"),
])
def test_new_preset_refuses_bad_input(repo, args, message):
    proc = run(repo, *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in (repo / "presets").iterdir()) == catalog.preset_names(ROOT)
