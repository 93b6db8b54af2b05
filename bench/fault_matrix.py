"""Fault matrix: inject one fault on a random node of the local 4-node Slurm cluster, run the
ethernet-only preset in functional mode (probe + localization, training skipped with
SMOKE_STOP_AFTER=probe), and check that the verdict names that node and nobody else. Needs root.

    make fault-matrix                                  # every fault, FAULT_RUNS runs each (default 20)
    bench/fault_matrix.py --faults nic,hang --runs 3 --results r.jsonl   # a slice, appended
    bench/fault_matrix.py --report r.jsonl             # the table from what ran
    bench/fault_matrix.py --rejudge r.jsonl            # the same runs judged by the current smoke.localize

Faults (real ones where this machine has them): nic = the node's eth0 throttled to 20 Mbit/s with
tc tbf in its network namespace; cpu = the node's slurmd (and so every process of its steps) in a
cgroup-v1 CPU quota of 10 % of one core; hang = the node's local rank 0 stopped (SIGSTOP) as soon
as it starts, in every step; gpus = one of the node's fake GPU device files removed (a test
double for a GPU that fell off the bus: functional mode has no GPU); healthy = nothing.
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

from smoke.localize.judge import judge_nodes
from smoke.localize.search import GroupSearch
from smoke.localize.stats import NET_FLOOR, robust_noise

ROOT = Path(__file__).resolve().parents[1]
STATE = Path("/run/smoke-cluster")
NODES = [f"node{i}" for i in range(1, 5)]
FAULTS = ("healthy", "nic", "cpu", "hang", "gpus")
LAYER = {"nic": "network", "cpu": "gpu", "hang": "unresponsive", "gpus": "config"}
CGROUP = Path("/sys/fs/cgroup/cpu")
ENV = {**os.environ, "SLURM_CONF": str(STATE / "slurm.conf")}


# The nodes' host names are FQDNs while their Slurm names are short (node1.cluster.test vs node1), as
# on many real clusters: localization must file and find every report under the Slurm name.
HOST_SUFFIX = ".cluster.test"


def cluster_up():
    return sh(str(ROOT / "scripts" / "local-cluster"), "up", "--nodes", "4", "--host-suffix", HOST_SUFFIX, check=False)


def sh(*cmd, check=True):
    return subprocess.run(cmd, capture_output=True, text=True, check=check, env=ENV)


def slurmd_pid(node: str) -> int:
    return int(sh("pgrep", "-f", f"slurmd -N {node} -f").stdout.split()[0])


class Fault:
    def __init__(self, kind: str, node: str | None):
        self.kind, self.node = kind, node
        self.stop = threading.Event()
        self.thread = None

    def __enter__(self):
        node = self.node
        if self.kind == "nic":
            sh("nsenter", f"--net=/run/netns/smoke-{node}", "tc", "qdisc", "add", "dev", "eth0", "root", "tbf",
               "rate", "20mbit", "burst", "32kbit", "latency", "400ms")
        elif self.kind == "cpu":
            group = CGROUP / f"smoke-slow-{node}"
            group.mkdir(exist_ok=True)
            (group / "cpu.cfs_period_us").write_text("20000")
            (group / "cpu.cfs_quota_us").write_text("2000")  # 10 %: slower still and torch's import alone outlasts the steps' time limit
            (group / "cgroup.procs").write_text(str(slurmd_pid(node)))
        elif self.kind == "gpus":
            (STATE / "dev" / node / "gpu0").unlink()
        elif self.kind == "hang":
            self.thread = threading.Thread(target=self._stop_rank0, daemon=True)
            self.thread.start()
        return self

    def _stop_rank0(self):
        stopped = set()
        while not self.stop.is_set():
            pids = sh("ip", "netns", "pids", f"smoke-{self.node}", check=False).stdout.split()
            for pid in pids:
                if pid in stopped:
                    continue
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                except OSError:
                    continue
                if (b"smoke.probe" in cmdline or b"smoke.localize.worker" in cmdline) and b"LOCAL_RANK=0" in environ:
                    try:
                        os.kill(int(pid), signal.SIGSTOP)
                        stopped.add(pid)
                    except ProcessLookupError:
                        pass
            time.sleep(0.2)

    def __exit__(self, *exc):
        node = self.node
        if self.kind == "nic":
            sh("nsenter", f"--net=/run/netns/smoke-{node}", "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
        elif self.kind == "cpu":
            group = CGROUP / f"smoke-slow-{node}"
            for pid in (group / "cgroup.procs").read_text().split():
                try:
                    (CGROUP / "cgroup.procs").write_text(pid)
                except OSError:
                    pass
            group.rmdir()
        elif self.kind == "gpus":
            sh("mknod", str(STATE / "dev" / node / "gpu0"), "c", "1", "3")
        elif self.kind == "hang":
            self.stop.set()
            self.thread.join()


def submit(extra: str = "", step_timeout: int = 45, collective_timeout: int = 20) -> str:
    exports = ",".join(["NONE", "SMOKE_MODE=functional", f"SMOKE_PYTHON={sys.executable}", "SMOKE_STOP_AFTER=probe",
                        f"SMOKE_COLLECTIVE_TIMEOUT={collective_timeout}", f"SMOKE_LOCALIZE_STEP_TIMEOUT={step_timeout}", "SMOKE_RDZV_TIMEOUT=90",
                        "SMOKE_STEP_GRACE=10", f"SMOKE_FAKE_GPU_DIR={STATE / 'dev'}"]) + extra
    out = subprocess.run(["sbatch", "--parsable", "--nodes", "4", "--gpus-per-node=2", f"--export={exports}",
                          "presets/ethernet-only/train.sbatch"], cwd=ROOT, env=ENV, capture_output=True, text=True,
                         check=True).stdout
    return out.strip().split(";")[0]


def wait(job: str, timeout: float = 400) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = sh("scontrol", "show", "job", job, check=False).stdout
        fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
        if fields.get("JobState") not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", None):
            return fields["JobState"]
        time.sleep(0.5)
    sh("scancel", job, check=False)
    return "TIMEOUT"


def stage_seconds(run: Path) -> float | None:
    """The probe stage's wall time: from the end of the preflight log to the end of the probe log."""
    try:
        return round((run / "probe.log").stat().st_mtime - (run / "preflight.log").stat().st_mtime, 1)
    except OSError:
        return None


