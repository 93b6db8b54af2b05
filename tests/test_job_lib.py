"""scripts/job-lib.sh's smoke_init on its own, in bash, outside Slurm.

`scontrol` here is a test double (it only expands the one-node list); everything else is the
real library.
"""
import os
import subprocess

from conftest import ROOT


def smoke_init(tmp_path, job_id="4242", nodes="1", args="gh200 1 64", extra_env=None, show=""):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    scontrol = fake_bin / "scontrol"
    scontrol.write_text("#!/bin/bash\n# test double: 'scontrol show hostnames LIST' for a one-node list\necho \"$3\"\n")
    scontrol.chmod(0o755)
    env = {"PATH": f"{fake_bin}:{os.environ['PATH']}", "SLURM_JOB_ID": job_id, "SLURM_NNODES": nodes,
           "SLURM_SUBMIT_DIR": str(ROOT), "SLURM_JOB_NODELIST": "node1", "SMOKE_OUTPUT_ROOT": str(tmp_path / "runs"),
           "SMOKE_MODE": "functional", **(extra_env or {})}
    return subprocess.run(["bash", "-c", f"set -euo pipefail; source scripts/job-lib.sh; smoke_init {args}; echo OUT=$SMOKE_OUT; {show}"],
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


def wandb(tmp_path, key_file, extra=""):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SMOKE_WANDB_KEY_FILE": str(key_file)}
    return subprocess.run(["bash", "-c", f"set -euo pipefail; source scripts/job-lib.sh; {extra} smoke_wandb; "
                                         "k=${WANDB_API_KEY:-}; echo \"SMOKE_WANDB=$SMOKE_WANDB KEYLEN=${#k}\""],
                          cwd=ROOT, env=env, capture_output=True, text=True)


def test_wandb_key_file_checks(tmp_path):
    """0600 and 0400 own regular files are used; a link (wherever it points), a file others can
    read, a folder and another user's file are refused with the reason, and the key never printed."""
    key = tmp_path / "key"
    key.write_text("secret-key-123")
    for mode, used in ((0o600, True), (0o400, True), (0o640, False), (0o604, False), (0o660, False)):
        key.chmod(mode)
        proc = wandb(tmp_path, key)
        assert proc.returncode == 0, proc.stderr
        assert ("SMOKE_WANDB=1 KEYLEN=14" in proc.stdout) is used, (oct(mode), proc.stdout, proc.stderr)
        assert "secret-key-123" not in proc.stdout + proc.stderr
    key.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(key)
    proc = wandb(tmp_path, link)
    assert "SMOKE_WANDB=0 KEYLEN=0" in proc.stdout and "symbolic link" in proc.stderr
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    assert "symbolic link" in wandb(tmp_path, dangling).stderr
    assert "not a regular file" in wandb(tmp_path, tmp_path).stderr
    if os.geteuid() == 0:  # a file of another user: only root can make one here
        os.chown(key, 12345, 12345)
        proc = wandb(tmp_path, key)
        assert "SMOKE_WANDB=0" in proc.stdout and "belongs to uid 12345" in proc.stderr
    proc = wandb(tmp_path, tmp_path / "absent")
    assert "SMOKE_WANDB=0" in proc.stdout and proc.returncode == 0


def test_settings_as_arguments_and_cpus_from_the_node(tmp_path):
    proc = smoke_init(tmp_path, args="gh200 1 64 MEGATRON_TRAIN_ITERS=50 NCCL_DEBUG=WARN",
                      extra_env={"SLURM_JOB_CPUS_PER_NODE": "96(x2),64"},
                      show='echo "iters=$MEGATRON_TRAIN_ITERS debug=$NCCL_DEBUG cpus=$SMOKE_CPUS_PER_NODE"')
    assert proc.returncode == 0, proc.stderr
    assert "iters=50 debug=WARN cpus=64" in proc.stdout


def test_an_argument_that_is_not_a_setting_stops_with_exit_2(tmp_path):
    proc = smoke_init(tmp_path, args="gh200 1 64 LD_PRELOAD=/x.so")
    assert proc.returncode == 2 and "'LD_PRELOAD=/x.so' is not a KEY=VALUE setting" in proc.stderr


def test_login_profile_settings_are_dropped_when_slurm_rebuilt_the_environment(tmp_path):
    """What Slurm does with --export=NONE or a list (SLURM_GET_USER_ENV=1): the profile's NCCL_ALGO goes,
    what sbatch --export named (SMOKE_MODE, SMOKE_OUTPUT_ROOT) and the arguments stay."""
    env = {"SLURM_GET_USER_ENV": "1", "NCCL_ALGO": "Tree", "PET_NNODES": "9",
           "SMOKE_EXPORT": f"NONE,SMOKE_MODE=functional,SMOKE_OUTPUT_ROOT={tmp_path / 'runs'}"}
    proc = smoke_init(tmp_path, args="gh200 1 64 NCCL_DEBUG=WARN", extra_env=env,
                      show='echo "algo=${NCCL_ALGO:-unset} pet=${PET_NNODES:-unset} debug=$NCCL_DEBUG mode=$SMOKE_MODE"')
    assert proc.returncode == 0, proc.stderr
    assert "algo=unset pet=unset debug=WARN mode=functional" in proc.stdout
    assert "ignored from the login environment Slurm rebuilt on the node: NCCL_ALGO PET_NNODES" in proc.stdout


def test_partial_imports_of_ended_jobs_are_swept(tmp_path):
    """scripts/image-cache sweep: a partial image left by a job that ended mid-import (SIGKILL: no trap
    ran) is removed once it is stale; a running job's, a fresh one, our own, and every one when
    squeue cannot answer are kept. `squeue` is a test double answering from a table."""
    cache = tmp_path / "cache"
    cache.mkdir()
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    squeue = fake_bin / "squeue"
    # test double: squeue -h -j ID -o %T; 11 running, 12 ended (known, prints nothing), others purged
    squeue.write_text('#!/bin/bash\ncase $3 in 11) echo RUNNING ;; 12) ;; 99) echo "slurm_load_jobs error: Unable to contact '
                      'slurm controller" >&2; exit 1 ;; *) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1 ;; esac\n')
    squeue.chmod(0o755)
    old = 2 * 3600
    files = {"img.partial-11-100.sqsh": old, "img.partial-12-100.sqsh": old, "img.partial-13-100.sqsh": old,
             "img.partial-14-100.sqsh": 60, "img.partial-4242-7.sqsh": old, "img.partial-99-1.sqsh": old,
             "img.sqsh": old, "img.partial-x-1.sqsh": old}
    for name, age in files.items():
        path = cache / name
        path.write_text("x")
        os.utime(path, (path.stat().st_atime - age, path.stat().st_mtime - age))
    proc = subprocess.run([ROOT / "scripts" / "image-cache", "sweep"],
                          cwd=ROOT, env={"PATH": f"{fake_bin}:{os.environ['PATH']}", "SLURM_JOB_ID": "4242",
                                         "SMOKE_IMAGE_CACHE": str(cache)},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    left = sorted(p.name for p in cache.iterdir())
    assert left == ["img.partial-11-100.sqsh", "img.partial-14-100.sqsh", "img.partial-4242-7.sqsh",
                    "img.partial-99-1.sqsh", "img.partial-x-1.sqsh", "img.sqsh"]
    assert "img.partial-12-100.sqsh, an import left by job 12, which ended (gone)" in proc.stderr
    assert "img.partial-13-100.sqsh, an import left by job 13, which ended (gone)" in proc.stderr
