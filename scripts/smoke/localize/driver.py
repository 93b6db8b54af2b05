"""Localization's driver: which nodes of this allocation to exclude, found with srun steps.

Runs in the batch shell after the probe stage (job-lib.sh's smoke_localize) and is bounded:
  1. per-node checks, one srun step over every node, each node on its own (a standalone torchrun):
     GEMM on each GPU, an all-reduce among the node's own GPUs, the GPU count it sees. A node
     with no result within SMOKE_LOCALIZE_STEP_TIMEOUT is `unresponsive`; the hang watchdog
     (smoke.watchdog.steps) ends a step whose ranks stopped progressing after SMOKE_HANG_AFTER
     seconds instead, and says which rank held it up.
  2. inter-node group tests over the nodes that passed: disjoint groups as concurrent srun steps
     (smoke.localize.search), failing groups split in halves, the last suspects confirmed in a pair
     with a node already known good. Bounded by SMOKE_LOCALIZE_MAX_ROUNDS; never all pairs.
Every figure is judged against the median of its peers in the same run (smoke.localize.stats) and,
in full mode, against the preset's absolute expectations (smoke.localize.judge).

    python -m smoke.localize.driver --out DIR --preset DIR --mode MODE --probe-status N \
        -- SRUN_ARG... -- PREFIX...

SRUN_ARGs are the job's own srun arguments for every step (CPU binding, the container); PREFIX is
the command every step's program runs behind (scripts/container-step in a container). Standard
library only: it runs on the batch host's Python.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from smoke import manifest, runfolder, slurm, vocab
from smoke.localize.judge import judge_nodes, report_ok, should_run
from smoke.localize.search import GroupSearch
from smoke.localize.stats import NET_FLOOR, robust_noise
from smoke.watchdog import steps as watchdog


@dataclass
class Step:
    """What every localization step shares with the job's own stages."""
    srun_args: list[str] = field(default_factory=list)
    prefix: list[str] = field(default_factory=list)


def probe_largest_size(probe: dict | None) -> int:
    """The probe's largest all-reduce size (the size the preset's intra-node floor is for); the
    probe's default largest when it wrote none."""
    sweep = (probe or {}).get("allreduce")
    size = sweep[-1].get("bytes") if isinstance(sweep, list) and sweep and isinstance(sweep[-1], dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) and 0 < size <= 2**40 \
        else vocab.PROBE_LARGEST_GPU_BYTES


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


def launch(step: "Step", name: str, nodes: list[str], program: list[str], env: dict, log,
           independent=False, watch: "watchdog.StepWatch | None" = None) -> subprocess.Popen:
    """One srun step running torchrun-node PROGRAM on `nodes`, with the job's own srun arguments
    (CPU binding, container) and command prefix, as job-lib handed them over; watched by the hang
    watchdog under its step name when `watch` is given."""
    root = os.environ["SMOKE_ROOT"]
    if watch is not None:
        env = {**env, **watch.env_for(name)}
    cmd = srun_base(name, nodes, independent) + step.srun_args + step.prefix + [f"{root}/scripts/torchrun-node"] + program
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    LAUNCHED.append(proc)
    return proc


LAUNCHED: list[subprocess.Popen] = []  # every step started, ended by drive() when Slurm stops the job


KILL_GRACE_S = 15.0
POLL_S = 0.5


