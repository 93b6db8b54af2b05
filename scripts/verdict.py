"""The verdict: combine the stages of one job into PASS, WARN or FAIL.

Reads the job's output folder (stages.txt, preflight/*.json, functional/*.json, megatron.log) and
the preset's expectations, writes verdict.json atomically and prints a short table.
Exit codes: 0 pass (or warn), 1 fail, 2 could not run.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import shlex
import stat
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from validator.catalog import RDMA_FABRICS  # noqa: E402  (standard library only)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from localize import LAYERS, hostlist  # noqa: E402  (this folder; standard library only)

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
# NCCL's own IB transport is "IB" (src/transport/net_ib/common.cc); the RDMA/SHARP plugin
# (Mellanox/nccl-rdma-sharp-plugins src/ib_plugin.c) names the same transport IBext_v6..IBext_v11,
# older builds "IBext".
IB_FAMILY = re.compile(r"IB(?:ext(?:_v\d+)?)?")
# A network channel line; "/GDRDMA" at its end when the NIC reads and writes GPU memory directly.
_NET_CHANNEL = re.compile(r"NCCL INFO Channel .*via NET/\w+/\d+(?:\(\d+\))?(/GDRDMA)?")


def nccl_networks(log_text: str) -> set[str]:
    """The network transports NCCL reported in its INFO output (IB, Socket, a plugin's name)."""
    found = set()
    for match in _NETWORK.finditer(log_text):
        found.add(match.group(1) or match.group(2))
    return found


# NCCL's INFO lines start with host:pid:tid (the host name cut at its first dot), after srun's
# "N: " label; the line that names the transport a rank's communicator chose
_NETWORK_BY_HOST = re.compile(r"^(?:\s*\d+: )?([A-Za-z0-9_-]+):\d+:\d+ \[\d+\] NCCL INFO Using network (\w+)", re.M)


def nccl_fallback(log_text: str, host_names, known: set | None = None) -> tuple[list[str], list[str], int]:
    """(IB-family transports any node used, the nodes that used none of them, how many nodes NCCL
    reported from): the nodes whose NCCL fell back to sockets while their peers ran over IB.
    host_names maps NCCL's host names to Slurm node names; with `known`, only those nodes count."""
    names = host_names if isinstance(host_names, dict) else {}
    by_node: dict[str, set] = {}
    for match in _NETWORK_BY_HOST.finditer(log_text):
        node = str(names.get(match.group(1), match.group(1)))
        if known is None or node in known:
            by_node.setdefault(node, set()).add(match.group(2))
    ib = sorted({n for nets in by_node.values() for n in nets if IB_FAMILY.fullmatch(n)})
    fell_back = sorted(node for node, nets in by_node.items() if not any(IB_FAMILY.fullmatch(n) for n in nets))
    return ib, fell_back, len(by_node)


def host_names(run_dir: str) -> dict[str, str]:
    """NCCL's host names (cut at the first dot) -> Slurm node names, from the preflight reports (every
    node writes one before the probe) and probe.json's host_names; a failed probe leaves no probe.json."""
    names: dict[str, str] = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "preflight", "*.json"))):
        try:
            report = json.loads(read_text(path) or "null")
        except (Unreadable, ValueError, RecursionError):
            continue
        if isinstance(report, dict) and isinstance(report.get("host"), str) and isinstance(report.get("hostname"), str):
            names[report["hostname"].split(".")[0]] = report["host"]
    try:
        probe = json.loads(read_text(os.path.join(run_dir, "probe.json")) or "null")
    except (Unreadable, ValueError, RecursionError):
        probe = None
    if isinstance(probe, dict) and isinstance(probe.get("host_names"), dict):
        names.update({str(k): str(v) for k, v in probe["host_names"].items()})
    return names


def transport_suspects(run_dir: str, manifest: dict, mode: str) -> list[dict]:
    """`config` suspects: on an RDMA topology, the nodes whose NCCL used sockets while their peers
    used IB (a node's HCA down, its driver or the container missing it). When no node used IB the
    cause is job-wide (the image, NCCL_IB_HCA): the transport check fails and nobody is named."""
    fabric = ((manifest.get("topology") or {}).get("network") or {}).get("fabric") if isinstance(manifest, dict) else None
    if mode in FUNCTIONAL_MODES or fabric not in RDMA_FABRICS:
        return []
    try:
        log_text = read_text(os.path.join(run_dir, "probe.log")) or ""
    except Unreadable:
        return []
    names = host_names(run_dir)
    # only names Slurm gave: a host NCCL reported that no preflight report or probe.json maps is never named
    ib, fell_back, reporting = nccl_fallback(log_text, names, set(names.values()))
    if not ib or len(fell_back) * 2 > reporting:  # none on IB, or most not: job-wide (the transport row)
        return []
    return [s for s in ({"node": node, "layer": "config", "figure": None, "peers_median": None,
                         "reason": f"NCCL fell back to sockets on this node while its peers used {', '.join(ib)} "
                                   "(its HCAs down, a missing driver or device in its container?)"}
                        for node in fell_back) if suspect_ok(s)]


