"""The verdict: combine the stages of one job into PASS, WARN or FAIL.

Reads the job's output folder (stages.txt, preflight/*.json, functional/*.json, megatron.log) and
the preset's expectations, writes verdict.json atomically and prints a short table.
Exit codes: 0 pass (or warn), 1 fail, 2 could not run.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from validator.catalog import RDMA_FABRICS  # noqa: E402  (standard library only)

_ITER = re.compile(r"iteration\s+(\d+)/\s*\d+ \|.*?lm loss: ([0-9.eE+-]+|nan|inf)", re.IGNORECASE)
_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\): ([0-9.]+)")
# torchrun's summary of the first rank that failed
_ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):.*?host\s*: (\S+).*?rank\s*: (\d+).*?"
                         r"exitcode\s*: (-?\d+)[^\n]*?(?:\((SIG\w+)\))?\s*$", re.DOTALL | re.MULTILINE)


def parse_training_log(text: str) -> dict:
    """Per-iteration loss and TFLOP/s from Megatron's (or the functional loop's) log lines."""
    losses, tflops = {}, {}
    for line in text.splitlines():
        m = _ITER.search(line)
        if not m:
            continue
        step = int(m.group(1))
        losses[step] = float(m.group(2))
        t = _TFLOPS.search(line)
        if t:
            tflops[step] = float(t.group(1))
    return {"losses": [losses[k] for k in sorted(losses)], "tflops": [tflops[k] for k in sorted(tflops)]}


def judge_training(log: dict, min_tflops: float | None) -> list[tuple[str, str, str]]:
    out = []
    losses = log["losses"]
    if len(losses) < 2:
        return [("training", "FAIL", f"{len(losses)} iteration line(s) in the log")]
    finite = all(x == x and abs(x) != float("inf") for x in losses)
    if not finite:
        out.append(("loss", "FAIL", "loss is NaN or infinite"))
    else:
        head = statistics.mean(losses[: max(1, len(losses) // 4)])
        tail = statistics.mean(losses[-max(1, len(losses) // 4):])
        state = "PASS" if tail < head else "FAIL"
        out.append(("loss", state, f"{head:.4g} -> {tail:.4g} over {len(losses)} iterations"))
    steady = log["tflops"][1:]  # the first iteration includes start-up
    if steady:
        median = statistics.median(steady)
        if min_tflops is None:
            out.append(("tflops_per_gpu", "PASS", f"median {median:.1f}"))
        else:
            state = "PASS" if median >= min_tflops else "FAIL"
            out.append(("tflops_per_gpu", state, f"median {median:.1f}, expected >= {min_tflops:g}"))
    return out


_NETWORK = re.compile(r"NCCL INFO (?:Using network (\w+)|.*via NET/(\w+))")


def nccl_networks(log_text: str) -> set[str]:
    """The network transports NCCL reported in its INFO output (IB, Socket, a plugin's name)."""
    found = set()
    for match in _NETWORK.finditer(log_text):
        found.add(match.group(1) or match.group(2))
    return found


def judge_probe(probe: dict, manifest: dict, mode: str, log_text: str) -> list[tuple[str, str, str]]:
    rows = []
    expect = manifest.get("expectations") or {}
    if mode == "functional":
        # CPU processes share a few cores: timings show the plumbing works, nothing about speed.
        rows.append(("probe", "PASS", f"{probe['world_size']} ranks over gloo; speed and stragglers not judged on CPU"))
        return rows
    if probe.get("gemm_stragglers"):
        rows.append(("gemm stragglers", "FAIL", ", ".join(probe["gemm_stragglers"])))
    slowest = min(probe["gemm_tflops"])
    floor = (expect.get("gemm_tflops") or {}).get("min")
    state = "PASS" if floor is None or slowest >= floor else "FAIL"
    rows.append(("gemm_tflops", state, f"slowest rank {slowest:.0f}" + (f", expected >= {floor:g}" if floor else "")))
    if probe["world_size"] > 1 and probe["allreduce"]:
        largest = probe["allreduce"][-1]
        key = "allreduce_busbw_gbs" if probe["nodes"] > 1 else "intra_node_busbw_gbs"
        floor = (expect.get(key) or {}).get("min")
        state = "PASS" if floor is None or largest["busbw_gbs"] >= floor else "FAIL"
        rows.append(("allreduce_busbw", state, f"{largest['busbw_gbs']:.1f} GB/s at {largest['bytes'] / 2**20:.0f} MiB"
                     + (f", expected >= {floor:g} ({key})" if floor else "")))
    fabric = ((manifest.get("topology") or {}).get("network") or {}).get("fabric")
    if fabric in RDMA_FABRICS and probe["nodes"] > 1:  # RoCE runs NCCL's IB transport too
        nets = nccl_networks(log_text)
        if "IB" not in nets:
            rows.append(("transport", "FAIL", f"NCCL used {', '.join(sorted(nets)) or 'no network it reported'} "
                         f"on an {RDMA_FABRICS[fabric]} topology: a silent fallback"))
        else:
            rows.append(("transport", "PASS", "NCCL over IB"))
    return rows


def failure_cause(log_text: str) -> str | None:
    """Why a stage's torchrun failed, in one line, from its log; None when the log does not say."""
    if "RendezvousTimeoutError" in log_text:
        timeout = os.environ.get("SMOKE_RDZV_TIMEOUT", "300")
        return (f"the rendezvous did not form: not every node's torchrun joined within SMOKE_RDZV_TIMEOUT "
                f"({timeout} s); look for a node that hung or could not reach MASTER_ADDR:MASTER_PORT")
    match = _ROOT_CAUSE.search(log_text)
    if match:
        host, rank, code, signal = match.groups()
        how = f"was killed by {signal}" if signal and int(code) < 0 else f"exited with code {code}"
        return f"rank {rank} on {host} {how} first; the other ranks were stopped after it"
    return None


def load_manifest(preset_dir: str) -> dict | None:
    """The manifest, read as the validator reads it, or None when it cannot be read (said in the verdict)."""
    try:
        from validator.catalog import CatalogError, load_manifest as read_manifest
        return read_manifest(preset_dir)
    except (CatalogError, ImportError):  # no PyYAML in this Python, or a manifest that does not load
        return None


def collect(run_dir: str, mode: str, manifest: dict | None) -> list[tuple[str, str, str]]:
    rows = []
    if manifest is None:
        rows.append(("expectations", "WARN", "preset.yaml unreadable here (PyYAML missing?): floors not checked"))
        manifest = {}
    expectations = manifest.get("expectations") or {}
    stages = {}
    stages_file = os.path.join(run_dir, "stages.txt")
    if os.path.exists(stages_file):
        with open(stages_file, encoding="utf-8") as handle:
            for line in handle:
                name, _, code = line.strip().partition(" ")
                stages[name] = code
                detail = f"exit code {code}"
                stage_log = os.path.join(run_dir, f"{name}.log")
                if code != "0" and os.path.exists(stage_log):
                    with open(stage_log, encoding="utf-8", errors="replace") as log_handle:
                        cause = failure_cause(log_handle.read())
                    if cause:
                        detail += f": {cause}"
                rows.append((f"stage {name}", "PASS" if code == "0" else "FAIL", detail))
    signalled = os.path.join(run_dir, "signalled")
    if os.path.exists(signalled):
        with open(signalled, encoding="utf-8") as handle:
            signal_name, _, stage = handle.read().strip().partition(" ")
        rows.append(("job", "FAIL", f"Slurm ended the job with {signal_name} during stage {stage} "
                                    "(a time limit, scancel or a failed node): it did not run to the end"))
    for path in sorted(glob.glob(os.path.join(run_dir, "preflight", "*.json"))):
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
        for name, check in report["checks"].items():
            if check["state"] == "FAIL":
                rows.append((f"preflight {report['host']} {name}", "FAIL", check["detail"]))
    if stages.get("probe") == "0":
        probe_path = os.path.join(run_dir, "probe.json")
        if not os.path.exists(probe_path):
            rows.append(("probe", "FAIL", "the probe stage passed but wrote no probe.json"))
        else:
            with open(probe_path, encoding="utf-8") as handle:
                probe = json.load(handle)
            log_path = os.path.join(run_dir, "probe.log")
            log_text = open(log_path, encoding="utf-8", errors="replace").read() if os.path.exists(log_path) else ""
            rows += judge_probe(probe, manifest, mode, log_text)
    if mode == "functional":
        ranks = []
        for path in sorted(glob.glob(os.path.join(run_dir, "functional", "rank-*.json"))):
            with open(path, encoding="utf-8") as handle:
                ranks.append(json.load(handle))
        if not ranks:
            rows.append(("ranks", "FAIL", "no rank wrote a report: training did not run"))
        else:
            world = ranks[0]["world_size"]
            state = "PASS" if len(ranks) == world else "FAIL"
            hosts = sorted({r["host"] for r in ranks})
            rows.append(("ranks", state, f"{len(ranks)} of {world} ranks reported from {len(hosts)} node(s)"))
            rows += judge_training({"losses": ranks[0]["losses"], "tflops": []}, None)
    else:
        log_path = os.path.join(run_dir, "megatron.log")
        if not os.path.exists(log_path):
            rows.append(("training", "FAIL", "no megatron.log: training did not run"))
        else:
            with open(log_path, encoding="utf-8", errors="replace") as handle:
                log = parse_training_log(handle.read())
            minimum = (expectations.get("megatron_tflops_per_gpu") or {}).get("min")
            rows += judge_training(log, minimum)
    return rows


def overall(rows: list[tuple[str, str, str]]) -> str:
    states = {state for _, state, _ in rows}
    if not rows:
        return "FAIL"
    if "FAIL" in states:
        return "FAIL"
    return "WARN" if "WARN" in states else "PASS"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--mode", choices=("full", "functional"), default="full")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.run_dir):
        print(f"verdict: no run folder {args.run_dir}", file=sys.stderr)
        return 2
    rows = collect(args.run_dir, args.mode, load_manifest(args.preset))
    if not rows:
        rows = [("job", "FAIL", "no stage reported anything")]
    result = overall(rows)
    payload = {"verdict": result, "mode": args.mode, "preset": os.path.basename(os.path.normpath(args.preset)),
               "job_id": os.environ.get("SLURM_JOB_ID"),
               "checks": [{"check": c, "state": s, "detail": d} for c, s, d in rows]}
    path = os.path.join(args.run_dir, "verdict.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=1)
    os.replace(path + ".tmp", path)
    width = max(len(c) for c, _, _ in rows)
    for check, state, detail in rows:
        print(f"verdict: {check:<{width}}  {state:4}  {detail}")
    print(f"verdict: {result} ({path})")
    return 1 if result == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
