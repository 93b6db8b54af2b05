"""Localization's per-node part on a real GPU (issue #16 point 6): run on the device machine.

    python3 bench/localize_gpu.py --out DIR [--healthy 6] [--preset presets/h100-ib-8port]

What it measures, each as a fresh torchrun process (as every node of a job starts its own):
  1. `--healthy` runs of the per-node check (`python -m smoke.localize.worker --kind node`: bf16 8192^3 x 10 GEMM,
     5 repeats) on an idle GPU: each run's figure and the repeat noise the judgement uses;
  2. the same check while a second process shares the GPU (a "noisy neighbour" at two loads): a
     real slower GPU, not a number written by hand;
  3. the probe (`probe.py`, one rank) with its in-probe localization figures: the seconds they add;
  4. the judgement itself (`smoke.localize.judge.judge_nodes`, full mode, the preset's absolute floors), with
     the healthy runs as peers: healthy runs alone must name nobody, each degraded run among them
     must be named `gpu`.
One GPU cannot run the intra-node all-reduce (NCCL refuses two ranks on one GPU): that waits for a
multi-GPU machine. Writes DIR/localize-gpu.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from smoke import manifest
from smoke.localize.judge import judge_nodes

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(os.path.dirname(HERE), "scripts")

NEIGHBOUR = r"""
import sys, time, torch
n, pause = int(sys.argv[1]), float(sys.argv[2])
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
print("neighbour ready", flush=True)
while True:
    for _ in range(4):
        torch.matmul(a, a)
    torch.cuda.synchronize()
    if pause:
        time.sleep(pause)
"""


def torchrun(args: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1"] + args,
                   env=dict(env, PYTHONPATH=SCRIPTS), check=True)
    return time.perf_counter() - started


def node_check(out: str, name: str, env: dict) -> dict:
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    seconds = torchrun(["-m", "smoke.localize.worker", "--kind", "node", "--out", folder], env)
    [report_file] = [f for f in os.listdir(folder) if f.endswith(".json")]
    with open(os.path.join(folder, report_file), encoding="utf-8") as handle:
        report = json.load(handle)
    report["step_seconds"] = round(seconds, 2)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--healthy", type=int, default=6)
    parser.add_argument("--preset", default=os.path.join(os.path.dirname(HERE), "presets", "h100-ib-8port"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ, SLURM_GPUS_ON_NODE="1", PYTHONUNBUFFERED="1")
    result: dict = {"healthy": {}, "degraded": {}}

    for i in range(args.healthy):
        result["healthy"][f"gpu-run{i + 1}"] = node_check(args.out, f"healthy{i + 1}", env)
    # A second process on the same GPU: heavy (8192^3 without pause) and light (2048^3, 2 ms pauses).
    for label, n, pause in (("neighbour-heavy", 8192, 0.0), ("neighbour-light", 2048, 0.002)):
        neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(n), str(pause)], stdout=subprocess.PIPE,
                                     text=True)
        neighbour.stdout.readline()
        try:
            result["degraded"][label] = node_check(args.out, label, env)
        finally:
            neighbour.kill()
            neighbour.wait()
    probe_file = os.path.join(args.out, "probe.json")
    result["probe_seconds_with_torchrun"] = round(torchrun(["-m", "smoke.probe", "--out", probe_file], env), 2)
    with open(probe_file, encoding="utf-8") as handle:
        probe = json.load(handle)
    result["probe"] = {"wall_s": probe.get("wall_s"), "per_node": probe.get("per_node")}

    expect = manifest.expectations(manifest.load(args.preset))
    healthy = result["healthy"]
    suspects, noise, _ = judge_nodes(list(healthy), healthy, "full", expect)
    result["judgement"] = {"preset": os.path.basename(args.preset), "healthy_only": {"suspects": list(suspects.values()),
                                                                                      "noise": noise}}
    for label, report in result["degraded"].items():
        nodes = dict(healthy, **{label: report})
        found, noise, _ = judge_nodes(list(nodes), nodes, "full", expect)
        result["judgement"][label] = {"suspects": list(found.values()), "noise": noise}

    with open(os.path.join(args.out, "localize-gpu.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
    print(f"{'run':<18} {'GEMM TFLOP/s':>12} {'repeats':<40} {'step s':>7}")
    for label, report in list(healthy.items()) + list(result["degraded"].items()):
        repeats = ", ".join(f"{v:.1f}" for v in report["gemm_repeats"][0])
        print(f"{label:<18} {report['gemm_tflops']:>12.1f} {repeats:<40} {report['step_seconds']:>7}")
    print(f"probe: {result['probe']['wall_s']} s in-program, in-probe localization {result['probe']['per_node']}")
    for label, verdict in result["judgement"].items():
        if label == "preset":
            continue
        named = [f"{s['node']} ({s['layer']}: {s['reason']})" for s in verdict["suspects"]] or ["nobody"]
        print(f"judgement {label}: noise {verdict['noise']:.4f}; named {'; '.join(named)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
