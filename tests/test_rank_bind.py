"""scripts/smoke/rank_bind.py: each torchrun rank bound to its GPU's NUMA node, on sysfs trees written
from the kernel's layout (test doubles: no multi-socket GPU node here) and a stand-in nvidia-smi.
The affinity itself is real: the rank's program reports what the kernel says it may run on."""
import json
import os
import subprocess
import sys
import textwrap

import pytest



BIND = ["-m", "smoke.rank_bind"]
REPORT = "import json, os; print(json.dumps(sorted(os.sched_getaffinity(0))))"
pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to see a binding")


def sysfs(tmp_path, nodes, gpus):
    """nodes: NUMA node -> cpulist; gpus: bus id -> (numa node, local cpulist)."""
    root = tmp_path / "sysfs"
    for node, cpus in nodes.items():
        folder = root / "sys/devices/system/node" / f"node{node}"
        folder.mkdir(parents=True)
        (folder / "cpulist").write_text(cpus + "\n")
    for bus, (numa, cpus) in gpus.items():
        folder = root / "sys/bus/pci/devices" / bus
        folder.mkdir(parents=True)
        (folder / "numa_node").write_text(f"{numa}\n")
        (folder / "local_cpulist").write_text(cpus + "\n")
    return root


def nvidia_smi(tmp_path, buses):
    """A stand-in nvidia-smi: `-i N` prints the N-th bus id as nvidia-smi does (8-digit domain)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    table = " ".join(f"[{i}]=00000000:{bus.split(':', 1)[1].upper()}" for i, bus in enumerate(buses))
    script = folder / "nvidia-smi"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        declare -A bus=({table})
        while (( $# )); do [[ $1 == -i ]] && {{ echo "${{bus[$2]}}"; exit 0; }}; shift; done
        exit 6
        """))
    script.chmod(0o755)
    return folder


def run(tmp_path, root, env, cpus="0,1"):
    environment = dict(os.environ, SMOKE_SYSFS_ROOT=str(root), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", **env)
    done = subprocess.run(["taskset", "-c", cpus, sys.executable, *BIND, "-c", REPORT], env=environment,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


TWO_SOCKETS = {0: "0", 1: "1"}
GPUS = {"0000:1b:00.0": (0, "0"), "0000:9a:00.0": (1, "1")}


@pytest.mark.parametrize("local_rank, visible, cpus", [("0", "0,1", [0]), ("1", "0,1", [1]), ("0", "1", [1])])
def test_each_rank_runs_on_its_gpus_numa_node(tmp_path, local_rank, visible, cpus):
    root = sysfs(tmp_path, TWO_SOCKETS, GPUS)
    nvidia_smi(tmp_path, list(GPUS))
    affinity, log = run(tmp_path, root, {"LOCAL_RANK": local_rank, "CUDA_VISIBLE_DEVICES": visible})
    assert affinity == cpus
    assert f"NUMA node {cpus[0]}: CPUs {cpus[0]}" in log


def test_never_widens_what_slurm_gave_the_task(tmp_path):
    root = sysfs(tmp_path, TWO_SOCKETS, {"0000:1b:00.0": (0, "0-1")})
    nvidia_smi(tmp_path, ["0000:1b:00.0"])
    affinity, _ = run(tmp_path, root, {"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "0"}, cpus="1")
    assert affinity == [1]


@pytest.mark.parametrize("case, expected", [
    ("one-node", "one NUMA node with CPUs: nothing to bind"),
    ("unknown", "NUMA node unknown: not binding"),
    ("no-overlap", "has none of this task's CPUs (1): not binding; give the job whole nodes (--exclusive)"),
    ("never", "SMOKE_NUMA_BIND=never: not binding"),
    ("no-gpu", "GPU of local rank 0 not found"),
])
def test_leaves_the_rank_alone_and_says_why(tmp_path, case, expected):
    nodes = {0: "0-1", 1: ""} if case == "one-node" else TWO_SOCKETS  # GH200: GPU memory nodes have no CPUs
    gpus = {"0000:1b:00.0": (-1 if case == "unknown" else 0, "0")}
    root = sysfs(tmp_path, nodes, gpus)
    nvidia_smi(tmp_path, [] if case == "no-gpu" else list(gpus))
    env = {"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "0"}
    if case == "never":
        env["SMOKE_NUMA_BIND"] = "never"
    affinity, log = run(tmp_path, root, env, cpus="1" if case == "no-overlap" else "0,1")
    assert affinity == ([1] if case == "no-overlap" else [0, 1])
    assert expected in log


def test_program_arguments_and_exit_status_pass_through(tmp_path):
    root = sysfs(tmp_path, {0: "0-1"}, {})
    environment = dict(os.environ, SMOKE_SYSFS_ROOT=str(root), LOCAL_RANK="1")
    done = subprocess.run([sys.executable, *BIND, "-c", "import sys; print(sys.argv[1:]); sys.exit(7)", "a b", "--x"],
                          env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 7 and done.stdout.strip() == "['a b', '--x']" and done.stderr == ""