def judge_probe(probe: dict, manifest: dict, mode: str, log_text: str) -> list[tuple[str, str, str]]:
    rows = []
    expect = manifest.get("expectations") or {}
    if mode in FUNCTIONAL_MODES:
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
        ib = sorted(n for n in nets if IB_FAMILY.fullmatch(n))
        _, fell_back, reporting = nccl_fallback(log_text, probe.get("host_names"))
        if not ib:
            rows.append(("transport", "FAIL", f"NCCL used {', '.join(sorted(nets)) or 'no network it reported'} "
                         f"on an {RDMA_FABRICS[fabric]} topology: a silent fallback"))
        elif fell_back:
            shared = len(fell_back) * 2 > reporting
            rows.append(("transport", "FAIL", f"NCCL over {', '.join(ib)}, but over sockets on {len(fell_back)} of "
                         f"{reporting} node(s) ({', '.join(fell_back[:8])}{' ...' if len(fell_back) > 8 else ''}): "
                         + ("most nodes: a job-wide cause (the image, NCCL_IB_HCA), not nodes to exclude" if shared
                            else "a silent fallback on those nodes")))
        else:
            rows.append(("transport", "PASS", f"NCCL over {', '.join(ib)}"))
            channels = [m.group(1) for m in _NET_CHANNEL.finditer(log_text)]
            staged = sum(1 for gdr in channels if not gdr)
            if staged:
                rows.append(("gpudirect", "WARN", f"{staged} of {len(channels)} network channel(s) without GDRDMA: "
                             "data is staged through host memory (nvidia-peermem loaded? NCCL_NET_GDR_LEVEL?)"))
    return rows


FUNCTIONAL_MODES = ("functional", "container-functional")  # CPU, gloo, the small loop; with or without pyxis
# pyxis' own error lines (a container that did not start), not the step's program failing inside it
_PYXIS_ERROR = re.compile(r"slurmstepd(?:-(\S+))?: error: pyxis: (?!child \d+ failed)(?!printing enroot log)(.+)")


def failure_cause(log_text: str) -> str | None:
    """Why a stage's torchrun failed, in one line, from its log; None when the log does not say."""
    match = _PYXIS_ERROR.search(log_text)
    if match:
        host, message = match.groups()
        return (f"the container did not start on {host or 'a node'} (pyxis: {message.strip()[:300]}); the image "
                "(SMOKE_IMAGE or the preset's) may be broken or not a root filesystem: enroot's own lines "
                "follow pyxis' in this stage's log")
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


MAX_READ = 64 * 2**20  # the largest log the verdict reads (the tail is what matters for a failure)
_STAGE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")


class Unreadable(Exception):
    """A file of the run folder that cannot be used as it is: a FAIL row, never a crash."""


