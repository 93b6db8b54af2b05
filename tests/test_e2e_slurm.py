"""End to end on a real multi-node Slurm cluster (scripts/local-cluster): every preset (see matrix()).

Real slurmctld, slurmd (one per network namespace), munge, sbatch and torchrun; the presets run in
functional mode (CPU, gloo, the small training loop), because this machine has no GPU, no
InfiniBand and no container runtime: the GPUs are fake GRES device files (a test double, named as
such). Needs root; under CI (CI=true) a missing Slurm is a failure, not a skip.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from validator import catalog

pytestmark = pytest.mark.slurm
MANIFESTS = catalog.manifests(ROOT)  # every preset under presets/, found, not listed
GPUS = {name: m["topology"]["gpu"]["per_node"] for name, m in MANIFESTS.items()}


# CI time: a functional-mode "GPU" is a CPU torch process on this 2-core machine. One run per
# GPUs-per-node count starts the preset's full width; the others start at most this many per node
# (`--gpus-per-node` on the sbatch command line overrides the preset's, as a user may).
CI_WIDTH = 2


def matrix(manifests=MANIFESTS):
    """(preset, nodes, GPUs per node): every preset on 2 nodes; 1 and 3 nodes for the first preset
    of each GPUs-per-node count. In functional mode presets differ in their script and GPU count,
    not in the launch path, which the 1- and 3-node runs exercise. The first preset of each count
    runs its full width on 2 nodes, every other run at most CI_WIDTH."""
    gpus = {name: m["topology"]["gpu"]["per_node"] for name, m in manifests.items()}
    first = {}
    for name in manifests:
        first.setdefault(gpus[name], name)
    return [(name, n, gpus[name] if (first[gpus[name]] == name and n == 2) else min(gpus[name], CI_WIDTH))
            for name in manifests for n in ((1, 2, 3) if first[gpus[name]] == name else (2,))]


FAKE_KEY = "fake-wandb-key-0123456789abcdef"


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("end-to-end tests need root under CI")
        pytest.skip("end-to-end tests need root (they start slurmctld, slurmd and munge)")
    up = subprocess.run([str(ROOT / "scripts" / "local-cluster"), "up", "--nodes", "3"],
                        capture_output=True, text=True, timeout=600)
    assert up.returncode == 0, up.stdout + up.stderr
    yield {**os.environ, "SLURM_CONF": "/run/smoke-cluster/slurm.conf"}
    subprocess.run([str(ROOT / "scripts" / "local-cluster"), "down"], capture_output=True, timeout=120)


def submit(env, preset, nodes, extra="", submit_env=None, script=None, python=sys.executable, mode="functional",
           gpus=None):
    exports = f"NONE,SMOKE_MODE={mode},SMOKE_PYTHON={python}{extra}"
    width = [f"--gpus-per-node={gpus}"] if gpus else []
    proc = subprocess.run(["sbatch", "--parsable", "--nodes", str(nodes), f"--export={exports}"] + width + [
                           str(script or f"presets/{preset}/train.sbatch")], cwd=ROOT, capture_output=True,
                          text=True, env={**env, **(submit_env or {})}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(";")[0]


def wait(env, job, timeout=300):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        out = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, env=env).stdout
        fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
        if fields.get("JobState") not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", None):
            return fields["JobState"], fields["ExitCode"], time.monotonic() - start
        time.sleep(1)
    raise AssertionError(f"job {job} still running after {timeout} s")


def job_log(preset, job):
    return (ROOT / f"smoke-{preset}-{job}.out").read_text(errors="replace")


@pytest.mark.parametrize("preset,nodes,width", matrix())
def test_preset_runs_on_n_nodes(cluster, preset, nodes, width, tmp_path):
    key_file = tmp_path / "wandb_api_key"
    key_file.write_text(FAKE_KEY)
    key_file.chmod(0o600)
    job = submit(cluster, preset, nodes, extra=f",SMOKE_WANDB_KEY_FILE={key_file}",
                 submit_env={"LOGIN_NODE_ONLY": "leak-probe"}, gpus=None if width == GPUS[preset] else width)
    state, exit_code, _ = wait(cluster, job)
    log = job_log(preset, job)
    assert (state, exit_code) == ("COMPLETED", "0:0"), log[-3000:]
    run = ROOT / "smoke-runs" / job
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["verdict"] == "PASS", verdict
    ranks = [json.loads(p.read_text()) for p in sorted((run / "functional").glob("rank-*.json"))]
    assert len(ranks) == nodes * width
    assert {r["world_size"] for r in ranks} == {nodes * width}
    # every rank ran on the node Slurm said: node id -> host, GPUS[preset] ranks each
    by_host = {}
    for r in ranks:
        by_host.setdefault(r["host"], set()).add(r["local_rank"])
        assert r["host"] == f"node{int(r['slurm_nodeid']) + 1}"
    assert len(by_host) == nodes and all(v == set(range(width)) for v in by_host.values())
    assert "LOGIN_NODE_ONLY" not in ranks[0]["environ_keys"]
    assert "wandb on" in log
    logs = [log] + [p.read_text(errors="replace") for p in run.rglob("*") if p.is_file()]
    assert not any(FAKE_KEY in text for text in logs), "the wandb key leaked into a log"


def find_rank(job, rank, timeout=120):
    """The pid of the functional loop's rank `rank` of `job`, once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"smoke.tiny_train" in cmdline and f"SLURM_JOB_ID={job}".encode() in environ \
                    and f"RANK={rank}".encode() in environ:
                return int(pid)
        time.sleep(0.5)
    raise AssertionError(f"rank {rank} never started")


