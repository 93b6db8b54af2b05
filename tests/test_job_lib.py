"""scripts/job-lib.sh's smoke_init on its own, in bash, outside Slurm.

`scontrol` here is a test double (it only expands the one-node list); everything else is the
real library.
"""
import os
import subprocess

from conftest import ROOT


def smoke_init(tmp_path, job_id="4242", nodes="1", args="gh200 1 64"):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    scontrol = fake_bin / "scontrol"
    scontrol.write_text("#!/bin/bash\n# test double: 'scontrol show hostnames LIST' for a one-node list\necho \"$3\"\n")
    scontrol.chmod(0o755)
    env = {"PATH": f"{fake_bin}:{os.environ['PATH']}", "SLURM_JOB_ID": job_id, "SLURM_NNODES": nodes,
           "SLURM_SUBMIT_DIR": str(ROOT), "SLURM_JOB_NODELIST": "node1", "SMOKE_OUTPUT_ROOT": str(tmp_path / "runs"),
           "SMOKE_MODE": "functional"}
    return subprocess.run(["bash", "-c", f"set -euo pipefail; source scripts/job-lib.sh; smoke_init {args}; echo OUT=$SMOKE_OUT"],
                          cwd=ROOT, env=env, capture_output=True, text=True)


def test_run_folder_is_named_by_job_id_and_private(tmp_path):
    proc = smoke_init(tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "runs" / "4242"
    assert f"OUT={out}" in proc.stdout and "rendezvous=node1:" in proc.stdout
    assert out.is_dir() and (out.stat().st_mode & 0o777) == 0o750


def test_an_earlier_run_with_the_same_job_id_is_moved_aside(tmp_path):
    earlier = tmp_path / "runs" / "4242"
    earlier.mkdir(parents=True)
    (earlier / "stages.txt").write_text("probe 143\n")
    proc = smoke_init(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "held an earlier run with this job id" in proc.stdout
    assert not (earlier / "stages.txt").exists()
    moved = [p for p in (tmp_path / "runs").iterdir() if p.name.startswith("4242.earlier-")]
    assert len(moved) == 1 and (moved[0] / "stages.txt").read_text() == "probe 143\n"


def test_node_count_outside_the_range_stops_with_exit_2(tmp_path):
    proc = smoke_init(tmp_path, nodes="1", args="ethernet-only 2 64")
    assert proc.returncode == 2
    assert "supports 2 to 64 nodes; this job has 1" in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_outside_a_job_it_says_how_to_submit(tmp_path):
    proc = subprocess.run(["bash", "-c", "source scripts/job-lib.sh; smoke_init gh200 1 64"], cwd=ROOT,
                          env={"PATH": os.environ["PATH"]}, capture_output=True, text=True)
    assert proc.returncode == 2 and "sbatch --nodes N" in proc.stderr
