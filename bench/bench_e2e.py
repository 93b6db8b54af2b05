"""Submit-to-verdict wall time of `sbatch --nodes 2` on the local Slurm cluster (needs root).

Brings up a 2-node cluster, runs the ethernet-only preset in functional mode RUNS times (each job
on its own, one after another) and prints every time and the median. Run: make bench-e2e
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def main() -> int:
    if os.geteuid() != 0:
        print("bench_e2e: needs root (it starts slurmctld, slurmd and munge)", file=sys.stderr)
        return 2
    cluster = ROOT / "scripts" / "local-cluster"
    subprocess.run([str(cluster), "up", "--nodes", "2"], check=True, capture_output=True)
    env = {**os.environ, "SLURM_CONF": "/run/smoke-cluster/slurm.conf"}
    times = []
    try:
        for _ in range(RUNS):
            start = time.perf_counter()
            job = subprocess.run(["sbatch", "--parsable", "--nodes", "2",
                                  f"--export=NONE,SMOKE_MODE=functional,SMOKE_PYTHON={sys.executable}",
                                  "presets/ethernet-only/train.sbatch"], cwd=ROOT, env=env, check=True,
                                 capture_output=True, text=True).stdout.strip()
            verdict = ROOT / "smoke-runs" / job / "verdict.json"
            while subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True).stdout.strip():
                time.sleep(0.2)
            elapsed = time.perf_counter() - start
            times.append(elapsed)
            print(f"job {job}: {elapsed:6.1f} s, verdict {'written' if verdict.exists() else 'MISSING'}", flush=True)
    finally:
        subprocess.run([str(cluster), "down"], capture_output=True)
    print(f"sbatch --nodes 2, submit to verdict: median {statistics.median(times):.1f} s of {RUNS} "
          f"(min {min(times):.1f}, max {max(times):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
