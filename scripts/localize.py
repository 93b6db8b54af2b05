"""Localization: which nodes of this allocation to exclude, found inside the job with srun steps.

Runs in the batch shell after the probe stage (job-lib.sh's smoke_localize) and is bounded:
  1. per-node checks, one srun step over every node, each node on its own (a standalone torchrun):
     GEMM on each GPU, an all-reduce among the node's own GPUs, the GPU count it sees. A node
     with no result within SMOKE_LOCALIZE_STEP_TIMEOUT is `unresponsive`.
  2. inter-node group tests over the nodes that passed: disjoint groups as concurrent srun steps
     (pairs up to 2 x SMOKE_LOCALIZE_MAX_STEPS nodes, larger groups above), failing groups split in
     halves, the last suspects confirmed in a pair with a node already known good. Bounded by
     SMOKE_LOCALIZE_MAX_ROUNDS; never all pairs.
Every figure is judged against the median of its peers in the same run (median and MAD, with a
noise floor measured from repeats) and, in full mode, against the preset's absolute expectations.

    localize.py drive --out DIR --preset DIR --mode full|functional --probe-status N   (batch shell)
    localize.py worker --kind node|group --out FILE                                    (torchrun)
    localize.py simulate                                                               (docs table)

The driver and the simulation use only the standard library; the worker needs torch.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time

# Relative distance below the peers' median that names a node, whatever the measured noise. On
# GPUs 5 %: Microsoft SuperBench flags nodes > 5 % below baseline, and Together's bad B200 nodes
# were 6-7 % below their peers. On CPU (functional mode) the processes of every "node" share a
# few cores with each other and the rest of the machine: only gross faults mean anything there.
FLOOR = {"full": 0.05, "functional": 0.6}
# All-reduce figures, between nodes and among one node's ranks: gloo over veth or loopback on two
# shared cores varies up to 4x between healthy pairs, and 2.8x between healthy nodes' intra-node
# figures, of one run (measured on the local cluster): functional mode names only a 10x gap.
NET_FLOOR = {"full": 0.05, "functional": 0.9}
# The probe's largest all-reduce on GPUs (probe.py's sizes end there), the size the presets'
# intra_node_busbw_gbs floors are figures for: the intra-node check runs at the probe's own largest
# size, at this one when the probe wrote nothing.
PROBE_LARGEST_GPU_BYTES = 4 * 2**30
K_NOISE = 3.0  # a figure must sit further than 3 repeat spreads (and 3 MADs of its peers) below the median: margin()
LAYERS = ("gpu", "node-link", "network", "config", "unresponsive")


# ---------------------------------------------------------------------------------------------
# Statistics


def best(values: list[float]) -> float:
    """A measurement's figure: the best of its repeats. Contention (another process, another job's
    start-up on a shared CPU) only ever slows a repeat down; a slow GPU, NIC or throttled CPU slows
    every repeat."""
    return max(values)


def robust_noise(repeats: list[list[float]]) -> float:
    """Relative noise of a best-of-repeats figure: how far the second-best repeat sits below the
    best, the median over items (0 when nothing was repeated)."""
    spreads = []
    for values in repeats:
        values = sorted((v for v in values if v > 0), reverse=True)
        if len(values) >= 2:
            spreads.append((values[0] - values[1]) / values[0])
    return statistics.median(spreads) if spreads else 0.0


def margin(noise: float) -> float:
    """The repeat-noise part of a threshold, as a fraction of the reference: K_NOISE repeat spreads
    compounded as ratios, 1 - (1 - noise)^K. For small noise the same as K x noise (0.15 % -> 0.45 %),
    but it never reaches the whole reference. K x noise did once a healthy group's best two repeats
    differed by a third (gloo pairs on two shared cores differ up to 25 %): no figure, however low,
    could stand out then, and a node behind a 20 Mbit/s NIC, 140x slower than its peers, went unnamed."""
    return 1 - (1 - min(max(noise, 0.0), 1.0)) ** K_NOISE


def spread(values: list[float], noise: float, floor: float) -> float:
    """The distance below a median that stands out, as a fraction of it: the floor, K repeat spreads
    (margin), or K MADs of the log figures, whichever is largest.

    The peers' spread is a MAD of log figures (speeds are compared as ratios): for a few percent the
    same as MAD / median, but it can never reach the median itself. A plain MAD could: three healthy
    CPU "nodes" at 0.025, 0.035 and 0.057 TFLOP/s gave 3 x 1.4826 x MAD = 0.045 > the median 0.035,
    and a node 7x slower than them went unnamed (fault matrix, 2026-12-03)."""
    logs = [math.log(max(v, 1e-12)) for v in values]
    log_med = statistics.median(logs)
    log_mad = 1.4826 * statistics.median(abs(v - log_med) for v in logs)
    return max(floor, margin(noise), 1 - math.exp(-K_NOISE * log_mad))


def threshold(values: list[float], noise: float, floor: float) -> tuple[float, float]:
    """(median, limit): a value lower than median - limit stands out from its peers."""
    med = statistics.median(values)
    return med, med * spread(values, noise, floor)


def low_outliers(figures: dict[str, float], noise: float, floor: float) -> dict[str, float]:
    """Nodes whose figure sits below their peers' median by more than the threshold -> that median.
    Each node against the others only (leave one out): with the node itself in the median and MAD,
    one very slow node among 4 inflated the MAD term past the median itself, and a node at 13 % of
    its peers' speed was named by nobody (local cluster, CPU-throttled node). Fewer than 3 figures
    cannot outvote one another: nothing is named then."""
    if len(figures) < 3:
        return {}
    named = {}
    for node, value in figures.items():
        med, limit = threshold([v for other, v in figures.items() if other != node], noise, floor)
        if med - value > limit:
            named[node] = med
    return named


# The MAD of the upper half of normally spread figures is 0.40 sigma (a half-normal's), not the
# 0.674 sigma of the whole: 1 / 0.3994 instead of 1.4826 turns it into the spread of all of them.
HALF_MAD_TO_SIGMA = 2.504


def reference(figures: list[float], noise: float, floor: float) -> tuple[float, float]:
    """(reference, limit) for group tests: the median of the upper half of the figures (their best
    when fewer than 3), so that up to half the groups can be slow without dragging the reference
    down. The limit's spread is the upper half's MAD scaled to the spread of all healthy groups
    (HALF_MAD_TO_SIGMA); scaled like a whole sample's MAD (1.4826, until 2026-12-03) it was 40 %
    too narrow, and healthy groups 3 % apart were named in up to 59 % of simulated runs."""
    upper = sorted(figures)[len(figures) // 2:]
    if len(upper) < 3:
        top = max(figures)
        return top, max(floor, margin(noise)) * top
    ref = statistics.median(upper)
    logs = [math.log(max(v, 1e-12)) for v in upper]
    log_med = statistics.median(logs)
    sigma = HALF_MAD_TO_SIGMA * statistics.median(abs(v - log_med) for v in logs)
    # second pass: the spread of every figure that the first estimate does not already call slow,
    # the lower healthy half included (twice the sample: half the error of the estimate)
    kept = [math.log(v) for v in figures if v > 0 and math.log(v) > math.log(ref) - K_NOISE * sigma]
    if len(kept) > len(upper):
        kept_med = statistics.median(kept)
        sigma = max(sigma, 1.4826 * statistics.median(abs(v - kept_med) for v in kept))
    return ref, ref * max(floor, margin(noise), 1 - math.exp(-K_NOISE * sigma))


# ---------------------------------------------------------------------------------------------
# Slurm hostlists


def node_name() -> str:
    """This node as Slurm names it (SLURMD_NODENAME, set in every task's environment), which is what
    scontrol, --exclude and drain take. The host name can differ (an FQDN, a NodeHostname): reports
    filed under it would make every node look unresponsive."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def hostlist(nodes) -> str:
    """Slurm's compressed form: ['node3', 'node17', 'node4'] -> 'node[3-4,17]'; '' for none."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    plain = []
    for node in sorted(set(nodes)):
        match = re.fullmatch(r"(.*?)(\d+)([^\d]*)", node)
        if not match or match.group(3):
            plain.append(node)
            continue
        groups.setdefault((match.group(1), match.group(3)), []).append((int(match.group(2)), match.group(2)))
    parts = list(plain)
    for (prefix, suffix), numbers in sorted(groups.items()):
        numbers.sort()
        ranges, start = [], 0
        for i in range(1, len(numbers) + 1):
            padded = i < len(numbers) and "0" in (numbers[i][1][0], numbers[i - 1][1][0])
            if i == len(numbers) or numbers[i][0] != numbers[i - 1][0] + 1 or (
                    padded and len(numbers[i][1]) != len(numbers[i - 1][1])):
                first, last = numbers[start][1], numbers[i - 1][1]
                ranges.append(first if first == last else f"{first}-{last}")
                start = i
        parts.append(f"{prefix}{ranges[0]}{suffix}" if len(numbers) == 1 else f"{prefix}[{','.join(ranges)}]{suffix}")
    return ",".join(parts)


# ---------------------------------------------------------------------------------------------
# Group testing: which subsets to run as srun steps, round by round


class GroupSearch:
    """Adaptive group testing over nodes that passed their per-node checks.

    Round 1 runs disjoint groups of `group` nodes (default: pairs, larger groups once there would
    be more than max_steps of them, so one round is at most max_steps concurrent steps). A group
    is slow when its figure is below the reference (the median of the upper half of the round-1
    groups; their best when fewer than 3) by more than the threshold. A slow group of 4 or more is
    split in halves, tested next round; a slow group of 2 or 3 has each member tested in a pair with
    a node already known good, which confirms or clears it. Each node is in at most one step per
    round; a round runs at most max_steps steps (the rest wait for the next round).

    Bus bandwidth depends on how many nodes share the all-reduce: a pair is faster than a group of
    64. Halves and confirming pairs of another size than round 1's groups are therefore judged
    against control steps of their own size, run in the same round on nodes already known good
    (up to CONTROLS of them; their median, or best when fewer than 3), with round 1's relative limit.
    Without them a node 6 % slow, halved out of a group of 64 into groups of 32 and then paired,
    was cleared against the 64-node reference. Up to 128 nodes (pairs in round 1) nothing changes."""

    CONTROLS = 3

    def __init__(self, nodes: list[str], noise: float, floor: float, max_steps: int = 64, group: int | None = None):
        self.nodes = list(nodes)
        self.noise, self.floor, self.max_steps = noise, floor, max(2, max_steps)  # 1 step: no peer group
        size = group or max(2, math.ceil(len(nodes) / self.max_steps))
        self.queue: list[tuple[str, tuple[str, ...]]] = []  # (kind, members) still to test
        if len(nodes) == 3:  # no two disjoint groups: the three pairs, one after another
            self.queue = [("group", pair) for pair in ((nodes[0], nodes[1]), (nodes[1], nodes[2]), (nodes[0], nodes[2]))]
        elif len(nodes) >= 4:
            count = len(nodes) // size
            for i in range(count):  # sizes differ by at most one: no lone node
                self.queue.append(("group", tuple(self.nodes[i::count])))
        self.first_sizes = {len(members) for _, members in self.queue}  # judged by the round-1 reference
        self.initial: list = []  # round-1 results, judged together once every first group ran
        self.good: set[str] = set()
        self.suspects: dict[str, dict] = {}
        self.reference: float | None = None
        self.limit = 0.0
        self.by_size: dict[int, float] = {}  # reference measured by control steps, per step size
        self.rounds = self.steps = 0
        self.history: list[dict] = []
        self.job_level: list[str] = []  # what concerns the whole search, not one node

    def next_round(self) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """(kind, nodes under test, nodes the step runs on) for the next round; [] when done."""
        tests, busy, later = [], set(), []
        spare = [n for n in self.nodes if n in self.good]
        for kind, members in self.queue:
            if len(tests) >= self.max_steps or busy & set(members):
                later.append((kind, members))
                continue
            if kind == "confirm":
                partner = next((n for n in spare if n not in busy), None)
                if partner is None:
                    if not self.good:  # nobody is known good: nothing to compare against
                        self._name(members[0], None, "in a slow group; no node known good to confirm against")
                    else:
                        later.append((kind, members))
                    continue
                tests.append((kind, members, members + (partner,)))
                busy.update(members + (partner,))
            else:
                tests.append((kind, members, members))
                busy.update(members)
        self.queue = later
        if self.reference is not None:  # controls for sizes round 1 did not measure
            for size in sorted({len(ran_on) for _, _, ran_on in tests} - self.first_sizes - set(self.by_size)):
                for _ in range(self.CONTROLS):
                    free = [n for n in spare if n not in busy]
                    if len(tests) >= self.max_steps or len(free) < size:
                        break
                    tests.append(("control", (), tuple(free[:size])))
                    busy.update(free[:size])
        return tests

    def judge_by(self, size: int) -> tuple[float, float]:
        """(reference, limit) for a step of `size` nodes."""
        if size in self.by_size:
            ref = self.by_size[size]
            return ref, ref * self.limit / self.reference
        return self.reference, self.limit

    def record(self, results: list[tuple[str, tuple[str, ...], tuple[str, ...], float | None]]) -> None:
        """Feed one round's results: (kind, tested, ran_on, figure or None when the step failed)."""
        self.rounds += 1
        self.steps += len(results)
        if self.reference is None:
            self.initial += results
            if any(kind == "group" for kind, _ in self.queue):
                return
            results, self.initial = self.initial, []
            figures = [f for _, _, _, f in results if f]
            if not figures:  # no peer to compare with: a step-wide cause (a port, the container), not nodes
                self.job_level.append(f"every one of the {len(results)} first group tests failed: nothing to "
                                      "compare against (see localize.log)")
                self.queue = []
                return
            self.reference, self.limit = reference(figures, self.noise, self.floor)
        controls: dict[int, list[float]] = {}
        for kind, _tested, ran_on, figure in results:
            if kind == "control":
                self.history.append({"round": self.rounds, "kind": kind, "nodes": list(ran_on), "figure": figure,
                                     "slow": None})
                if figure:
                    controls.setdefault(len(ran_on), []).append(figure)
        for size, figures in controls.items():  # smaller groups are not slower: a control only raises the bar
            measured = statistics.median(figures) if len(figures) >= 3 else max(figures)
            self.by_size[size] = max(measured, self.reference)
        slow = []
        for kind, tested, ran_on, figure in results:
            if kind == "control":
                continue
            ref, limit = self.judge_by(len(ran_on))
            bad = figure is None or ref - figure > limit
            self.history.append({"round": self.rounds, "kind": kind, "nodes": list(ran_on),
                                 "figure": figure, "slow": bad, **({"reference": ref} if ref != self.reference else {})})
            if bad:
                slow.append((kind, tested, ran_on, figure))
            else:
                self.good.update(ran_on)
                for node in ran_on:
                    self.suspects.pop(node, None)
        for kind, tested, ran_on, figure in slow:
            if kind == "confirm":
                self._name(tested[0], figure, f"slow in a pair with {ran_on[-1]}, a node known good",
                           self.judge_by(len(ran_on))[0])
            elif len(tested) >= 4:
                half = len(tested) // 2
                self.queue += [("half", tested[:half]), ("half", tested[half:])]
            else:
                queued = {m for _, members in self.queue for m in members}
                self.queue += [("confirm", (node,)) for node in tested if node not in self.good and node not in queued]

    def _name(self, node, figure, reason, reference: float | None = None):
        self.suspects[node] = {"node": node, "figure": figure, "peers_median": reference or self.reference,
                               "reason": reason}

    def run(self, measure, max_rounds: int = 12) -> dict[str, dict]:
        """Drive the search with measure(list of (kind, tested, ran_on)) -> figures; returns suspects."""
        while self.queue and self.rounds < max_rounds:
            tests = self.next_round()
            if not tests:
                continue
            figures = measure(tests)
            self.record([t + (f,) for t, f in zip(tests, figures)])
        for kind, members in self.queue:  # out of rounds: name what is still open, and say so
            for node in members:
                if node not in self.good:
                    self._name(node, None, f"in a slow group, not narrowed within {max_rounds} rounds")
        self.queue = []
        return self.suspects


# ---------------------------------------------------------------------------------------------
# Judging the per-node checks


def judge_nodes(nodes: list[str], reports: dict[str, dict], mode: str, expect: dict) -> tuple[dict, float, list[str]]:
    """Suspects from the per-node step: unresponsive, config (GPU count), gpu (GEMM), node-link
    (intra-node all-reduce). Returns (suspects by node, the GEMM repeat noise, job-wide findings).

    A cause that more than half the nodes share (no result, a GPU count, a figure under the preset's
    floor) is reported job-wide, not as suspects: a step that could not start, an expectation the
    hardware never meets or an image without GPUs would otherwise put most of the allocation in
    exclude.txt and drain.sh."""
    floor = FLOOR[mode]
    suspects: dict[str, dict] = {}
    job_level: list[str] = []

    def name(found: dict[str, tuple], layer, total: int, shared: str):
        """found: node -> (figure, median, reason)."""
        if len(found) * 2 > total:
            job_level.append(f"{len(found)} of {total} nodes: {shared}; a job-wide cause, not nodes to exclude")
            return
        for node, (figure, median, reason) in found.items():
            suspects.setdefault(node, {"node": node, "layer": layer, "figure": figure, "peers_median": median,
                                       "reason": reason})

    alive = {n: r for n, r in reports.items() if n in nodes and _report_ok(r)}
    name({n: (None, None, "no result from its per-node check within the step's time limit (a hung or missing rank)"
              if n not in reports else "its per-node check wrote an unusable result")
          for n in nodes if n not in alive}, "unresponsive", len(nodes),
         "no usable result from the per-node check (see localize.log)")
    name({n: (r["gpus_seen"], r["gpus_allocated"], f"sees {r['gpus_seen']} GPU(s), Slurm allocated {r['gpus_allocated']}")
          for n, r in alive.items() if r["gpus_seen"] != r["gpus_allocated"]}, "config", len(alive),
         "the GPUs seen differ from those Slurm allocated")
    noise = robust_noise([rep for r in alive.values() for rep in r["gemm_repeats"]])
    for key, layer, unit, floor_key in (("gemm_tflops", "gpu", "TFLOP/s (slowest GPU)", "gemm_tflops"),
                                        ("intra_busbw_gbs", "node-link", "GB/s intra-node all-reduce",
                                         "intra_node_busbw_gbs")):
        figures = {n: r[key] for n, r in alive.items() if r.get(key)}
        key_noise = noise if key == "gemm_tflops" else robust_noise([r.get("intra_repeats") or [] for r in alive.values()])
        key_floor = floor if key == "gemm_tflops" else NET_FLOOR[mode]
        name({node: (figures[node], median, f"{figures[node]:.3g} {unit}, "
                     f"{100 * (1 - figures[node] / median):.0f} % below the peers' median {median:.3g}")
              for node, median in low_outliers(figures, key_noise, key_floor).items()}, layer, len(figures),
             f"{unit} below the peers' median")
        minimum = ((expect.get(floor_key) or {}).get("min")) if mode == "full" else None
        if minimum is not None:
            under = {node: value for node, value in figures.items() if value < minimum}
            name({node: (value, statistics.median(v for n, v in figures.items() if n != node) if len(figures) > 1 else None,
                         f"{value:.3g} {unit}, expected >= {minimum:g}") for node, value in under.items()},
                 layer, len(figures), f"{unit} under the preset's {floor_key} floor {minimum:g}")
    return suspects, noise, job_level


def _report_ok(report) -> bool:
    """A per-node report has the fields the judgement reads, as numbers."""
    numbers = ("gpus_seen", "gpus_allocated", "gemm_tflops")
    return (isinstance(report, dict) and all(isinstance(report.get(k), (int, float)) for k in numbers)
            and isinstance(report.get("gemm_repeats"), list)
            and all(isinstance(r, list) and all(isinstance(v, (int, float)) for v in r) for r in report["gemm_repeats"])
            and (report.get("intra_busbw_gbs") is None or isinstance(report["intra_busbw_gbs"], (int, float))))


# ---------------------------------------------------------------------------------------------
# The driver: srun steps from the batch shell


def step_env(port: int, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.update({"MASTER_PORT": str(port)}, **(extra or {}))
    return env


def srun_base(name: str, nodes: list[str], independent: bool) -> list[str]:
    """srun for one step. Independent tasks (the per-node step) neither end each other (no
    --kill-on-bad-exit) nor are ended when the first one finishes (--wait=0): a slow node must
    still report; the step's time limit bounds it."""
    together = ["--kill-on-bad-exit=1", f"--wait={os.environ.get('SMOKE_STEP_GRACE', '30')}"]
    return ["srun", f"--job-name={name}", f"--nodes={len(nodes)}", f"--ntasks={len(nodes)}",
            f"--nodelist={','.join(nodes)}", "--ntasks-per-node=1"] + (["--kill-on-bad-exit=0", "--wait=0"]
                                                                        if independent else together) + [
            # as job-lib's steps: the job's --cpus-per-task if given, else what the smallest node has
            f"--cpus-per-task={os.environ.get('SLURM_CPUS_PER_TASK') or os.environ.get('SMOKE_CPUS_PER_NODE', '1')}"]


def launch(name: str, nodes: list[str], program: list[str], env: dict, log, independent=False) -> subprocess.Popen:
    """One srun step running torchrun-node PROGRAM on `nodes`; extra srun arguments (CPU binding,
    container) come from SMOKE_STEP_ARGS and the command's prefix (`env HOME=...` in a container)
    from SMOKE_STEP_PREFIX, one per line, as job-lib.sh hands them over."""
    extra = [a for a in os.environ.get("SMOKE_STEP_ARGS", "").split("\n") if a]
    prefix = [a for a in os.environ.get("SMOKE_STEP_PREFIX", "").split("\n") if a]
    root = os.environ["SMOKE_ROOT"]
    cmd = srun_base(name, nodes, independent) + extra + prefix + [f"{root}/scripts/torchrun-node"] + program
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    LAUNCHED.append(proc)
    return proc


LAUNCHED: list[subprocess.Popen] = []  # every step started, ended by drive() when Slurm stops the job


def wait_all(procs: list[tuple[str, subprocess.Popen]], timeout: float) -> None:
    """Wait for every step; the steps past the time limit are killed with scancel (their ranks may
    be stopped or hung, which srun alone would wait on): one squeue for all of them, then 15 s of
    grace shared by all, not 15 s each."""
    deadline = time.monotonic() + timeout
    overdue = []
    for name, proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            overdue.append((name, proc))
    if not overdue:
        return
    names = {name for name, _ in overdue}
    job = os.environ.get("SLURM_JOB_ID", "")
    steps = subprocess.run(["squeue", "-h", "-s", "-j", job, "-o", "%i %j"], capture_output=True,
                           text=True, check=False).stdout.splitlines()
    for line in steps:
        fields = line.split()
        if len(fields) == 2 and fields[1] in names:
            subprocess.run(["scancel", "--signal=KILL", fields[0]], capture_output=True, check=False)
    grace = time.monotonic() + 15
    for _, proc in overdue:
        try:
            proc.wait(timeout=max(0.1, grace - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def job_nodes() -> list[str]:
    out = subprocess.run(["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def load_json(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def should_run(when: str, probe_status: int, probe: dict | None, mode: str, expect: dict) -> tuple[bool, str]:
    """The SMOKE_LOCALIZE knob: never, always, or auto (the default): when the probe failed or
    hung, wrote nothing, found a node that stands out from its peers, or (full mode) measured
    the job below the preset's expectation."""
    if when == "never":
        return False, "SMOKE_LOCALIZE=never"
    if when == "always":
        return True, "SMOKE_LOCALIZE=always"
    if probe_status != 0:
        return True, f"the probe stage failed (exit code {probe_status})"
    if probe is None:
        return True, "the probe wrote no result"
    flagged = (probe.get("per_node") or {}).get("flagged") or {}
    if flagged:
        return True, "the probe's per-node figures disagree: " + "; ".join(f"{n}: {w}" for n, w in sorted(flagged.items()))
    if mode == "full" and probe.get("allreduce") and probe.get("nodes", 1) > 1:
        floor = (expect.get("allreduce_busbw_gbs") or {}).get("min")
        if floor and probe["allreduce"][-1]["busbw_gbs"] < floor:
            return True, f"the job's all-reduce is below the preset's expectation ({floor:g} GB/s)"
    return False, "the probe found nothing to narrow down (SMOKE_LOCALIZE=auto)"


def load_expectations(preset_dir: str) -> dict:
    try:
        import yaml
        with open(os.path.join(preset_dir, "preset.yaml"), encoding="utf-8") as handle:
            return (yaml.safe_load(handle) or {}).get("expectations") or {}
    except Exception:  # noqa: BLE001 - no PyYAML on the host, or no manifest: absolute floors unchecked
        return {}


class Stopped(Exception):
    """Slurm ended the job (time limit, scancel) while localization ran."""


def knobs(env) -> dict:
    """The SMOKE_LOCALIZE* settings, checked: a value that is not one of them is an error the verdict
    reports, never a silent default (SMOKE_LOCALIZE=off must not mean auto)."""
    when = env.get("SMOKE_LOCALIZE", "auto")
    if when not in ("auto", "always", "never"):
        raise ValueError(f"SMOKE_LOCALIZE={when[:40]!r} is not one of auto, always, never")

    def number(name, default, kind, low, high):
        text = env.get(name, default)
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise ValueError(f"{name}={text[:40]!r} is not a number from {low} to {high}")
        return value
    return {"when": when,
            "step_timeout": number("SMOKE_LOCALIZE_STEP_TIMEOUT", "180", float, 1, 86400),
            # 2 at least: round 1 needs two groups, each the other's peer
            "max_steps": number("SMOKE_LOCALIZE_MAX_STEPS", "64", int, 2, 4096),
            "max_rounds": number("SMOKE_LOCALIZE_MAX_ROUNDS", "12", int, 1, 64),
            "base_port": number("MASTER_PORT", "20000", int, 1024, 65535)}


def drive(args) -> int:
    """Write localize.json whatever happens: a bad setting, a failing scontrol or Slurm's SIGTERM
    leave {"ran": true, "error": ...}, which the verdict reports; an absent file would read as
    "nobody suspect". On SIGTERM the steps still running are ended first."""
    started = time.monotonic()
    result_path = os.path.join(args.out, "localize.json")

    def stopped(signum, _frame):
        raise Stopped(f"stopped by signal {signum} (the job's time limit or scancel)")
    previous = signal.signal(signal.SIGTERM, stopped)
    try:
        return _drive(args, started, result_path)
    except (Exception, Stopped) as exc:  # noqa: BLE001 - reported in localize.json, then by the verdict
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the report short
        for proc in LAUNCHED:
            if proc.poll() is None:
                proc.terminate()  # srun passes it on to the step's tasks
        why = str(exc) if isinstance(exc, (Stopped, ValueError)) else f"{type(exc).__name__}: {exc}"
        write_json(result_path, {"ran": True, "error": why[:300], "suspects": [], "job_level": [],
                                 "seconds": round(time.monotonic() - started, 1)})
        print(f"localize: did not finish: {why[:300]}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


def _drive(args, started: float, result_path: str) -> int:
    out = args.out
    if os.environ.get("SMOKE_LOCALIZE") == "never":  # nothing else is read then
        write_json(result_path, {"ran": False, "why": "SMOKE_LOCALIZE=never", "suspects": [], "job_level": [],
                                 "rounds": 0, "steps": 0, "seconds": round(time.monotonic() - started, 3)})
        print("localize: not run: SMOKE_LOCALIZE=never")
        return 0
    settings = knobs(os.environ)
    expect = load_expectations(args.preset)
    probe = load_json(os.path.join(out, "probe.json"))
    run, why = should_run(settings["when"], args.probe_status, probe, args.mode, expect)
    result = {"ran": run, "why": why, "suspects": [], "job_level": [], "rounds": 0, "steps": 0,
              "seconds": round(time.monotonic() - started, 3)}
    if not run:
        write_json(result_path, result)
        print(f"localize: not run: {why}")
        return 0
    print(f"localize: running because {why}", flush=True)
    nodes = job_nodes()
    step_timeout, base_port = settings["step_timeout"], settings["base_port"]
    me = [os.path.join(os.environ["SMOKE_ROOT"], "scripts", "localize.py")]
    log = open(os.path.join(out, "localize.log"), "a", encoding="utf-8")  # noqa: SIM115 - kept for every step
    per_node = os.path.join(out, "localize", "node")
    os.makedirs(per_node, exist_ok=True)
    # the intra-node all-reduce at the size the probe's verdict and the preset's floor use
    size = (((probe or {}).get("allreduce") or [{}])[-1].get("bytes")) or PROBE_LARGEST_GPU_BYTES
    # 1. per-node checks: one step, every node on its own (a standalone rendezvous on each node)
    env = step_env(base_port, {"SMOKE_NNODES": "1", "SMOKE_RDZV_ENDPOINT": "localhost:0",
                               "SMOKE_LOCALIZE_INTRA_BYTES": str(size)})
    proc = launch("localize-node", nodes, me + ["worker", "--kind", "node", "--out", per_node], env, log, independent=True)
    wait_all([("localize-node", proc)], step_timeout)
    round_seconds = [round(time.monotonic() - started, 1)]
    reports = {}
    for node in nodes:
        report = load_json(os.path.join(per_node, f"{node}.json"))
        if isinstance(report, dict):
            reports[node] = report
    suspects, noise, job_level = judge_nodes(nodes, reports, args.mode, expect)
    steps, rounds = 1, 1
    # 2. group tests among the nodes that passed
    # only nodes with a usable report: one ruled out job-wide (no result on most nodes) has none either
    healthy = [n for n in nodes if n not in suspects and _report_ok(reports.get(n))]
    floor = NET_FLOOR[args.mode]
    search = GroupSearch(healthy, noise, floor, max_steps=settings["max_steps"])
    counter = [0]

    def measure(tests):
        begin = time.monotonic()
        procs, paths = [], []
        for kind, _tested, ran_on in tests:
            counter[0] += 1
            name = f"localize-g{counter[0]}"
            path = os.path.join(out, "localize", f"group-{counter[0]}.json")
            port = 20000 + (base_port - 20000 + 1 + counter[0]) % 12000
            env = step_env(port, {"MASTER_ADDR": ran_on[0]})
            procs.append((name, launch(name, list(ran_on), me + ["worker", "--kind", "group", "--out", path], env, log)))
            paths.append(path)
        wait_all(procs, step_timeout)
        figures = []
        for path in paths:
            report = load_json(path)
            figure = report.get("busbw_gbs") if isinstance(report, dict) else None
            figures.append(figure if isinstance(figure, (int, float)) and figure > 0 else None)
            if figures[-1]:
                search.noise = max(search.noise, robust_noise([report.get("repeats") or []]))
        round_seconds.append(round(time.monotonic() - begin, 1))
        return figures

    for node, found in search.run(measure, max_rounds=settings["max_rounds"]).items():
        unit = "GB/s all-reduce"
        figure = found["figure"]
        text = f"{figure:.3g} {unit}, peers {found['peers_median']:.3g}: " if figure and found["peers_median"] else ""
        suspects[node] = {"node": node, "layer": "network", "figure": figure, "peers_median": found["peers_median"],
                          "reason": text + found["reason"]}
    job_level += search.job_level
    steps += search.steps
    rounds += search.rounds
    log.close()
    result.update({"suspects": [suspects[n] for n in nodes if n in suspects], "job_level": job_level,
                   "rounds": rounds, "steps": steps,
                   "seconds": round(time.monotonic() - started, 1), "noise": round(noise, 4), "group_noise": round(search.noise, 4),
                   "round_seconds": round_seconds, "floor": floor, "per_node": reports, "groups": search.history})
    write_json(result_path, result)
    names = ", ".join(f"{s['node']} ({s['layer']})" for s in result["suspects"]) or "nobody"
    print(f"localize: {len(nodes)} nodes, {rounds} round(s), {steps} srun step(s), "
          f"{result['seconds']} s: suspects {names}" + "".join(f"; job-wide: {j}" for j in job_level))
    return 0


def write_json(path, payload):
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=1)
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------------------------------------
# The worker: one torchrun program, measured per node or per group


def gpus_seen(cuda: bool) -> int:
    """GPUs this node's processes can see. Functional mode has none: when SMOKE_FAKE_GPU_DIR is set
    (the local test cluster; a test double), each GPU Slurm allocated (CUDA_VISIBLE_DEVICES) counts
    when its fake GRES device file <dir>/<host>/gpu<i> exists."""
    if cuda:
        import torch
        return torch.cuda.device_count()
    allocated = int(os.environ.get("SLURM_GPUS_ON_NODE", "0") or 0)
    fake = os.environ.get("SMOKE_FAKE_GPU_DIR")
    if not fake:
        return allocated
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") or ",".join(str(i) for i in range(allocated))
    folder = os.path.join(fake, node_name())
    return sum(1 for i in visible.split(",") if i and os.path.exists(os.path.join(folder, f"gpu{i}")))


def node_gemm(per_gpu: list[float], cuda: bool) -> float:
    """A node's GEMM figure: its slowest GPU. On CPU (functional mode) the median of its ranks:
    they share cores with every other "node", and one descheduled rank says nothing about it."""
    return min(per_gpu) if cuda else statistics.median(per_gpu)


def timed(fn, cuda: bool) -> float:
    import torch
    if cuda:
        torch.cuda.synchronize()
    begin = time.perf_counter()
    fn()
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - begin


def gemm_repeats(cuda: bool, repeats: int) -> list[float]:
    import torch
    # On CPU a repeat lasts about 40 ms, longer than a CFS quota period (a throttled node must not
    # finish a whole repeat inside one burst of its quota, as 4 x 256^3 = 1.5 ms did).
    n, iters = (8192, 10) if cuda else (512, 12)
    dtype, device = (torch.bfloat16, "cuda") if cuda else (torch.float32, "cpu")
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    torch.matmul(a, b)

    def run():
        for _ in range(iters):
            torch.matmul(a, b)
    return [2 * n**3 * iters / timed(run, cuda) / 1e12 for _ in range(repeats)]


def allreduce_repeats(group, cuda: bool, repeats: int, size: int | None = None) -> list[float]:
    """Bus bandwidth (GB/s) of one all-reduce size (default 256 MiB on GPU, 1 MiB on CPU), the
    slowest rank's time, per repeat."""
    import torch
    import torch.distributed as dist
    size = size or (256 * 2**20 if cuda else 2**20)
    world = dist.get_world_size(group)
    tensor = torch.ones(size // 4, dtype=torch.float32, device="cuda" if cuda else "cpu")
    iters = 5 if cuda else 2
    dist.all_reduce(tensor, group=group)
    out = []
    for _ in range(repeats):
        dist.barrier(group=group)

        def run():
            for _ in range(iters):
                dist.all_reduce(tensor, group=group)
        seconds = torch.tensor([timed(run, cuda) / iters], device=tensor.device, dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX, group=group)
        out.append(size / seconds.item() / 1e9 * 2 * (world - 1) / world)
    return out


def worker(args) -> int:
    import datetime

    import torch
    import torch.distributed as dist

    from dist_exit import finish

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    timeout = datetime.timedelta(seconds=float(os.environ.get("SMOKE_COLLECTIVE_TIMEOUT", "600")))
    dist.init_process_group("nccl" if cuda else "gloo", timeout=timeout)
    repeats = 5 if cuda else 8
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.kind == "node":
        gemm = gemm_repeats(cuda, repeats)
        # on GPU at the probe's largest size: the preset's intra-node floor is a figure for that size
        size = int(os.environ.get("SMOKE_LOCALIZE_INTRA_BYTES") or 0) if cuda else None
        intra = allreduce_repeats(None, cuda, repeats, size) if world > 1 else []
        table = torch.tensor(gemm, dtype=torch.float64, device="cuda" if cuda else "cpu")
        rows = [torch.zeros_like(table) for _ in range(world)]
        dist.all_gather(rows, table)
        if rank == 0:
            per_gpu = [best(r.tolist()) for r in rows]
            report = {"host": node_name(), "gpus_allocated": int(os.environ.get("SLURM_GPUS_ON_NODE", world)),
                      "gpus_seen": gpus_seen(cuda), "ranks": world, "gemm_per_gpu": [round(t, 4) for t in per_gpu],
                      "gemm_tflops": node_gemm(per_gpu, cuda), "gemm_repeats": [r.tolist() for r in rows],
                      "intra_busbw_gbs": best(intra) if intra else None, "intra_repeats": intra}
            write_json(os.path.join(args.out, f"{report['host']}.json"), report)
    else:
        figures = allreduce_repeats(None, cuda, repeats)
        if rank == 0:
            write_json(args.out, {"ranks": world, "busbw_gbs": best(figures), "repeats": figures})
    return finish()


def in_probe(hosts: list[str], cuda: bool) -> dict:
    """Per-node figures inside the probe's own process group, cheap enough for every job (the
    trigger of SMOKE_LOCALIZE=auto): each node's slowest GEMM (repeated), the GPU count each node
    sees, and one round of concurrent all-reduces between disjoint pairs of nodes (one rank per
    node). `flagged` names the nodes that stand out; the srun steps then say which one is bad."""
    import torch
    import torch.distributed as dist
    started = time.perf_counter()
    rank = dist.get_rank()
    mode = "full" if cuda else "functional"
    device = "cuda" if cuda else "cpu"
    order = list(dict.fromkeys(hosts))
    leaders = [hosts.index(h) for h in order]
    pairs = GroupSearch(order, 0.0, FLOOR[mode]).queue if len(order) >= 4 else []
    groups = [(members, dist.new_group([leaders[order.index(m)] for m in members])) for _, members in pairs]
    mine = next(((m, g) for m, g in groups if hosts[rank] in m and rank in leaders), None)
    pair_figures = allreduce_repeats(mine[1], cuda, 3) if mine else []
    gemm = gemm_repeats(cuda, 3 if cuda else 4)
    local = [best(gemm), float(gpus_seen(cuda)), float(os.environ.get("SLURM_GPUS_ON_NODE", "0") or 0),
             best(pair_figures) if pair_figures else 0.0] + (gemm[:3] + pair_figures[:3] + [0.0] * 3)[:6]
    table = torch.tensor(local, dtype=torch.float64, device=device)
    rows = [torch.zeros_like(table) for _ in range(dist.get_world_size())]
    dist.all_gather(rows, table)
    rows = [r.tolist() for r in rows]
    flagged: dict[str, str] = {}
    gemm_node = {h: node_gemm([rows[r][0] for r in range(len(hosts)) if hosts[r] == h], cuda) for h in order}
    noise = robust_noise([rows[r][4:7] for r in range(len(rows))])
    for node, median in low_outliers(gemm_node, noise, FLOOR[mode]).items():
        flagged[node] = f"GEMM {gemm_node[node]:.3g} TFLOP/s, peers {median:.3g}"
    for node in order:
        seen, allocated = rows[hosts.index(node)][1:3]
        if seen != allocated:
            flagged[node] = f"sees {seen:.0f} GPU(s), Slurm allocated {allocated:.0f}"
    figures = [rows[leaders[order.index(m[0])]][3] for m, _ in groups]
    if figures:
        ref, limit = reference(figures, robust_noise([rows[leaders[order.index(m[0])]][7:10] for m, _ in groups]),
                               NET_FLOOR[mode])
        for (members, _), figure in zip(groups, figures):
            if ref - figure > limit:
                for node in members:
                    flagged.setdefault(node, f"pair {'+'.join(members)} all-reduce {figure:.3g} GB/s, peers {ref:.3g}")
    return {"gemm_tflops": gemm_node, "pairs": [{"nodes": list(m), "busbw_gbs": f} for (m, _), f in zip(groups, figures)],
            "flagged": flagged, "seconds": round(time.perf_counter() - started, 3)}


# ---------------------------------------------------------------------------------------------
# Scale on paper


def all_pairs_rounds(n: int, max_steps: int) -> tuple[int, int]:
    """All pairs, as a round-robin tournament: n-1 rounds of n/2 concurrent pairs (n even), each
    round cut into waves of max_steps steps. Returns (rounds, steps)."""
    rounds = n - 1 if n % 2 == 0 else n
    per_round = n // 2
    return rounds * math.ceil(per_round / max_steps), n * (n - 1) // 2


def simulate(n: int, bad: set[int], group: int | None = None, max_steps: int = 64) -> tuple[int, int, set[str]]:
    """The search with an oracle: a step is slow when one of its nodes is bad. (rounds, steps, named)."""
    nodes = [f"n{i}" for i in range(n)]
    bad_names = {f"n{i}" for i in bad}
    search = GroupSearch(nodes, noise=0.0, floor=0.05, max_steps=max_steps, group=group)
    found = search.run(lambda tests: [0.1 if set(ran_on) & bad_names else 1.0 for _, _, ran_on in tests],
                       max_rounds=64)
    return search.rounds, search.steps, set(found)


def simulation_table(step_cost: float, node_step_cost: float, max_steps: int = 64) -> list[dict]:
    """Rows for the docs: N = 4..4096, 0..4 bad nodes spread at fixed positions."""
    rows = []
    for n in (4, 16, 64, 256, 1024, 4096):
        for k in range(5):
            if k >= n:
                continue
            bad = {(i * 7919 + 3) % n for i in range(k)}
            while len(bad) < k:
                bad.add(len(bad))
            ours = simulate(n, bad, None, max_steps)
            sqrt_g = simulate(n, bad, max(2, math.isqrt(n)), max_steps)
            pairs = all_pairs_rounds(n, max_steps)
            truth = {f"n{i}" for i in bad}
            rows.append({"n": n, "bad": k, "found": ours[2] == truth, "sqrt_found": sqrt_g[2] == truth,
                         "rounds": ours[0], "steps": ours[1], "seconds": node_step_cost + ours[0] * step_cost,
                         "sqrt_rounds": sqrt_g[0], "sqrt_steps": sqrt_g[1],
                         "sqrt_seconds": node_step_cost + sqrt_g[0] * step_cost,
                         "pairs_rounds": pairs[0], "pairs_steps": pairs[1],
                         "pairs_seconds": node_step_cost + pairs[0] * step_cost})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("drive")
    d.add_argument("--out", required=True)
    d.add_argument("--preset", required=True)
    d.add_argument("--mode", choices=("full", "functional"), default="full")
    d.add_argument("--probe-status", type=int, default=0)
    w = sub.add_parser("worker")
    w.add_argument("--kind", choices=("node", "group"), required=True)
    w.add_argument("--out", required=True)
    s = sub.add_parser("simulate")
    s.add_argument("--step-cost", type=float, default=10.0, help="seconds one round of group steps takes")
    s.add_argument("--node-step-cost", type=float, default=10.0, help="seconds the per-node step takes")
    s.add_argument("--max-steps", type=int, default=64)
    args = parser.parse_args(argv)
    if args.cmd == "drive":
        return drive(args)
    if args.cmd == "worker":
        return worker(args)
    print("| N | bad | found | rounds | srun steps | est. s | sqrt(N) groups: rounds / steps / s | all pairs: rounds / steps / s |")
    print("|---:|---:|:---:|---:|---:|---:|---|---|")
    for r in simulation_table(args.step_cost, args.node_step_cost, args.max_steps):
        print(f"| {r['n']} | {r['bad']} | {'yes' if r['found'] else 'NO'} | {r['rounds']} | {r['steps']} | "
              f"{r['seconds']:.0f} | {r['sqrt_rounds']} / {r['sqrt_steps']} / {r['sqrt_seconds']:.0f}{'' if r['sqrt_found'] else ' (missed)'} | "
              f"{r['pairs_rounds']} / {r['pairs_steps']} / {r['pairs_seconds']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