def read_text(path: str) -> str | None:
    """A regular file's text (undecodable bytes replaced, the last MAX_READ bytes of a longer one),
    or None when it does not exist. Never blocks (a FIFO in the run folder is refused)."""
    name = os.path.relpath(path, os.path.dirname(os.path.dirname(path)))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"{name}: cannot read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{name}: not a regular file")
        if info.st_size > MAX_READ:
            os.lseek(fd, info.st_size - MAX_READ, os.SEEK_SET)
        chunks, size = [], 0
        while size < MAX_READ:
            chunk = os.read(fd, MAX_READ - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise Unreadable(f"{name}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def read_json(path: str) -> dict:
    """A JSON object written by a stage; a truncated or foreign file is Unreadable."""
    name = os.path.relpath(path, os.path.dirname(os.path.dirname(path)))
    text = read_text(path)
    if text is None:
        raise Unreadable(f"{name}: missing")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"{name}: not JSON ({str(exc)[:100]}): its writer died mid-write?") from None
    if not isinstance(data, dict):
        raise Unreadable(f"{name}: not a JSON object")
    return data


# What a malformed but readable report raises somewhere in the judging: a FAIL row for its section.
_MALFORMED = (Unreadable, KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError,
              OverflowError, RecursionError, statistics.StatisticsError)


def _section(rows: list, label: str, judge, *args) -> None:
    try:
        rows += judge(*args)
    except Unreadable as exc:
        rows.append((label, "FAIL", str(exc)))
    except _MALFORMED as exc:
        rows.append((label, "FAIL", f"malformed {label} report ({type(exc).__name__}: {str(exc)[:100]})"))


def _stages(run_dir: str, stages: dict) -> list:
    rows = []
    text = read_text(os.path.join(run_dir, "stages.txt"))
    for line in (text or "").splitlines():
        name, _, code = line.strip().partition(" ")
        if not line.strip():
            continue
        if not _STAGE_NAME.match(name):  # a stage name is also a log file name: nothing else is read
            rows.append(("stages.txt", "FAIL", f"garbled line {line[:60]!r}"))
            continue
        stages[name] = code
        detail = f"exit code {code[:20]}"
        if code != "0":
            log_text = read_text(os.path.join(run_dir, f"{name}.log"))
            cause = failure_cause(log_text) if log_text else None
            if cause:
                detail += f": {cause}"
        rows.append((f"stage {name}", "PASS" if code == "0" else "FAIL", detail))
    return rows


def _signalled(run_dir: str) -> list:
    text = read_text(os.path.join(run_dir, "signalled"))
    if text is None:
        return []
    signal_name, _, stage = text.strip().partition(" ")
    return [("job", "FAIL", f"Slurm ended the job with {signal_name[:20]} during stage {stage[:60]} "
                            "(a time limit, scancel or a failed node): it did not run to the end")]


def _preflight(path: str) -> list:
    report = read_json(path)
    return [(f"preflight {report['host']} {name}", "FAIL", check["detail"])
            for name, check in report["checks"].items() if check["state"] == "FAIL"]


def _probe(run_dir: str, manifest: dict, mode: str) -> list:
    probe_path = os.path.join(run_dir, "probe.json")
    if not os.path.lexists(probe_path):
        return [("probe", "FAIL", "the probe stage passed but wrote no probe.json")]
    probe = read_json(probe_path)
    return judge_probe(probe, manifest, mode, read_text(os.path.join(run_dir, "probe.log")) or "")


def _functional(run_dir: str) -> list:
    ranks = [read_json(path) for path in sorted(glob.glob(os.path.join(run_dir, "functional", "rank-*.json")))]
    if not ranks:
        return [("ranks", "FAIL", "no rank wrote a report: training did not run")]
    world = ranks[0]["world_size"]
    state = "PASS" if len(ranks) == world else "FAIL"
    hosts = sorted({str(r["host"]) for r in ranks})
    return ([("ranks", state, f"{len(ranks)} of {world} ranks reported from {len(hosts)} node(s)")]
            + judge_training({"losses": ranks[0]["losses"], "tflops": []}, None))


def _megatron(run_dir: str, expectations: dict) -> list:
    text = read_text(os.path.join(run_dir, "megatron.log"))
    if text is None:
        return [("training", "FAIL", "no megatron.log: training did not run")]
    minimum = (expectations.get("megatron_tflops_per_gpu") or {}).get("min")
    return judge_training(parse_training_log(text), minimum)


def read_container(run_dir: str) -> tuple[dict | None, list[tuple[str, str, str]]]:
    """The container the job used (runtime, image, arch) and the host checks made before any
    import, from container.tsv (written by smoke_container); (None, []) without a container."""
    text = read_text(os.path.join(run_dir, "container.tsv"))
    if text is None:
        return None, []
    info, rows = {}, []
    for line in text.splitlines():
        fields = line.split("\t")
        if fields[0] == "info" and len(fields) == 3:
            info[fields[1]] = fields[2]
        elif fields[0] == "check" and len(fields) == 4:
            rows.append((f"container {fields[1]}", fields[2], fields[3]))
    if info.get("arch") and info.get("preset_arch") and info["arch"] != info["preset_arch"]:
        info["arch_override"] = f"{info['preset_arch']} -> {info['arch']}"
    return info, rows


def _container(run_dir: str) -> list:
    return read_container(run_dir)[1]


def collect(run_dir: str, mode: str, manifest: dict | None) -> list[tuple[str, str, str]]:
    """Every section judged on its own: a file that is truncated, foreign or not a file at all
    fails its section with the reason, and the others are still judged."""
    rows = []
    if not isinstance(manifest, dict):
        rows.append(("expectations", "WARN", "preset.yaml unreadable here (PyYAML missing?): floors not checked"))
        manifest = {}
    expectations = manifest.get("expectations") if isinstance(manifest.get("expectations"), dict) else {}
    stages: dict = {}
    _section(rows, "container.tsv", _container, run_dir)
    _section(rows, "stages.txt", _stages, run_dir, stages)
    _section(rows, "signalled", _signalled, run_dir)
    for path in sorted(glob.glob(os.path.join(run_dir, "preflight", "*.json"))):
        _section(rows, f"preflight {os.path.basename(path)[:60]}", _preflight, path)
    if stages.get("probe") == "0":
        _section(rows, "probe", _probe, run_dir, manifest, mode)
    _section(rows, "localize", localization_rows, run_dir, stages)
    try:
        stopped = read_text(os.path.join(run_dir, "stopped-after"))
    except Unreadable:
        stopped = "?"
    if stopped is not None:
        rows.append(("training", "WARN", f"not run: SMOKE_STOP_AFTER={stopped.strip()[:40]} stopped the job after that stage"))
        return rows
    if mode in FUNCTIONAL_MODES:
        _section(rows, "ranks", _functional, run_dir)
    else:
        _section(rows, "training", _megatron, run_dir, expectations)
    return rows


def load_suspects(run_dir: str) -> tuple[dict | None, list[dict]]:
    """localize.json (written by scripts/localize.py) and its suspects; (None, []) when absent."""
    try:
        result = json.loads(read_text(os.path.join(run_dir, "localize.json")) or "null")
    except (Unreadable, ValueError, RecursionError):
        return None, []
    if not isinstance(result, dict):
        return None, []
    suspects = result.get("suspects") if isinstance(result.get("suspects"), list) else []
    return result, [s for s in suspects if suspect_ok(s)]


def suspect_ok(s) -> bool:
    """A suspect as localize.py writes it: a Slurm node name, a known layer, finite figures. Anything
    else is dropped: these strings end up in exclude.txt, drain.sh and the printed table."""
    def number(v):
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e30
                             and math.isfinite(v))  # a JSON integer of 400 digits: no float, no traceback
    return (isinstance(s, dict) and all(isinstance(s.get(k), str) for k in ("node", "layer", "reason"))
            and re.fullmatch(r"[A-Za-z0-9._-]{1,200}", s["node"]) is not None and s["layer"] in LAYERS
            and number(s.get("figure")) and number(s.get("peers_median")))