def test_killed_rank_fails_the_job_fast(cluster):
    job = submit(cluster, "ethernet-only", 2, extra=",SMOKE_FUNCTIONAL_STEPS=100000", gpus=CI_WIDTH)
    victim = find_rank(job, 3)
    time.sleep(2)
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    state, exit_code, _ = wait(cluster, job, timeout=120)
    took = time.monotonic() - killed_at
    assert took < 60, f"the job took {took:.0f} s to end after a rank died"
    assert state == "FAILED" and exit_code != "0:0"
    verdict = json.loads((ROOT / "smoke-runs" / job / "verdict.json").read_text())
    assert verdict["verdict"] == "FAIL"


def test_stopped_rank_is_named_by_the_hang_watchdog(cluster):
    """A rank SIGSTOPped during training (real Slurm, functional mode, 3 nodes x 2 ranks): nothing
    fails, everything waits; the watchdog ends the stage and the verdict names node2, rank 3.
    SMOKE_HANG_AFTER=20 for CI time; the default (90) is what bench/hang_matrix.py runs."""
    job = submit(cluster, "ethernet-only", 3, gpus=CI_WIDTH,
                 extra=",SMOKE_FUNCTIONAL_STEPS=100000,SMOKE_FUNCTIONAL_STEP_MS=100,SMOKE_HANG_AFTER=20,"
                       "SMOKE_LOCALIZE=never")
    victim = find_rank(job, 3)
    beat = ROOT / "smoke-runs" / job / "watch" / "megatron" / "node2.rank-3.beat"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and int((beat.read_text().split() or ["0"])[0] if beat.exists() else 0) < 5:
        time.sleep(0.5)
    os.kill(victim, signal.SIGSTOP)
    stopped_at = time.monotonic()
    state, _, _ = wait(cluster, job, timeout=180)
    took = time.monotonic() - stopped_at
    run = ROOT / "smoke-runs" / job
    hang = json.loads((run / "hang.json").read_text())
    verdict = json.loads((run / "verdict.json").read_text())
    assert [(c["node"], c["rank"], c["layer"]) for c in hang["culprits"]] == [("node2", 3, "unresponsive")], hang
    assert [(s["node"], s["layer"]) for s in verdict["suspects"]] == [("node2", "unresponsive")]
    assert verdict["verdict"] == "FAIL" and (run / "exclude.txt").read_text().split() == ["node2"]
    assert state == "FAILED" and took < 20 + 90, f"{took:.0f} s from the stop to the job's end"
    assert "smoke: watchdog: stage megatron made no progress" in job_log("ethernet-only", job)


def test_rendezvous_that_cannot_form_fails_within_the_documented_bound(cluster, tmp_path):
    """One node's launcher never starts (a stuck container start, a hung filesystem): the other
    node's torchrun must give up after SMOKE_RDZV_TIMEOUT and the job end within that plus
    SMOKE_STEP_GRACE (README), plus start-up, instead of waiting for the time limit. Localization
    is off here: after a failed probe it would add its own bounded steps (SMOKE_LOCALIZE_STEP_TIMEOUT)."""
    rdzv_timeout, grace, start_up = 20, 10, 30
    # Test double: a Python that hangs on node2 when asked to run torchrun, and is the real one otherwise.
    hanging_python = tmp_path / "python-hangs-on-node2"
    hanging_python.write_text(f"""#!/bin/bash
if [[ $(hostname) == node2 && " $* " == *" torch.distributed.run "* ]]; then exec sleep 600; fi
exec {sys.executable} "$@"
""")
    hanging_python.chmod(0o755)
    job = submit(cluster, "ethernet-only", 2, python=hanging_python,
                 extra=f",SMOKE_RDZV_TIMEOUT={rdzv_timeout},SMOKE_STEP_GRACE={grace},SMOKE_LOCALIZE=never")
    state, exit_code, took = wait(cluster, job, timeout=180)
    assert took < rdzv_timeout + grace + start_up, f"the job took {took:.0f} s to fail"
    assert state == "FAILED" and exit_code != "0:0"
    verdict = json.loads((ROOT / "smoke-runs" / job / "verdict.json").read_text())
    assert verdict["verdict"] == "FAIL"
    stage = next(c for c in verdict["checks"] if c["check"] == "stage probe")
    assert "the rendezvous did not form" in stage["detail"] and f"({rdzv_timeout} s)" in stage["detail"]


