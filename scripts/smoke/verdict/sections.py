"""One judge per part of the run folder. Each returns rows; a part that is missing, truncated,
foreign or not a file at all fails its own section with the reason, and the others are still judged.

Adding a section: a function here returning list[Row], one line in collect(), the file in
smoke.runfolder and docs/run-folder.md.
"""
from __future__ import annotations

import os
import re
import statistics

from smoke import manifest, runfolder, slurm, vocab
from smoke.runfolder import Unreadable, finite
from smoke.verdict.logs import (IB_FAMILY, Iteration, TrainingLog, failure_cause, network_channels, nccl_fallback,
                                nccl_networks, parse_training_log)
from smoke.verdict import hang
from smoke.verdict.rows import FAIL, PASS, WARN, Row
from smoke.verdict.suspects import localization_rows

# What a malformed but readable report raises somewhere in the judging: a FAIL row for its section.
MALFORMED = (Unreadable, KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError,
             OverflowError, RecursionError, statistics.StatisticsError)


def section(rows: list[Row], label: str, judge, *args) -> None:
    try:
        rows += judge(*args)
    except Unreadable as exc:
        rows.append(Row(label, FAIL, str(exc)))
    except MALFORMED as exc:
        rows.append(Row(label, FAIL, f"malformed {label} report ({type(exc).__name__}: {str(exc)[:100]})"))


def _number(value, what: str) -> float:
    number = finite(value)
    if number is None:
        raise ValueError(f"{what} is not a finite number")
    return number


# --- Training -----------------------------------------------------------------------------------
# A loss that disappears, goes non-finite, or iterations that are all skipped never pass. Megatron
# (core_v0.13.0 training.py, training_log) prints a loss only when the interval's average is > 0: a
# NaN loss leaves the line without it, and an interval whose every iteration the fp16 loss scaler
# skipped has no loss either, with "number of skipped iterations" equal to the interval.
FLAT = 0.05  # a loss within 5 % of where it started, over a short log, is not called a rise
SHORT = 10  # fewer loss values than this: too few to call a flat loss a failure


def _diverged(first_step: int, affected: int, total: int) -> str:
    return (f"the loss went non-finite (NaN/Inf) from iteration {first_step}: Megatron drops the loss from its "
            f"iteration line then, {affected} of {total} logged interval(s) affected; the model diverged (lower the "
            "learning rate, train in bf16, check the data) or a GPU computes wrong results (rerun on other nodes)")


def _scale(value: float) -> str:
    """A loss scale as Megatron prints it (134217728, not 1.34218e+08)."""
    return f"{value:.0f}" if 1 <= value < 1e15 else f"{value:g}"


def _loss_problems(log: TrainingLog) -> list[Row]:
    """FAIL/WARN rows for a loss that is missing, non-finite or never trained; [] when it is there."""
    check = log.nan_check
    if check:
        at = f" at iteration {check['iteration']}" if check["iteration"] else ""
        where = "".join(f", {k} {check[k]}" for k in ("rank", "node") if check[k])
        return [Row("loss", FAIL, f"Megatron's NaN check stopped the run{at}{where}: found {check['what']}; the model "
                                  "diverged (lower the learning rate, train in bf16, check the data) or that GPU "
                                  "computes wrong results (rerun on other nodes)")]
    its = log.iterations
    if not its:
        return _scaler_problems(log)
    bad, all_skipped, previous = [], [], None
    for it in its:
        span = it.step - previous.step if previous is not None else None
        previous = it
        if it.nan or not it.grad_finite or (it.loss is not None and finite(it.loss) is None):
            bad.append(it.step)
        elif it.loss is None:
            covered = span if span is not None else it.step
            # the first line of a resumed run: its skips are taken to cover it
            if it.skipped and (it.skipped >= covered or span is None):
                all_skipped.append(it.step)
            else:
                bad.append(it.step)
    rows = []
    if bad:
        rows.append(Row("loss", FAIL, _diverged(min(bad), len(bad), len(its))))
    if all_skipped and not log.losses:
        scales = [it.scale for it in its if it.scale is not None]
        fell = f" (loss scale {_scale(scales[0])} -> {_scale(scales[-1])})" if len(scales) > 1 else ""
        rows.append(Row("loss", FAIL, f"every logged iteration was skipped by the fp16 loss scaler{fell}: the "
                                      "gradients overflow on every step and the model does not train; train in bf16, "
                                      "or check the learning rate and the data"))
    return rows