def localization_rows(run_dir: str, stages: dict | None = None) -> list[tuple[str, str, str]]:
    result, suspects = load_suspects(run_dir)
    if result is None:
        signalled = read_text(os.path.join(run_dir, "signalled")) or ""
        if "probe" in (stages or {}) and not signalled.strip().endswith(" probe"):
            return [("localize", "WARN", "wrote no result (localize.json): killed or crashed, see localize.log; "
                                         "localization judged no node (exclude.txt holds only what other checks named)")]
        return []
    if not result.get("ran"):
        return [("localize", "PASS", f"not run: {str(result.get('why'))[:200]}")]
    rows = []
    if result.get("error"):
        rows.append(("localize", "WARN", f"did not finish: {str(result['error'])[:300]}; localization judged "
                                         "no node (exclude.txt holds only what other checks named)"))
    job_level = result.get("job_level") if isinstance(result.get("job_level"), list) else []
    rows += [("localize job-wide", "WARN", str(j)[:300]) for j in job_level]
    if result.get("error"):
        return rows
    how = f"{result.get('rounds')} round(s), {result.get('steps')} srun step(s), {result.get('seconds')} s"
    if not suspects:
        return rows + [("localize", "PASS", f"no node stands out from its peers ({how})")]
    return rows + [(f"suspect {s['node']}", "FAIL", f"{s['layer']}: {s['reason']}") for s in suspects] + \
        [("localize", "FAIL", f"{len(suspects)} node(s) to exclude ({how})")]