def test_broken_parallel_plan_fails_before_training(cluster):
    job = submit(cluster, "ethernet-only", 1,
                 extra=",MEGATRON_NUM_ATTENTION_HEADS=6,MEGATRON_TENSOR_PARALLEL=4")
    state, _, _ = wait(cluster, job)
    log = job_log("ethernet-only", job)
    assert state == "FAILED"
    assert "no valid parallel plan" in log and "tensor parallel 4 does not divide 6 attention heads" in log
    assert "iteration" not in log


def test_node_count_outside_the_range_fails_before_any_step(cluster, tmp_path):
    """A copy of a preset that supports 2-64 nodes, submitted on 1: stopped by smoke_init."""
    script = tmp_path / "train.sbatch"
    text = (ROOT / "presets" / "ethernet-only" / "train.sbatch").read_text()
    script.write_text(text.replace("smoke_init ethernet-only 1 64", "smoke_init ethernet-only 2 64"))
    job = submit(cluster, "ethernet-only", 1, script=script)
    state, exit_code, took = wait(cluster, job)
    log = job_log("ethernet-only", job)
    assert state == "FAILED" and exit_code == "2:0"
    assert "supports 2 to 64 nodes; this job has 1" in log
    assert "smoke: stage" not in log


PROFILE_USER = "smokeprofile"
PROFILE_JOB = """#!/bin/bash
#SBATCH --time=00:02:00
export SMOKE_EXPORT=${SLURM_EXPORT_ENV:-}
echo "raw NCCL_ALGO=${NCCL_ALGO:-unset} SLURM_GET_USER_ENV=${SLURM_GET_USER_ENV:-unset}"
source "$SLURM_SUBMIT_DIR/job-lib.sh"
smoke_settings "$@"
echo "after NCCL_ALGO=${NCCL_ALGO:-unset} SMOKE_MODE=${SMOKE_MODE:-unset} MEGATRON_TRAIN_ITERS=${MEGATRON_TRAIN_ITERS:-unset}"
"""


