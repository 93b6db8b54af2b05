"""Judging the per-node checks, and whether localization runs at all (SMOKE_LOCALIZE)."""
from __future__ import annotations

import statistics

from smoke import runfolder
from smoke.localize.stats import FLOOR, NET_FLOOR, low_outliers, robust_noise


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

    alive = {n: r for n, r in reports.items() if n in nodes and report_ok(r)}
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
        minimum = runfolder.finite((expect.get(floor_key) or {}).get("min")) if mode == "full" else None
        if minimum is not None:
            under = {node: value for node, value in figures.items() if value < minimum}
            name({node: (value, statistics.median(v for n, v in figures.items() if n != node) if len(figures) > 1 else None,
                         f"{value:.3g} {unit}, expected >= {minimum:g}") for node, value in under.items()},
                 layer, len(figures), f"{unit} under the preset's {floor_key} floor {minimum:g}")
    return suspects, noise, job_level


def report_ok(report) -> bool:
    """A per-node report has the fields the judgement reads, as finite numbers (a NaN or 1e300 would
    spoil the peers' median: the node is unresponsive instead, and its peers are judged without it)."""
    finite = runfolder.finite
    if not isinstance(report, dict):
        return False
    if any(finite(report.get(k)) is None for k in ("gpus_seen", "gpus_allocated", "gemm_tflops")):
        return False
    if report["gemm_tflops"] <= 0:
        return False
    repeats = report.get("gemm_repeats")
    if not isinstance(repeats, list) or not all(isinstance(r, list) and all(finite(v) is not None for v in r)
                                                for r in repeats):
        return False
    intra, intra_repeats = report.get("intra_busbw_gbs"), report.get("intra_repeats") or []
    if intra is not None and not (finite(intra) or 0) > 0:
        return False
    return isinstance(intra_repeats, list) and all(finite(v) is not None for v in intra_repeats)


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
    flagged = (probe.get("per_node") or {}).get("flagged") if isinstance(probe.get("per_node"), dict) else None
    if flagged and not isinstance(flagged, dict):
        return True, "the probe's per-node figures are unusable"
    if flagged:
        return True, "the probe's per-node figures disagree: " + "; ".join(f"{n}: {w}" for n, w in sorted(flagged.items()))[:500]
    if mode == "full" and probe.get("allreduce") and probe.get("nodes", 1) > 1:
        floor = runfolder.finite((expect.get("allreduce_busbw_gbs") or {}).get("min"))
        sweep = probe["allreduce"]
        largest = runfolder.finite(sweep[-1].get("busbw_gbs")) if isinstance(sweep, list) and isinstance(sweep[-1], dict) else None
        if largest is None:
            return True, "the probe's all-reduce figures are unusable"
        if floor and largest < floor:
            return True, f"the job's all-reduce is below the preset's expectation ({floor:g} GB/s)"
    return False, "the probe found nothing to narrow down (SMOKE_LOCALIZE=auto)"