def one_run(kind: str, rng: random.Random, extra: str = "") -> dict:
    node = None if kind == "healthy" else rng.choice(NODES)
    started = time.monotonic()
    with Fault(kind, node):
        # a node at 10 % of a core needs about a minute to start torch: give its steps the time
        job = submit(extra, step_timeout=120 if kind == "cpu" else 45, collective_timeout=90 if kind == "cpu" else 20)
        state = wait(job)
    took = round(time.monotonic() - started, 1)
    run = ROOT / "smoke-runs" / job
    verdict = _json(run / "verdict.json") or {"verdict": "MISSING", "suspects": []}
    probe = _json(run / "probe.json") or {}
    localize = _json(run / "localize.json") or {}
    named = {s["node"]: s["layer"] for s in verdict.get("suspects", [])}
    return {"fault": kind, "node": node, "job": job, "state": state, "verdict": verdict["verdict"],
            "found": node in named if node else None, "layer": named.get(node) if node else None,
            "false": sorted(n for n in named if n != node), "seconds": took,
            "probe_stage_s": stage_seconds(run), "in_probe_s": (probe.get("per_node") or {}).get("seconds"),
            "localize_ran": localize.get("ran"), "localize_s": localize.get("seconds"),
            "exclude": (run / "exclude.txt").read_text().strip() if (run / "exclude.txt").exists() else None}


def evidence(job: str, tail: int = 20) -> dict:
    """What a run left to explain its outcome: the verdict, localization's decision and search, the
    probe's in-probe figures, the job's stages and the last lines of each log (no per-repeat lists)."""
    run = ROOT / "smoke-runs" / job
    out: dict = {"run_dir": str(run)}
    verdict = _json(run / "verdict.json") or {}
    out["verdict"] = {k: verdict.get(k) for k in ("verdict", "suspects", "checks") if k in verdict}
    localize = _json(run / "localize.json") or {}
    out["localize"] = {k: v for k, v in localize.items() if k != "per_node"}
    out["in_probe"] = (_json(run / "probe.json") or {}).get("per_node")
    logs = [run / name for name in ("stages.txt", "probe.log", "localize.log")]
    logs += list(ROOT.glob(f"*-{job}.out"))  # the batch script's own output (#SBATCH --output=%x-%j.out)
    for path in logs:
        try:
            out[path.name] = path.read_text(errors="replace").splitlines()[-tail:]
        except OSError:
            pass
    return out