def wait_all(procs: list[tuple[str, subprocess.Popen]], timeout: float,
             watch: "watchdog.StepWatch | None" = None, still_out=None) -> None:
    """Wait for every step; a step the hang watchdog finds stalled (after examining it: still_out(name)
    gives the nodes whose result is still missing) and the steps past the time limit are killed
    with scancel (their ranks may be stopped or hung, which srun alone would wait on): one squeue
    for all of them, then KILL_GRACE_S of grace shared by all, not each."""
    deadline = time.monotonic() + timeout
    overdue, pending = [], list(procs)
    while pending:
        running = []
        for name, proc in pending:
            if proc.poll() is not None:
                continue
            if watch is not None and watch.stalled(name):
                watch.examine(name, still_out(name) if still_out else [])
                overdue.append((name, proc))
                continue
            running.append((name, proc))
        pending = running
        if pending and time.monotonic() >= deadline:
            overdue += pending
            break
        if pending:
            time.sleep(POLL_S)
    if not overdue:
        return
    names = {name for name, _ in overdue}
    job = os.environ.get("SLURM_JOB_ID", "")
    try:
        steps = subprocess.run(["squeue", "-h", "-s", "-j", job, "-o", "%i %j"], capture_output=True,
                               text=True, check=False).stdout.splitlines()
        for line in steps:
            fields = line.split()
            if len(fields) == 2 and fields[1] in names:
                subprocess.run(["scancel", "--signal=KILL", fields[0]], capture_output=True, check=False)
    except OSError:
        pass  # no squeue or scancel where the driver runs (an image without Slurm's clients): the sruns are ended below
    grace = time.monotonic() + KILL_GRACE_S
    for _, proc in overdue:
        try:
            proc.wait(timeout=max(0.1, grace - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def load_json(out: str, relative: str) -> dict | None:
    """A report of the run folder, None when missing or unusable (a link, a FIFO, not JSON, NaN)."""
    try:
        return runfolder.read_json(out, relative, missing_ok=True)
    except runfolder.Unreadable:
        return None


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
        value = None
        if re.fullmatch(r"[0-9]{1,9}" if kind is int else r"[0-9]{1,9}(?:\.[0-9]{1,6})?", text):
            value = kind(text)
        if value is None or not low <= value <= high:
            raise ValueError(f"{name}={text[:40]!r} is not a number from {low} to {high}")
        return value
    return {"when": when,
            "step_timeout": number("SMOKE_LOCALIZE_STEP_TIMEOUT", "180", float, 1, 86400),
            # 2 at least: round 1 needs two groups, each the other's peer
            "max_steps": number("SMOKE_LOCALIZE_MAX_STEPS", "64", int, 2, 4096),
            "max_rounds": number("SMOKE_LOCALIZE_MAX_ROUNDS", "12", int, 1, 64),
            "base_port": number("MASTER_PORT", "20000", int, 1024, 65535)}


def drive(args, step: Step) -> int:
    """Write localize.json whatever happens: a bad setting, a failing scontrol or Slurm's SIGTERM
    leave {"ran": true, "error": ...}, which the verdict reports; an absent file would read as
    "nobody suspect". On SIGTERM the steps still running are ended first."""
    started = time.monotonic()
    result_path = os.path.join(args.out, "localize.json")

    def stopped(signum, _frame):
        raise Stopped(f"stopped by signal {signum} (the job's time limit or scancel)")
    previous = signal.signal(signal.SIGTERM, stopped)
    try:
        return _drive(args, step, started, result_path)
    except (Exception, Stopped) as exc:  # noqa: BLE001 - reported in localize.json, then by the verdict
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the report short
        for proc in LAUNCHED:
            if proc.poll() is None:
                proc.terminate()  # srun passes it on to the step's tasks
        why = str(exc) if isinstance(exc, (Stopped, ValueError)) else f"{type(exc).__name__}: {exc}"
        try:
            runfolder.write_json(result_path, {"ran": True, "error": why[:300], "suspects": [], "job_level": [],
                                               "seconds": round(time.monotonic() - started, 1)})
        except OSError as write_error:  # the verdict then says localize.json is missing
            print(f"localize: cannot write {result_path}: {write_error.strerror}", file=sys.stderr)
        print(f"localize: did not finish: {why[:300]}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


def _drive(args, step: Step, started: float, result_path: str) -> int:
    out = args.out
    if os.environ.get("SMOKE_LOCALIZE") == "never":  # nothing else is read then
        runfolder.write_json(result_path, {"ran": False, "why": "SMOKE_LOCALIZE=never", "suspects": [], "job_level": [],
                                 "rounds": 0, "steps": 0, "seconds": round(time.monotonic() - started, 3)})
        print("localize: not run: SMOKE_LOCALIZE=never")
        return 0
    settings = knobs(os.environ)
    try:
        expect, expect_note = manifest.expectations(manifest.load(args.preset)), None
    except manifest.Unavailable as exc:  # judged against peers only; the verdict says the same
        expect, expect_note = {}, f"the preset's floors not checked: {exc}"
    probe = load_json(out, runfolder.PROBE)
    run, why = should_run(settings["when"], args.probe_status, probe, args.mode, expect)
    result = {"ran": run, "why": why, "suspects": [], "job_level": [], "rounds": 0, "steps": 0,
              "seconds": round(time.monotonic() - started, 3)}
    if expect_note:
        result["expectations"] = expect_note
    if not run:
        runfolder.write_json(result_path, result)
        print(f"localize: not run: {why}")
        return 0
    print(f"localize: running because {why}", flush=True)
    nodes = slurm.allocation()
    if not nodes:
        raise ValueError("SLURM_JOB_NODELIST is unset or not a hostlist: the job's nodes are unknown")
    step_timeout, base_port = settings["step_timeout"], settings["base_port"]
    me = ["-m", "smoke.localize.worker"]
    log = runfolder.open_log(os.path.join(out, runfolder.LOCALIZE_LOG))
    node_dir = f"{runfolder.LOCALIZE_DIR}/node"
    per_node = os.path.join(out, node_dir)
    os.makedirs(per_node, exist_ok=True)
    # the intra-node all-reduce at the size the probe's verdict and the preset's floor use
    size = probe_largest_size(probe)
    # 1. per-node checks: one step, every node on its own (a standalone rendezvous on each node)
    env = step_env(base_port, {"SMOKE_NNODES": "1", "SMOKE_RDZV_ENDPOINT": "localhost:0",
                               "SMOKE_LOCALIZE_INTRA_BYTES": str(size)})
    watch = watchdog.StepWatch(out, args.mode) if watchdog.enabled(os.environ) else None
    proc = launch(step, "localize-node", nodes, me + ["--kind", "node", "--out", per_node], env, log,
                  independent=True, watch=watch)
    wait_all([("localize-node", proc)], step_timeout, watch,
             lambda _name: [n for n in nodes if not os.path.exists(os.path.join(per_node, f"{n}.json"))])
    round_seconds = [round(time.monotonic() - started, 1)]
    reports = {}
    for node in nodes:
        report = load_json(out, f"{node_dir}/{node}.json")
        if isinstance(report, dict):
            reports[node] = report
    suspects, noise, job_level = judge_nodes(nodes, reports, args.mode, expect)
    for node, culprit in (watch.culprits("localize-node") if watch else {}).items():
        if node in suspects and suspects[node]["layer"] == "unresponsive":  # the watchdog says why
            suspects[node]["reason"] = (f"no progress for {watch.after} s in its per-node check (hang watchdog): "
                                        f"{str(culprit.get('reason', ''))[:200]}")
    steps, rounds = 1, 1
    # 2. group tests among the nodes that passed
    # only nodes with a usable report: one ruled out job-wide (no result on most nodes) has none either
    healthy = [n for n in nodes if n not in suspects and report_ok(reports.get(n))]
    floor = NET_FLOOR[args.mode]
    search = GroupSearch(healthy, noise, floor, max_steps=settings["max_steps"])
    counter = [0]
    groups: dict[str, list[str]] = {}

    def measure(tests):
        begin = time.monotonic()
        procs, paths = [], []
        for kind, _tested, ran_on in tests:
            counter[0] += 1
            name = f"localize-g{counter[0]}"
            relative = f"{runfolder.LOCALIZE_DIR}/group-{counter[0]}.json"
            env = step_env(vocab.step_port(base_port, 1 + counter[0]), {"MASTER_ADDR": ran_on[0]})
            procs.append((name, launch(step, name, list(ran_on), me + ["--kind", "group", "--out",
                                                                       os.path.join(out, relative)], env, log,
                                       watch=watch)))
            paths.append(relative)
            groups[name] = list(ran_on)
        wait_all(procs, step_timeout, watch, groups.get)
        figures = []
        for path in paths:
            report = load_json(out, path)
            figure = runfolder.finite(report.get("busbw_gbs")) if isinstance(report, dict) else None
            figures.append(figure if figure and figure > 0 else None)
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
                   "round_seconds": round_seconds, "floor": floor, "per_node": reports, "groups": search.history,
                   "stalls": watch.stalls if watch else []})
    runfolder.write_json(result_path, result)
    names = ", ".join(f"{s['node']} ({s['layer']})" for s in result["suspects"]) or "nobody"
    print(f"localize: {len(nodes)} nodes, {rounds} round(s), {steps} srun step(s), "
          f"{result['seconds']} s: suspects {names}" + "".join(f"; job-wide: {j}" for j in job_level))
    return 0


def split_argv(argv: list[str]) -> tuple[list[str], Step]:
    """OPTIONS -- SRUN_ARG... -- PREFIX...: the options, and the step's parts (each may be empty)."""
    if "--" not in argv:
        return argv, Step()
    i = argv.index("--")
    rest = argv[i + 1:]
    j = rest.index("--") if "--" in rest else len(rest)
    return argv[:i], Step(srun_args=rest[:j], prefix=rest[j + 1:])


def main(argv: list[str] | None = None) -> int:
    options, step = split_argv(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--mode", choices=vocab.MODES, default="full")
    parser.add_argument("--probe-status", type=int, default=0)
    args = parser.parse_args(options)
    args.mode = vocab.judged_as(args.mode)
    return drive(args, step)


if __name__ == "__main__":
    sys.exit(main())