@pytest.mark.parametrize("export, kept", [("NONE", "unset"), ("NIL", "unset"), ("NONE,SMOKE_MODE=functional", "functional")])
def test_login_profile_settings_do_not_reach_the_job(cluster, export, kept):
    """A user whose ~/.bash_profile exports NCCL_ALGO: with --export=NONE (or NIL, which Slurm 22.05 reads
    as a variable list, or NONE,VAR=x) Slurm rebuilds the login environment on the node
    (SLURM_GET_USER_ENV=1) and the sentinel arrives; job-lib's smoke_settings drops it and keeps what
    --export named and the KEY=VALUE arguments. The job script sources the real job-lib.sh (copied
    where the test user can read it)."""
    if subprocess.run(["id", PROFILE_USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", PROFILE_USER], check=True, capture_output=True)
    home = Path(f"/home/{PROFILE_USER}")
    (home / ".bash_profile").write_text("export NCCL_ALGO=FROM_PROFILE\n")
    folder = Path(f"/tmp/smoke-profile-{os.getpid()}-{export.split(',')[0]}")
    folder.mkdir(mode=0o755, exist_ok=True)
    shutil.copy(ROOT / "scripts" / "job-lib.sh", folder / "job-lib.sh")
    (folder / "job.sbatch").write_text(PROFILE_JOB)
    subprocess.run(["chown", "-R", f"{PROFILE_USER}:", str(folder), str(home / ".bash_profile")], check=True)
    proc = subprocess.run(["runuser", "-u", PROFILE_USER, "--", "env", "NCCL_ALGO=FROM_SUBMIT_SHELL", "sbatch",
                           "--parsable", f"--export={export}", f"--output={folder}/%j.out", "job.sbatch",
                           "MEGATRON_TRAIN_ITERS=7"], cwd=folder, capture_output=True, text=True, env=cluster, timeout=60)
    assert proc.returncode == 0, proc.stderr
    job = proc.stdout.strip().split(";")[0]
    state, _, _ = wait(cluster, job, timeout=60)
    out = (folder / f"{job}.out").read_text()
    shutil.rmtree(folder, ignore_errors=True)
    assert state == "COMPLETED", out
    assert "raw NCCL_ALGO=FROM_PROFILE SLURM_GET_USER_ENV=1" in out  # what Slurm 22.05 hands the job
    assert "ignored from the login environment Slurm rebuilt on the node: NCCL_ALGO" in out
    assert f"after NCCL_ALGO=unset SMOKE_MODE={kept} MEGATRON_TRAIN_ITERS=7" in out


def test_failed_node_ends_the_job_fast_and_still_leaves_a_verdict(cluster):
    """Every process of node2 (slurmd, slurmstepd, its ranks) is killed mid-run, as when a node
    dies: Slurm ends the job (NODE_FAIL) after SlurmdTimeout (30 s on the local cluster), and the
    batch shell on node1 outlives Slurm's SIGTERM long enough to write a FAIL verdict."""
    job = submit(cluster, "ethernet-only", 2, extra=",SMOKE_FUNCTIONAL_STEPS=100000", gpus=CI_WIDTH)
    run = ROOT / "smoke-runs" / job
    deadline = time.monotonic() + 120
    stages = run / "stages.txt"
    while not (stages.exists() and "probe 0" in stages.read_text()):  # the probe passed: training starts
        assert time.monotonic() < deadline, "the probe stage never passed"
        time.sleep(0.5)
    time.sleep(5)
    pids = subprocess.run(["ip", "netns", "pids", "smoke-node2"], capture_output=True, text=True).stdout.split()
    assert pids, "nothing runs on node2"
    try:
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        killed_at = time.monotonic()
        state, exit_code, _ = wait(cluster, job, timeout=120)
        took = time.monotonic() - killed_at
        assert took < 60, f"the job took {took:.0f} s to end after node2 died"
        # Two races, both right: slurmctld declares node2 dead first (NODE_FAIL, the batch shell gets
        # SIGTERM), or srun sees node2's tasks gone first, the stage fails and the job ends FAILED
        # (CI, 2026-12-03). Either way a FAIL verdict is written and says why.
        assert state in ("NODE_FAIL", "FAILED"), state
        verdict = json.loads((run / "verdict.json").read_text())
        assert verdict["verdict"] == "FAIL", verdict
        failing = [c for c in verdict["checks"] if c["state"] == "FAIL"]
        if state == "NODE_FAIL":
            assert any(c["check"] == "job" and "Slurm ended the job with SIGTERM" in c["detail"] for c in failing), failing
        else:
            assert any(c["check"].startswith("stage ") for c in failing), failing
    finally:  # bring node2 back for whatever runs next
        up = subprocess.run([str(ROOT / "scripts" / "local-cluster"), "up", "--nodes", "3"],
                            capture_output=True, text=True, timeout=120)
        assert up.returncode == 0, up.stdout + up.stderr


SENTINELS = {  # one setting of every KEY=VALUE family, each against the preset's own default where it has one
    "SMOKE_GPU_MODEL": "SENTINEL-GPU", "MEGATRON_NUM_LAYERS": "3", "NCCL_SOCKET_NTHREADS": "2",
    "UCX_TLS": "sentinel-ucx", "SHARP_SENTINEL": "1", "TORCH_SENTINEL": "1", "PET_SENTINEL": "1",
    "PYXIS_SENTINEL": "1", "WANDB_SENTINEL": "1"}


def test_every_setting_passed_after_the_script_overrides_the_presets_default(cluster, tmp_path):
    """Issue 25, finding 7: a preset's unconditional export replaced the user's KEY=VALUE. Each family
    gets a sentinel on the command line; what the first stage's process sees on every node is
    recorded by a wrapper around its Python (a test double that only writes the environment down)."""
    seen = tmp_path / "seen"
    seen.mkdir()
    wrapper = tmp_path / "python"
    names = " ".join(SENTINELS)
    wrapper.write_text(f'#!/bin/bash\nfor n in {names}; do echo "$n=${{!n-unset}}"; done > {seen}/$(hostname)\n'
                       f'exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    proc = subprocess.run(["sbatch", "--parsable", "--nodes", "2", f"--gpus-per-node={CI_WIDTH}",
                           f"--export=NONE,SMOKE_MODE=functional,SMOKE_PYTHON={wrapper},SMOKE_STOP_AFTER=preflight",
                           "presets/ethernet-only/train.sbatch", *(f"{k}={v}" for k, v in SENTINELS.items())],
                          cwd=ROOT, capture_output=True, text=True, env=cluster, timeout=60)
    assert proc.returncode == 0, proc.stderr
    job = proc.stdout.strip().split(";")[0]
    state, _, _ = wait(cluster, job)
    assert state == "COMPLETED", job_log("ethernet-only", job)[-3000:]
    files = sorted(seen.iterdir())
    assert len(files) == 2, files
    for path in files:
        got = dict(line.split("=", 1) for line in path.read_text().splitlines())
        assert got == SENTINELS, (path.name, got)