def _scaler_problems(log: TrainingLog) -> list[Row]:
    """No Megatron iteration line: the DeepSpeed/apex loss-scaler lines and progress bars, if any."""
    who = f" (reported by rank {log.overflow_rank})" if log.overflow_rank else ""
    if log.scale_at_minimum:
        return [Row("loss", FAIL, f"the fp16 loss scale reached its minimum and the run stopped{who}: every step "
                                  "overflowed; train in bf16, or lower the learning rate")]
    low = log.overflow_scale
    if log.overflows and (low is None or low <= 1.0):
        down = f" (down to {_scale(low)})" if low is not None else ""
        return [Row("loss", FAIL, f"the fp16 loss scaler skipped step after step{down}{who}: the gradients overflow "
                                  "at every scale and the model does not train; train in bf16, or lower the "
                                  "learning rate")]
    if log.overflows:
        return [Row("loss", WARN, f"{log.overflows} fp16 overflow(s) while the loss scale calibrates (down to "
                                  f"{_scale(low)}){who} and no loss line yet: too early to judge the run")]
    if any(finite(x) is None for x in log.progress_losses):
        return [Row("loss", FAIL, "the loss went non-finite (NaN/Inf) in the progress lines: the model diverged "
                                  "(lower the learning rate, train in bf16, check the data) or a GPU computes "
                                  "wrong results (rerun on other nodes)")]
    return []


