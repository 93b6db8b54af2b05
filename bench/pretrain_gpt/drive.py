"""Run pretrain_gpt.py through scripts/megatron-node as one Slurm task (1 node, 1 GPU) would.

    python3 drive.py BATCH.json --deadline SECONDS

on a GPU machine, from a folder holding this file, memprobe/, repo/ (this repository's scripts/,
validator/, presets/) and mlm/ (Megatron-LM outside the repository:
`git archive core_v0.13.0 megatron pretrain_gpt.py | tar -x -C mlm`). Each run: the preset's
train.sbatch exports (what the batch shell gives every step), the per-task variables Slurm sets,
the run's overrides, then scripts/megatron-node with nothing added. Observation only through
memprobe/sitecustomize.py on PYTHONPATH. Results: $OUT/results.json, logs in $OUT/logs.tar.gz;
rows.py turns results into docs/calibration rows. batch1-4.json are the runs of 2026-12-02.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE / "repo"
MLM = HERE / "mlm"
OUT = Path(os.environ.get("OUT", "/tmp/out"))
WORK = Path("/tmp/runs")
from smoke.verdict.logs import parse_training_log  # PYTHONPATH=scripts on the device

_MEM = re.compile(r"memory \(MB\) \| allocated: ([0-9.]+) \| max allocated: ([0-9.]+) \| reserved: ([0-9.]+) \| max reserved: ([0-9.]+)")


def preset_env(preset):
    text = (REPO / "presets" / preset / "train.sbatch").read_text()
    exports = "\n".join(l for l in text.splitlines() if l.startswith("export ") and "SLURM_EXPORT_ENV" not in l)
    return exports


def slurm_env(job_id, host):
    return {"SLURM_JOB_ID": str(job_id), "SLURM_JOBID": str(job_id), "SLURM_NNODES": "1", "SLURM_JOB_NUM_NODES": "1",
            "SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NTASKS": "1",
            "SLURM_NTASKS_PER_NODE": "1", "SLURM_GPUS_ON_NODE": "1", "SLURM_GPUS_PER_TASK": "1",
            "SLURM_JOB_NODELIST": host, "SLURM_NODELIST": host, "SLURM_STEP_NODELIST": host,
            "SLURMD_NODENAME": host, "SLURM_CPUS_PER_TASK": "16", "SLURM_STEP_ID": "2", "SLURM_STEP_GPUS": "0",
            "CUDA_VISIBLE_DEVICES": "0"}


def run_one(run, index, deadline):
    name = run["name"]
    d = WORK / name
    d.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    try:
        socket.gethostbyname(host)
        master = host
    except OSError:
        master = "127.0.0.1"
    job_id = 917000 + index
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MEGATRON_", "NCCL_"))}
    env.update(slurm_env(job_id, host))
    env.update({"SMOKE_ROOT": str(REPO), "SMOKE_OUT": str(d), "SMOKE_PRESET": run.get("preset", "-"),
                "SMOKE_MODE": "full", "SMOKE_WANDB": "0", "MASTER_ADDR": master,
                "MASTER_PORT": str(20000 + job_id % 12000), "MEGATRON_DIR": str(MLM),
                "PYTHONPATH": str(HERE / "memprobe"), "MEMPROBE_OUT": str(d), "PYTHONUNBUFFERED": "1"})
    env.update(run.get("env", {}))
    timeout = min(run.get("timeout", 300), max(10, deadline - time.time()))
    start = time.time()
    if run.get("kind", "megatron-node") == "megatron-node":
        script = f"set -eu\n{preset_env(run['preset'])}\n" \
                 "if [[ -n ${NCCL_SOCKET_IFNAME:-} && ! -e /sys/class/net/${NCCL_SOCKET_IFNAME%%,*} ]]; then " \
                 "echo \"drive: NCCL_SOCKET_IFNAME=$NCCL_SOCKET_IFNAME absent here, using eth0\"; export NCCL_SOCKET_IFNAME=eth0; fi\n" \
                 f"exec {REPO}/scripts/megatron-node\n"
        cmd = ["timeout", "-k", "10", str(int(timeout)), "bash", "-c", script]
    else:  # the harness (bench/calibrate_memory.py) on the same Megatron tree, for comparison
        env["PYTHONPATH"] = f"{MLM}:{HERE / 'memprobe'}"
        env["MEMPROBE_ALWAYS"] = "1"
        env["MEMPROBE_RESET"] = "0"
        cmd = ["timeout", "-k", "10", str(int(timeout)), sys.executable, str(REPO / "bench" / "calibrate_memory.py"),
               "--one", json.dumps(run["config"]), "--steps", str(run.get("steps", 4))]
    with open(d / "megatron.log", "w") as log:
        proc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(d))
    text = (d / "megatron.log").read_text(errors="replace")
    result = {"name": name, "rc": proc.returncode, "wall_s": round(time.time() - start, 1), "run": run}
    parsed = parse_training_log(text)
    result["iterations"] = len(parsed.losses)
    result["losses"] = parsed.losses
    result["tflops"] = parsed.tflops
    if parsed.tflops[1:]:
        import statistics
        result["tflops_median_steady"] = statistics.median(parsed.tflops[1:])
    m = _MEM.search(text)
    if m:
        result["megatron_memory_mb"] = dict(zip(("allocated", "max_allocated", "reserved", "max_reserved"),
                                                map(float, m.groups())))
    result["oom"] = bool(re.search(r"OutOfMemoryError|CUDA out of memory", text))
    probe = d / "memprobe-rank0.json"
    if probe.exists():
        result["memprobe"] = json.loads(probe.read_text())
    if run.get("kind") == "harness":
        rows = [l for l in text.splitlines() if l.startswith("{")]
        if rows:
            result["harness"] = json.loads(rows[-1])
    print(json.dumps({k: v for k, v in result.items() if k not in ("memprobe", "losses", "tflops", "run")}), flush=True)
    return result


def main():
    batch = json.loads(Path(sys.argv[1]).read_text())
    deadline = time.time() + float(sys.argv[sys.argv.index("--deadline") + 1])
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    groups = []  # consecutive runs with the same "group" run together
    for i, run in enumerate(batch):
        if groups and run.get("group") and groups[-1][0][1].get("group") == run.get("group"):
            groups[-1].append((i, run))
        else:
            groups.append([(i, run)])
    for group in groups:
        if time.time() > deadline - min(r.get("min_s", 40) for _, r in group):
            results += [{"name": r["name"], "skipped": "deadline"} for _, r in group]
            continue
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            got = list(pool.map(lambda ir: run_one(ir[1], ir[0], deadline), group))
        results += got
        (OUT / "results.json").write_text(json.dumps(results))
        if any(r.get("stop_on_fail") and (g["rc"] != 0) for (_, r), g in zip(group, got)):
            print("drive: a run that must pass failed; stopping", flush=True)
            break
    (OUT / "results.json").write_text(json.dumps(results))
    with tarfile.open(OUT / "logs.tar.gz", "w:gz") as tar:
        for d in sorted(WORK.iterdir()):
            for f in ("megatron.log",):
                if (d / f).exists():
                    tar.add(d / f, arcname=f"{d.name}/{f}")


if __name__ == "__main__":
    main()