def write_exclusions(run_dir: str, suspects: list[dict], job: str | None) -> str:
    """exclude.txt (one Slurm hostlist, empty when nobody is suspect) and drain.sh (for an
    operator; the job never runs it). Returns the hostlist."""
    nodes = hostlist(s["node"] for s in suspects)
    with open(os.path.join(run_dir, "exclude.txt"), "w", encoding="utf-8") as handle:
        handle.write(nodes + "\n" if nodes else "")
    lines = ["#!/bin/sh", "# For an operator, after reading verdict.json: drains the nodes this smoke test named.",
             "# The job never runs this."]
    job = job if job and re.fullmatch(r"[0-9_]{1,20}", job) else "?"
    for s in suspects:
        figure = "no figure" if s.get("figure") is None else f"{s['figure']:.3g}"
        # single quotes (shlex): nothing in the reason is expanded when an operator runs the file
        reason = shlex.quote(f"smoke {job}: {s['layer']} {figure}")
        lines.append(f"scontrol update NodeName={shlex.quote(s['node'])} State=DRAIN Reason={reason}")
    path = os.path.join(run_dir, "drain.sh")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.chmod(path, 0o755)  # noqa: S103 - a script for the operator, #!/bin/sh
    return nodes


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
    parser.add_argument("--mode", choices=("full",) + FUNCTIONAL_MODES, default="full")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.run_dir):
        print(f"verdict: no run folder {args.run_dir}", file=sys.stderr)
        return 2
    try:
        rows = collect(args.run_dir, args.mode, load_manifest(args.preset))
    except Exception as exc:  # the verdict is promised on every way a job ends: never lose it
        rows = [("verdict", "FAIL", f"the run folder could not be judged ({type(exc).__name__}: {str(exc)[:200]})")]
    if not rows:
        rows = [("job", "FAIL", "no stage reported anything")]
    _, suspects = load_suspects(args.run_dir)
    try:
        named = {x["node"] for x in suspects}
        extra = [x for x in transport_suspects(args.run_dir, load_manifest(args.preset) or {}, args.mode)
                 if x["node"] not in named]
    except Exception as exc:  # noqa: BLE001 - the verdict is still written
        extra = []
        rows.append(("transport suspects", "WARN", f"not judged ({type(exc).__name__})"))
    rows += [(f"suspect {x['node']}", "FAIL", f"{x['layer']}: {x['reason']}") for x in extra]
    suspects += extra
    result = overall(rows)
    job = os.environ.get("SLURM_JOB_ID")
    try:
        write_exclusions(args.run_dir, suspects, job)
    except OSError as exc:
        rows.append(("exclude.txt", "FAIL", f"cannot write exclude.txt or drain.sh: {exc.strerror}"))
        result = "FAIL"
    payload = {"verdict": result, "mode": args.mode, "preset": os.path.basename(os.path.normpath(args.preset)),
               "job_id": job,
               "checks": [{"check": c, "state": s, "detail": d} for c, s, d in rows],
               "suspects": suspects}
    try:
        container = read_container(args.run_dir)[0]
    except Unreadable:
        container = None  # its FAIL row is already in the checks
    if container is not None:
        payload["container"] = container
    path = os.path.join(args.run_dir, "verdict.json")
    try:  # a temporary file of its own, then a rename: a reader never sees half a verdict
        fd, tmp = tempfile.mkstemp(prefix=".verdict-", suffix=".tmp", dir=args.run_dir)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=1)
        os.replace(tmp, path)
    except OSError as exc:
        print(f"verdict: cannot write {path}: {exc.strerror}", file=sys.stderr)
    width = max(len(c) for c, _, _ in rows)
    for check, state, detail in rows:
        print(f"verdict: {check:<{width}}  {state:4}  {detail}")
    if suspects:
        print(f"verdict: {'node':<12}  {'layer':<12}  {'figure':>9}  {'peers':>9}  reason")
        for s in suspects:
            fig = "-" if s.get("figure") is None else f"{s['figure']:.3g}"
            med = "-" if s.get("peers_median") is None else f"{s['peers_median']:.3g}"
            print(f"verdict: {s['node']:<12}  {s['layer']:<12}  {fig:>9}  {med:>9}  {s['reason']}")
        nodes = os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or "N"
        exclude_file = os.path.join(args.run_dir, "exclude.txt")
        print(f"verdict: resubmit without them: sbatch --nodes {nodes} --exclude=$(cat {exclude_file}) "
              f"presets/{payload['preset']}/train.sbatch   (drain commands for an operator: "
              f"{os.path.join(args.run_dir, 'drain.sh')})")
    print(f"verdict: {result} ({path})")
    return 1 if result == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