def judge_training(log: TrainingLog, min_tflops: float | None) -> list[Row]:
    """Loss present, finite and going down; no NaN or all-skipped interval; throughput against the floor."""
    rows = _loss_problems(log)
    if any(r.state == FAIL for r in rows):
        return rows
    its = log.iterations
    losses = log.losses if its else [x for x in log.progress_losses if finite(x) is not None]
    if not its and not losses:
        return rows or [Row("training", FAIL, "0 iteration line(s) in the log: training did not run or wrote "
                                              "elsewhere")]
    if len(losses) < 2:
        return rows + [Row("training", WARN, f"{len(its)} iteration line(s), {len(losses)} with a loss: too few "
                                             "to judge the loss")]
    head = statistics.mean(losses[: max(1, len(losses) // 4)])
    tail = statistics.mean(losses[-max(1, len(losses) // 4):])
    detail = f"{head:.4g} -> {tail:.4g} over {len(losses)} iterations"
    if tail < head:
        rows.append(Row("loss", PASS, detail))
    elif tail <= head * (1 + FLAT) and len(losses) < SHORT:
        rows.append(Row("loss", PASS, f"{detail} (too few to see a trend)"))
    else:
        rows.append(Row("loss", FAIL, f"{detail}: the loss did not fall; a wrong checkpoint conversion, learning "
                                      "rate or data"))
    steady = [t for t in log.tflops[1:] if finite(t) is not None]  # the first iteration includes start-up
    if steady:
        median = statistics.median(steady)
        if min_tflops is None:
            rows.append(Row("tflops_per_gpu", PASS, f"median {median:.1f}"))
        else:
            rows.append(Row("tflops_per_gpu", PASS if median >= min_tflops else FAIL,
                            f"median {median:.1f}, expected >= {min_tflops:g}"))
    elif min_tflops is not None and its:
        rows.append(Row("tflops_per_gpu", WARN, f"no throughput in the iteration lines (--log-throughput): the "
                                                f"floor {min_tflops:g} TFLOP/s was not checked"))
    return rows


def functional(run_dir: str) -> list[Row]:
    names = runfolder.list_dir(run_dir, runfolder.FUNCTIONAL_DIR, ".json")
    ranks = [runfolder.read_json(run_dir, f"{runfolder.FUNCTIONAL_DIR}/{n}") for n in names if n.startswith("rank-")]
    if not ranks:
        return [Row("ranks", FAIL, "no rank wrote a report: training did not run")]
    world = ranks[0]["world_size"]
    if not isinstance(world, int) or isinstance(world, bool):
        raise ValueError("world_size is not a number")
    hosts = {str(r["host"]) for r in ranks}
    losses = ranks[0]["losses"]
    if not isinstance(losses, list):
        raise ValueError("losses is not a list")
    log = TrainingLog([Iteration(i + 1, finite(x) if finite(x) is not None else None,
                                 nan=0 if finite(x) is not None else 1) for i, x in enumerate(losses)])
    return ([Row("ranks", PASS if len(ranks) == world else FAIL,
                 f"{len(ranks)} of {world} ranks reported from {len(hosts)} node(s)")]
            + judge_training(log, None))


def megatron(run_dir: str, manifest_: dict) -> list[Row]:
    text = runfolder.read_text(run_dir, runfolder.stage_log("megatron"))
    if text is None:
        return [Row("training", FAIL, "no megatron.log: training did not run")]
    return judge_training(parse_training_log(text), manifest.floor(manifest_, "megatron_tflops_per_gpu"))


# --- Probe --------------------------------------------------------------------------------------
def judge_probe(probe: dict, manifest_: dict, mode: str, log_text: str) -> list[Row]:
    rows = []
    if vocab.on_cpu(mode):
        # CPU processes share a few cores: timings show the plumbing works, nothing about speed.
        world = int(_number(probe["world_size"], "world_size"))
        return [Row("probe", PASS, f"{world} ranks over gloo; speed and stragglers not judged on CPU")]
    if probe.get("gemm_stragglers"):
        stragglers = probe["gemm_stragglers"]
        if not isinstance(stragglers, list):
            raise ValueError("gemm_stragglers is not a list")
        rows.append(Row("gemm stragglers", FAIL, ", ".join(str(s)[:80] for s in stragglers[:16])))
    figures = probe["gemm_tflops"]
    if not isinstance(figures, list) or not figures:
        raise ValueError("gemm_tflops is not a list of figures")
    slowest = min(_number(t, "a GEMM figure") for t in figures)
    floor = manifest.floor(manifest_, "gemm_tflops")
    rows.append(Row("gemm_tflops", PASS if floor is None or slowest >= floor else FAIL,
                    f"slowest rank {slowest:.0f}" + (f", expected >= {floor:g}" if floor else "")))
    world, nodes = _number(probe["world_size"], "world_size"), _number(probe["nodes"], "nodes")
    if world > 1 and probe["allreduce"]:
        largest = probe["allreduce"][-1]
        busbw, size = _number(largest["busbw_gbs"], "busbw_gbs"), _number(largest["bytes"], "bytes")
        key = "allreduce_busbw_gbs" if nodes > 1 else "intra_node_busbw_gbs"
        floor = manifest.floor(manifest_, key)
        scaled = ""
        if floor is not None and nodes > 1:
            floor, scaled = network_floor(floor, manifest_)
        rows.append(Row("allreduce_busbw", PASS if floor is None or busbw >= floor else FAIL,
                        f"{busbw:.1f} GB/s at {size / 2**20:.0f} MiB"
                        + (f", expected >= {floor:.3g} ({key}{scaled})" if floor else "")))
    fabric = manifest.fabric(manifest_)
    if fabric in vocab.RDMA_FABRICS and nodes > 1:  # RoCE runs NCCL's IB transport too
        nets = nccl_networks(log_text)
        ib = sorted(n for n in nets if IB_FAMILY.fullmatch(n))
        _, fell_back, reporting = nccl_fallback(log_text, probe.get("host_names"))
        if not ib:
            rows.append(Row("transport", FAIL, f"NCCL used {', '.join(sorted(nets)) or 'no network it reported'} "
                                               f"on an {vocab.RDMA_FABRICS[fabric]} topology: a silent fallback"))
        elif fell_back:
            shared = len(fell_back) * 2 > reporting
            rows.append(Row("transport", FAIL, f"NCCL over {', '.join(ib)}, but over sockets on {len(fell_back)} of "
                            f"{reporting} node(s) ({', '.join(fell_back[:8])}{' ...' if len(fell_back) > 8 else ''}): "
                            + ("most nodes: a job-wide cause (the image, NCCL_IB_HCA), not nodes to exclude" if shared
                               else "a silent fallback on those nodes")))
        else:
            rows.append(Row("transport", PASS, f"NCCL over {', '.join(ib)}"))
            channels = network_channels(log_text)
            staged = channels.count(False)
            if staged:
                rows.append(Row("gpudirect", WARN, f"{staged} of {len(channels)} network channel(s) without GDRDMA: "
                                "data is staged through host memory (nvidia-peermem loaded? NCCL_NET_GDR_LEVEL?)"))
    return rows


def network_floor(floor: float, manifest_: dict) -> tuple[float, str]:
    """The inter-node floor for the NICs this run was told it has: the manifest's floor is for its
    topology.network nic_gbps x ib_ports_per_node; a site with other NICs passes SMOKE_NIC_GBPS and
    SMOKE_IB_PORTS (e.g. 4 x NDR200 GH200 nodes: SMOKE_NIC_GBPS=200), and the floor scales with the
    line rate. Returns (floor, what the row says about it)."""
    network = manifest.section(manifest_, "topology", "network")
    rated = (finite(network.get("nic_gbps")) or 0) * (finite(network.get("ib_ports_per_node")) or 0)
    told = [os.environ.get("SMOKE_NIC_GBPS", ""), os.environ.get("SMOKE_IB_PORTS", "")]
    if not rated or not all(t.isascii() and t.isdigit() for t in told):
        return floor, ""
    have = int(told[0]) * int(told[1])
    if have == rated or have == 0:
        return floor, ""
    return floor * have / rated, f", scaled from {floor:g} for {told[1]} x {told[0]} Gb/s"


def probe(run_dir: str, manifest_: dict, mode: str) -> list[Row]:
    if not runfolder.exists(run_dir, runfolder.PROBE):
        return [Row("probe", FAIL, "the probe stage passed but wrote no probe.json")]
    report = runfolder.read_json(run_dir, runfolder.PROBE)
    return judge_probe(report, manifest_, mode, runfolder.read_text(run_dir, runfolder.stage_log("probe")) or "")


# --- Stages, signals, preflight, container ----------------------------------------------------------
_STAGE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_STAGES = 64  # a job has a handful; a longer stages.txt is garbage, judged by its first lines


def stages(run_dir: str, seen: dict) -> list[Row]:
    rows = []
    text = runfolder.read_text(run_dir, runfolder.STAGES, limit=2**16)
    try:
        watched = hang.load(run_dir) or {}
    except Unreadable:
        watched = {}
    for line in (text or "").splitlines()[:MAX_STAGES]:
        if not line.strip():
            continue
        name, _, code = line.strip().partition(" ")
        if not _STAGE_NAME.fullmatch(name):  # a stage name is also a log file name: nothing else is read
            rows.append(Row(runfolder.STAGES, FAIL, f"garbled line {line[:60]!r}"))
            continue
        seen[name] = code
        detail = f"exit code {code[:20]}"
        if code != "0" and watched.get("stage") == name:  # the watchdog cancelled it: torchrun only saw a signal
            detail += ": ended by the hang watchdog, which found no progress (the hang row says who held it up)"
        elif code != "0":
            log_text = runfolder.read_text(run_dir, runfolder.stage_log(name))
            cause = failure_cause(log_text) if log_text else None
            if cause:
                detail += f": {cause}"
        rows.append(Row(f"stage {name}", PASS if code == "0" else FAIL, detail))
    return rows


def signalled(run_dir: str) -> list[Row]:
    text = runfolder.read_text(run_dir, runfolder.SIGNALLED, limit=4096)
    if text is None:
        return []
    signal_name, _, stage = text.strip().partition(" ")
    return [Row("job", FAIL, f"Slurm ended the job with {signal_name[:20]} during stage {stage[:60]} "
                             "(a time limit, scancel or a failed node): it did not run to the end")]


def preflight(run_dir: str, name: str) -> list[Row]:
    report = runfolder.read_json(run_dir, f"{runfolder.PREFLIGHT_DIR}/{name}")
    host = report["host"]
    if not isinstance(host, str) or not slurm.NODE_NAME.fullmatch(host):
        raise ValueError("its host is not a Slurm node name")
    checks = report["checks"]
    if not isinstance(checks, dict):
        raise ValueError("checks is not an object")
    return [Row(f"preflight {host} {str(check)[:40]}", FAIL, str(result["detail"]))
            for check, result in list(checks.items())[:64] if result["state"] == FAIL]


SOFTWARE_KEYS = ("torch", "nccl", "transformer_engine", "flash_attn", "flash_attn_3", "megatron", "cuda_capability",
                 "cudnn")


def software(run_dir: str) -> dict:
    """The image's software stack as each node's preflight found it ({} without a container):
    the same on every node, so listed once with the nodes it came from; a node that differs is
    listed apart."""
    stacks: dict[tuple, list[str]] = {}
    for name in runfolder.list_dir(run_dir, runfolder.PREFLIGHT_DIR, ".json")[:4096]:
        try:
            report = runfolder.read_json(run_dir, f"{runfolder.PREFLIGHT_DIR}/{name}")
        except Unreadable:
            continue
        found, host = report.get("software"), report.get("host")
        if not isinstance(found, dict) or not found or not isinstance(host, str) or not slurm.NODE_NAME.fullmatch(host):
            continue
        key = tuple(str(found.get(k))[:64] if found.get(k) is not None else None for k in SOFTWARE_KEYS)
        stacks.setdefault(key, []).append(host)
    return {"stacks": [{"nodes": slurm.hostlist(nodes), **dict(zip(SOFTWARE_KEYS, key))}
                       for key, nodes in sorted(stacks.items(), key=lambda kv: -len(kv[1]))[:16]]} if stacks else {}


def read_container(run_dir: str) -> tuple[dict | None, list[Row]]:
    """The container the job used (runtime, image, arch) and the host checks made before any
    import, from container.tsv (written by job-lib on the batch host); (None, []) without one."""
    text = runfolder.read_text(run_dir, runfolder.CONTAINER, limit=2**20)
    if text is None:
        return None, []
    info, rows = {}, []
    for line in text.splitlines()[:200]:
        fields = line.split("\t")
        if fields[0] == "info" and len(fields) == 3:
            info[fields[1][:40]] = fields[2][:500]
        elif fields[0] == "check" and len(fields) == 4 and fields[2] in (PASS, WARN, FAIL):
            rows.append(Row(f"container {fields[1]}", fields[2], fields[3]))
    if info.get("arch") and info.get("preset_arch") and info["arch"] != info["preset_arch"]:
        info["arch_override"] = f"{info['preset_arch']} -> {info['arch']}"
    return info, rows


def container(run_dir: str) -> list[Row]:
    return read_container(run_dir)[1]


def collect(run_dir: str, mode: str, manifest_: dict | None, manifest_problem: str = "") -> list[Row]:
    """Every section judged on its own."""
    rows: list[Row] = []
    if not isinstance(manifest_, dict):
        rows.append(Row("expectations", WARN, f"the preset's manifest could not be read ({manifest_problem}): "
                                              "floors and the transport's fallback check not judged"))
        manifest_ = {}
    seen: dict = {}
    section(rows, runfolder.CONTAINER, container, run_dir)
    section(rows, runfolder.STAGES, stages, run_dir, seen)
    section(rows, runfolder.SIGNALLED, signalled, run_dir)
    for name in runfolder.list_dir(run_dir, runfolder.PREFLIGHT_DIR, ".json")[:4096]:
        section(rows, f"preflight {name[:60]}", preflight, run_dir, name)
    if seen.get("probe") == "0":
        section(rows, "probe", probe, run_dir, manifest_, mode)
    section(rows, "localize", localization_rows, run_dir, seen)
    section(rows, "hang", hang.rows, run_dir)
    try:
        stopped = runfolder.read_text(run_dir, runfolder.STOPPED_AFTER, limit=4096)
    except Unreadable:
        stopped = "?"
    if stopped is not None:
        rows.append(Row("training", WARN, f"not run: SMOKE_STOP_AFTER={stopped.strip()[:40]} stopped the job after that stage"))
        return rows
    if vocab.on_cpu(mode):
        section(rows, "ranks", functional, run_dir)
    else:
        section(rows, "training", megatron, run_dir, manifest_)
    return rows