def _json(path: Path) -> dict | None:
    """A run's JSON report (verdict, probe, localize, group): an object, or None when it is missing,
    unreadable or anything else."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def rejudge(row: dict) -> dict:
    """A recorded run judged again by the current smoke.localize, from what the run wrote: the
    per-node reports, then the group search replayed on the recorded group figures (and their
    repeats). When the current code would run a group the run never ran, it cannot be replayed:
    {"replayed": False}. The in-probe trigger is not re-judged (its repeats are not recorded); the
    current margin is never larger than the old one, so a run that triggered localization still does."""
    run = ROOT / "smoke-runs" / row["job"]
    loc = _json(run / "localize.json") or {}
    if not loc.get("ran"):
        return {"replayed": True, "named": {}}
    suspects, noise, _ = judge_nodes(NODES, loc.get("per_node") or {}, "functional", {})
    named = {n: s["layer"] for n, s in suspects.items()}
    recorded = []
    for i, group in enumerate(loc.get("groups") or [], start=1):
        repeats = (_json(run / "localize" / f"group-{i}.json") or {}).get("repeats") or []
        recorded.append((tuple(group["nodes"]), group["figure"], repeats))
    search = GroupSearch([n for n in NODES if n not in suspects], noise, NET_FLOOR["functional"])

    def measure(tests):
        figures = []
        for _kind, _tested, ran_on in tests:
            match = next((i for i, (nodes, _, _) in enumerate(recorded) if nodes == tuple(ran_on)), None)
            if match is None:
                raise LookupError(ran_on)
            _, figure, repeats = recorded.pop(match)
            if repeats:
                search.noise = max(search.noise, robust_noise([repeats]))
            figures.append(figure)
        return figures
    try:
        named.update({n: "network" for n in search.run(measure)})
    except LookupError as exc:
        return {"replayed": False, "missing_group": list(exc.args[0])}
    return {"replayed": True, "named": named, "group_noise": round(search.noise, 3)}


def report(rows: list[dict]) -> None:
    print("| fault | runs | faulty node found | expected layer | false suspects | median s per run (min-max) |")
    print("|---|---:|---:|---:|---:|---|")
    for kind in FAULTS:
        mine = [r for r in rows if r["fault"] == kind]
        if not mine:
            continue
        times = [r["seconds"] for r in mine]
        found = "-" if kind == "healthy" else f"{sum(1 for r in mine if r['found'])}/{len(mine)}"
        layer = "-" if kind == "healthy" else f"{sum(1 for r in mine if r['layer'] == LAYER[kind])}/{len(mine)}"
        false = sum(1 for r in mine if r["false"])
        print(f"| {kind} | {len(mine)} | {found} | {layer} | {false} run(s) | "
              f"{statistics.median(times):.0f} ({min(times):.0f}-{max(times):.0f}) |")
    healthy = [r for r in rows if r["fault"] == "healthy" and r.get("probe_stage_s") and r.get("in_probe_s") is not None]
    if healthy:
        share = [(r["in_probe_s"] + (r.get("localize_s") or 0)) / r["probe_stage_s"] for r in healthy]
        print(f"\nhealthy runs: localization's share of the probe stage, median {100 * statistics.median(share):.1f} % "
              f"(max {100 * max(share):.1f} %) of a median {statistics.median(r['probe_stage_s'] for r in healthy):.1f} s stage")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--runs", type=int, default=int(os.environ.get("FAULT_RUNS", "20")))
    parser.add_argument("--results", default=str(ROOT / "smoke-runs" / "fault-matrix.jsonl"))
    parser.add_argument("--report", metavar="JSONL", help="print the table of a results file and stop")
    parser.add_argument("--rejudge", metavar="JSONL", help="judge a results file's runs again with the current "
                        "smoke.localize (from their run folders) and print the table of that")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--keep-cluster", action="store_true", help="leave the cluster up afterwards")
    args = parser.parse_args(argv)
    if args.rejudge:
        rows = []
        for line in Path(args.rejudge).read_text().splitlines():
            row = json.loads(line)
            again = rejudge(row)
            if not again["replayed"]:
                print(f"{row['job']} {row['fault']}: not replayable (the current code runs group {again['missing_group']})")
                continue
            named = again["named"]
            node = row["node"]
            row = {**row, "found": node in named if node else None, "layer": named.get(node) if node else None,
                   "false": sorted(n for n in named if n != node)}
            rows.append(row)
        report(rows)
        return 0
    if args.report:
        report([json.loads(line) for line in Path(args.report).read_text().splitlines() if line.strip()])
        return 0
    if os.geteuid() != 0:
        print("fault_matrix: needs root (local Slurm cluster, tc, cgroups)", file=sys.stderr)
        return 2
    kinds = [k for k in args.faults.split(",") if k]
    unknown = set(kinds) - set(FAULTS)
    if unknown:
        print(f"fault_matrix: unknown fault(s) {', '.join(sorted(unknown))}; known: {', '.join(FAULTS)}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    up = cluster_up()
    if up.returncode != 0:
        print(f"fault_matrix: local-cluster up failed:\n{up.stdout}{up.stderr}", file=sys.stderr)
        return 1
    rows = []
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    try:
        for i in range(args.runs):
            for kind in kinds:
                row = one_run(kind, rng)
                rows.append(row)
                with open(args.results, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(row) + "\n")
                print(f"run {i + 1} {kind:8} node={row['node']} found={row['found']} layer={row['layer']} "
                      f"false={row['false']} {row['seconds']} s verdict={row['verdict']}", flush=True)
    finally:
        if not args.keep_cluster:
            sh(str(ROOT / "scripts" / "local-cluster"), "down", check=False)
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
