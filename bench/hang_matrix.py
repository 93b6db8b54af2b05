"""Hang matrix: one fault at a random moment of training on a random node of the local 4-node Slurm
cluster, and whether the hang watchdog (smoke.watchdog) names that node and rank within 120 s of the
stall, and nobody in healthy runs or runs with a slow but progressing node. Needs root.

    bench/hang_matrix.py --mode functional --runs 20              # every fault, interleaved
    bench/hang_matrix.py --mode container-functional --faults stop-rank,net-cut --runs 3
    bench/hang_matrix.py --mode both --runs 20 --keep-cluster    # the two modes alternate
    bench/hang_matrix.py --mode both --runs 20 --lanes 2   # two 4-node jobs at once, 8-node cluster
    bench/hang_matrix.py --report r.jsonl

The job is the ethernet-only preset, whole (preflight, probe, training), with the functional loop
paced to SMOKE_FUNCTIONAL_STEP_MS per step so that training lasts long enough to be hit. The fault
lands 3-30 s (random) after the training's ranks first report progress. Faults, all real but one:
- stop-rank: one rank of the node SIGSTOPped;
- spin-rank: one rank spinning in its own code outside the collective (TEST DOUBLE: SIGUSR2 to a
  handler that only SMOKE_TEST_FAULTS=1 installs in the functional loop, smoke.tiny_train);
- net-cut: the node's eth0 drops every packet it sends but Slurm's own and ARP (tc htb, u32 filters
  and a blackhole qdisc in its namespace),
  so the nodes' data traffic and the watchdog's TCP checks are cut, slurmctld still reaches slurmd;
- stop-node: every rank of the node SIGSTOPped;
- healthy: nothing; straggler: the node's ranks moved into a cgroup-v1 CPU quota (15 % of a core),
  slower but progressing: a straggler is not a hang.
The fault is lifted once the watchdog has written hang.json (or the job ended).
With --lanes N the cluster has 4*N nodes and N jobs run at once, each on its own four nodes
(--nodelist), so a fault on one lane's node never touches another lane's job; the cycles are dealt
out to the lanes in turn. The machine's CPUs are shared by the lanes: every run is slower, which
makes the healthy and straggler runs a harder test of "a slow job is not a hang", not an easier one.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from fault_matrix import CGROUP, ENV, NODES, ROOT, STATE, _json, sh, wait

FAULTS = ("healthy", "straggler", "stop-rank", "spin-rank", "net-cut", "stop-node")
LAYER = {"stop-rank": "unresponsive", "spin-rank": "rank", "net-cut": "network", "stop-node": "unresponsive"}
SLURM_PORTS = ("6817", "6818")  # SlurmctldPort, SlurmdPort of scripts/local-cluster's slurm.conf
TRAINING = "smoke.tiny_train"


def rank_pids(node: str) -> list[int]:
    """The functional loop's rank processes on a node (its network namespace), not torchrun's agent."""
    pids = []
    for pid in sh("ip", "netns", "pids", f"smoke-{node}", check=False).stdout.split():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if TRAINING.encode() in cmdline and b"smoke.watchdog.inrank" in cmdline:
            pids.append(int(pid))
    return sorted(pids)


def inject(kind: str, node: str, rng: random.Random) -> dict:
    pids = rank_pids(node)
    if kind in ("stop-rank", "spin-rank"):
        if not pids:
            return {"error": "no rank process found"}
        pid = rng.choice(pids)
        os.kill(pid, signal.SIGSTOP if kind == "stop-rank" else signal.SIGUSR2)
        return {"pid": pid, "rank": rank_of(pid)}
    if kind == "stop-node":
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        return {"pids": pids}
    if kind == "net-cut":
        # htb: Slurm's ports and ARP to a normal class, everything else (the default class) to a
        # blackhole qdisc. The prio qdisc and tc's drop action (act_gact) are modules that this
        # kernel lacks ("Specified qdisc kind is unknown"); htb, u32 and blackhole are there.
        ns = ["nsenter", f"--net=/run/netns/smoke-{node}", "tc"]
        sh(*ns, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "20", "r2q", "1000")
        sh(*ns, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit")
        sh(*ns, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:20", "htb", "rate", "10gbit")
        sh(*ns, "qdisc", "add", "dev", "eth0", "parent", "1:20", "handle", "20:", "blackhole")
        for port in SLURM_PORTS:
            for way in ("sport", "dport"):
                sh(*ns, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                   "match", "ip", way, port, "0xffff", "flowid", "1:10")
        sh(*ns, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "arp", "prio", "2", "u32",
           "match", "u32", "0", "0", "flowid", "1:10")
        return {}
    if kind == "straggler":
        group = CGROUP / f"smoke-straggler-{node}"
        group.mkdir(exist_ok=True)
        (group / "cpu.cfs_period_us").write_text("20000")
        (group / "cpu.cfs_quota_us").write_text("3000")
        for pid in pids:
            (group / "cgroup.procs").write_text(str(pid))
        return {"pids": pids}
    return {}


def lift(kind: str, node: str | None) -> None:
    if kind == "net-cut" and node:
        sh("nsenter", f"--net=/run/netns/smoke-{node}", "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
    if kind == "straggler" and node:
        group = CGROUP / f"smoke-straggler-{node}"
        if group.exists():
            for pid in (group / "cgroup.procs").read_text().split():
                try:
                    (CGROUP / "cgroup.procs").write_text(pid)
                except OSError:
                    pass
            group.rmdir()


def rank_of(pid: int) -> int | None:
    try:
        for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if item.startswith(b"RANK="):
                return int(item[5:])
    except (OSError, ValueError):
        pass
    return None


def submit(mode: str, nodes: list[str], image: str | None) -> str:
    exports = ["NONE", f"SMOKE_MODE={mode}", "SMOKE_FUNCTIONAL_STEPS=400", "SMOKE_FUNCTIONAL_STEP_MS=200",
               "SMOKE_TEST_FAULTS=1", "SMOKE_LOCALIZE=never", "SMOKE_RDZV_TIMEOUT=120", "SMOKE_STEP_GRACE=10",
               f"SMOKE_FAKE_GPU_DIR={STATE / 'dev'}"]
    if mode == "functional":
        exports.append(f"SMOKE_PYTHON={sys.executable}")
    else:
        exports.append(f"SMOKE_IMAGE={image or standin_image()}")
    out = subprocess.run(["sbatch", "--parsable", "--nodes", "4", f"--nodelist={','.join(nodes)}",
                          "--gpus-per-node=2", "--time=00:15:00",
                          f"--export={','.join(exports)}", "presets/ethernet-only/train.sbatch"], cwd=ROOT, env=ENV,
                         capture_output=True, text=True, check=True).stdout
    return out.strip().split(";")[0]


def standin_image() -> str:
    return subprocess.run([str(ROOT / "scripts" / "standin-image")], capture_output=True, text=True,
                          check=True, env=ENV).stdout.strip()


def training_started(run: Path) -> bool:
    beats = list((run / "watch" / "megatron").glob("*.beat"))
    steps = []
    for beat in beats:
        try:
            steps.append(int(beat.read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            pass
    return len(steps) >= 8 and min(steps) >= 3


def one_run(kind: str, mode: str, rng: random.Random, nodes: list[str] = NODES, image: str | None = None) -> dict:
    node = None if kind == "healthy" else rng.choice(nodes)
    started = time.monotonic()
    job = submit(mode, nodes, image)
    run = ROOT / "smoke-runs" / job
    injected, info, lifted = None, {}, False
    delay = rng.uniform(3, 30)
    deadline = time.monotonic() + 900
    try:
        while time.monotonic() < deadline:
            state = sh("squeue", "-h", "-j", job, "-o", "%T", check=False).stdout.strip()
            if state in ("", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
                break
            if injected is None and node and training_started(run):
                time.sleep(delay)
                injected = time.time()
                try:
                    info = inject(kind, node, rng)
                except (subprocess.CalledProcessError, OSError) as exc:  # recorded as a failed run, not a crash
                    info = {"error": f"{exc}"[:300]}
            if injected and not lifted and (run / "hang.json").exists():
                lift(kind, node)
                lifted = True
            time.sleep(0.5)
    finally:
        if not lifted:
            lift(kind, node)
    state = wait(job, timeout=120)
    verdict = _json(run / "verdict.json") or {"verdict": "MISSING", "suspects": []}
    hang = _json(run / "hang.json") or {}
    named = {s["node"]: s["layer"] for s in verdict.get("suspects", [])}
    culprit_ranks = [c.get("rank") for c in hang.get("culprits", []) if c.get("node") == node]
    decided_at = (run / "hang.json").stat().st_mtime if (run / "hang.json").exists() else None
    return {"fault": kind, "mode": mode, "node": node, "nodes": nodes, "job": job, "state": state, "verdict": verdict["verdict"],
            "found": node in named if node else None, "layer": named.get(node) if node else None,
            "false": sorted(n for n in named if n != node), "seconds": round(time.monotonic() - started, 1),
            "injected": info, "hang": bool(hang), "job_wide": hang.get("job_wide"), "culprit_ranks": culprit_ranks,
            "rank_ok": (kind in ("stop-node", "net-cut") or info.get("rank") in culprit_ranks) if node else None,
            "named_after_s": round(decided_at - injected, 1) if decided_at and injected else None}


def report(rows: list[dict]) -> None:
    print("| mode | fault | runs | node named | expected layer (and rank) | within 120 s | false names | "
          "stall to decision, median s (max) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for mode in sorted({r["mode"] for r in rows}):
        for kind in FAULTS:
            mine = [r for r in rows if r["fault"] == kind and r["mode"] == mode]
            if not mine:
                continue
            false = sum(1 for r in mine if r["false"] or (r["node"] is None and r["hang"]))
            if kind in ("healthy", "straggler"):
                # a straggler run's node must not be named either
                false = sum(1 for r in mine if r["hang"] or r["false"] or r.get("found"))
                print(f"| {mode} | {kind} | {len(mine)} | - | - | - | {false} | - |")
                continue
            found = sum(1 for r in mine if r["found"])
            right = sum(1 for r in mine if r["layer"] == LAYER[kind] and r["rank_ok"])
            times = [r["named_after_s"] for r in mine if r["named_after_s"] is not None]
            fast = sum(1 for t in times if t <= 120)
            spread = f"{statistics.median(times):.0f} ({max(times):.0f})" if times else "-"
            print(f"| {mode} | {kind} | {len(mine)} | {found}/{len(mine)} | {right}/{len(mine)} | {fast}/{len(mine)} | "
                  f"{false} | {spread} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--mode", default="functional", choices=("functional", "container-functional", "both"),
                        help="both: the two modes alternate within every cycle, on one cluster with pyxis")
    parser.add_argument("--runs", type=int, default=int(os.environ.get("FAULT_RUNS", "20")))
    parser.add_argument("--results", default=str(ROOT / "smoke-runs" / "hang-matrix.jsonl"))
    parser.add_argument("--report", metavar="JSONL")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--keep-cluster", action="store_true")
    parser.add_argument("--lanes", type=int, default=1, choices=range(1, 5), metavar="1-4",
                        help="jobs at once, each on its own 4 nodes of a 4*N-node cluster")
    args = parser.parse_args(argv)
    if args.report:
        report([json.loads(line) for line in Path(args.report).read_text().splitlines() if line.strip()])
        return 0
    if os.geteuid() != 0:
        print("hang_matrix: needs root (local Slurm cluster, tc, cgroups, signals)", file=sys.stderr)
        return 2
    kinds = [k for k in args.faults.split(",") if k]
    unknown = set(kinds) - set(FAULTS)
    if unknown:
        print(f"hang_matrix: unknown fault(s) {', '.join(sorted(unknown))}; known: {', '.join(FAULTS)}", file=sys.stderr)
        return 2
    modes = ["functional", "container-functional"] if args.mode == "both" else [args.mode]
    up = sh(str(ROOT / "scripts" / "local-cluster"), "up", "--nodes", str(4 * args.lanes),
            *(["--pyxis"] if "container-functional" in modes else []), "--host-suffix", ".cluster.test", check=False)
    if up.returncode != 0:
        print(f"hang_matrix: local-cluster up failed:\n{up.stdout}{up.stderr}", file=sys.stderr)
        return 1
    image = standin_image() if "container-functional" in modes else None  # once, not raced by the lanes
    rows = []
    lock = threading.Lock()
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)

    def lane(number: int) -> None:
        rng = random.Random(None if args.seed is None else args.seed * 100 + number)
        nodes = [f"node{4 * number + i}" for i in range(1, 5)]
        for i in range(number, args.runs, args.lanes):
            for kind, mode in ((k, m) for k in kinds for m in modes):
                try:
                    row = one_run(kind, mode, rng, nodes, image)
                except Exception as exc:  # one broken run is a row, the other lanes go on
                    row = {"fault": kind, "mode": mode, "node": None, "nodes": nodes, "job": None, "state": "ERROR",
                           "verdict": "ERROR", "found": None, "layer": None, "false": [], "seconds": 0,
                           "injected": {"error": f"{type(exc).__name__}: {exc}"[:300]}, "hang": False,
                           "job_wide": None, "culprit_ranks": [], "rank_ok": None, "named_after_s": None}
                with lock:
                    rows.append(row)
                    with open(args.results, "a", encoding="utf-8") as handle:
                        handle.write(json.dumps(row) + "\n")
                    print(f"run {i + 1} lane {number} {mode} {kind:9} node={row['node']} found={row['found']} "
                          f"layer={row['layer']} rank_ok={row['rank_ok']} false={row['false']} "
                          f"after={row['named_after_s']} s verdict={row['verdict']} ({row['seconds']} s)", flush=True)

    try:
        threads = [threading.Thread(target=lane, args=(n,), daemon=True) for n in range(args.lanes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        if not args.keep_cluster:
            sh(str(ROOT / "scripts" / "local-cluster"), "down", check=False)
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
