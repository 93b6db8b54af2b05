"""The one producer of suspects: the nodes exclude.txt and drain.sh name.

Three sources feed it: localization's localize.json (smoke.localize), the hang watchdog's hang.json
(smoke.watchdog) and NCCL's transport per node in the probe's log (a node on sockets while its peers ran over IB). Both are read from the run folder,
which code inside the image can write, so every suspect is checked before it is used:
- a Slurm node name of this job's allocation (the batch shell's SLURM_JOB_NODELIST, never a file of
  the run folder): `ALL`, a NodeSet or another job's node is never named;
- one of the localization layers, finite figures, a reason of bounded length;
- the more-than-half rule on what remains: a cause most nodes share is job-wide, not nodes to drain.
A suspect that fails a check is said in a row (WARN), never silently dropped into a PASS.
"""
from __future__ import annotations

import os
import shlex

from smoke import manifest, runfolder, slurm, vocab
from smoke.localize.layers import TABLE as LAYER_TABLE
from smoke.runfolder import Unreadable, finite
from smoke.verdict import hang
from smoke.verdict.logs import nccl_fallback
from smoke.verdict.rows import FAIL, PASS, WARN, Row, clip

MAX_REASON = 300


def problem(s, allocation: set[str] | None) -> str | None:
    """Why a suspect cannot be used; None when it can."""
    if not isinstance(s, dict):
        return "not an object"
    node, layer, reason = s.get("node"), s.get("layer"), s.get("reason")
    if not isinstance(node, str) or not slurm.NODE_NAME.fullmatch(node) or node in slurm.RESERVED:
        return "its node is not a Slurm node name"
    if allocation is None:
        return f"{node}: the job's allocation is unknown (SLURM_JOB_NODELIST), so no node can be named"
    if node not in allocation:
        return f"{node} is not a node of this job"
    if layer not in vocab.LAYERS:
        return f"{node}: layer {clip(layer, 40)!r} is not one of {', '.join(vocab.LAYERS)}"
    if not isinstance(reason, str):
        return f"{node}: no reason"
    for key in ("figure", "peers_median"):
        if s.get(key) is not None and finite(s.get(key)) is None:
            return f"{node}: its {key} is not a finite number"
    return None


def clean(s: dict) -> dict:
    return {"node": s["node"], "layer": s["layer"], "figure": finite(s.get("figure")),
            "peers_median": finite(s.get("peers_median")), "reason": clip(s["reason"], MAX_REASON)}


def load_localization(run_dir: str) -> dict | None:
    """localize.json, None when absent; Unreadable when it is there but cannot be used."""
    return runfolder.read_json(run_dir, runfolder.LOCALIZE, missing_ok=True)


def localization_rows(run_dir: str, stages: dict | None = None) -> list[Row]:
    """What localization says about itself (ran, why, error, job-wide findings); its suspects come
    through gather() with every other suspect."""
    result = load_localization(run_dir)
    if result is None:
        signalled = runfolder.read_text(run_dir, runfolder.SIGNALLED, limit=4096) or ""
        if "probe" in (stages or {}) and not signalled.strip().endswith(" probe"):
            return [Row("localize", WARN, "wrote no result (localize.json): killed or crashed, see localize.log; "
                                          "localization judged no node (exclude.txt holds only what other checks named)")]
        return []
    listed = result.get("suspects") if isinstance(result.get("suspects"), list) else []
    if not result.get("ran"):
        rows = [Row("localize", PASS, f"not run: {clip(result.get('why'), 200)}")]
        if listed:
            rows.append(Row("localize", WARN, f"localize.json says it did not run but lists {len(listed)} suspect(s): "
                                              "not used (a stage may have written it)"))
        return rows
    rows = []
    if result.get("error"):
        rows.append(Row("localize", WARN, f"did not finish: {clip(result['error'], 300)}; localization judged "
                                          "no node (exclude.txt holds only what other checks named)"))
    if result.get("expectations"):
        rows.append(Row("localize", WARN, clip(result["expectations"], 300)))
    job_level = result.get("job_level") if isinstance(result.get("job_level"), list) else []
    rows += [Row("localize job-wide", WARN, clip(j, 300)) for j in job_level[:20]]
    if result.get("error"):
        if listed:
            rows.append(Row("localize", WARN, f"localize.json reports an error but lists {len(listed)} suspect(s): "
                                              "not used"))
        return rows
    how = f"{clip(result.get('rounds'), 12)} round(s), {clip(result.get('steps'), 12)} srun step(s), " \
          f"{clip(result.get('seconds'), 12)} s"
    if not listed:
        rows.append(Row("localize", PASS, f"no node stands out from its peers ({how})"))
    else:
        rows.append(Row("localize", FAIL, f"{len(listed)} node(s) named ({how})"))
    return rows


def localization_suspects(run_dir: str) -> list:
    """The suspects localize.json lists, only when it says it ran and finished."""
    try:
        result = load_localization(run_dir)
    except Unreadable:
        return []
    if not isinstance(result, dict) or not result.get("ran") or result.get("error"):
        return []
    listed = result.get("suspects")
    return listed if isinstance(listed, list) else []


def host_names(run_dir: str) -> dict[str, str]:
    """NCCL's host names (cut at the first dot) -> Slurm node names, from the preflight reports (every
    node writes one before the probe) and probe.json's host_names; a failed probe leaves no probe.json."""
    names: dict[str, str] = {}
    for name in runfolder.list_dir(run_dir, runfolder.PREFLIGHT_DIR, ".json")[:4096]:
        try:
            report = runfolder.read_json(run_dir, f"{runfolder.PREFLIGHT_DIR}/{name}")
        except Unreadable:
            continue
        if isinstance(report.get("host"), str) and isinstance(report.get("hostname"), str):
            names[report["hostname"].split(".")[0]] = report["host"]
    try:
        probe = runfolder.read_json(run_dir, runfolder.PROBE, missing_ok=True)
    except Unreadable:
        probe = None
    if isinstance(probe, dict) and isinstance(probe.get("host_names"), dict):
        names.update({str(k): str(v) for k, v in probe["host_names"].items()})
    return names


def transport_suspects(run_dir: str, manifest_: dict, mode: str) -> list[dict]:
    """`config` suspects: on an RDMA topology, the nodes whose NCCL used sockets while their peers
    used IB (a node's HCA down, its driver or the container missing it). When no node used IB the
    cause is job-wide (the image, NCCL_IB_HCA): the transport check fails and nobody is named."""
    if vocab.on_cpu(mode) or manifest.fabric(manifest_) not in vocab.RDMA_FABRICS:
        return []
    try:
        log_text = runfolder.read_text(run_dir, runfolder.stage_log("probe")) or ""
    except Unreadable:
        return []
    names = host_names(run_dir)
    # only names Slurm gave: a host NCCL reported that no preflight report or probe.json maps is never named
    ib, fell_back, reporting = nccl_fallback(log_text, names, set(names.values()))
    if not ib or len(fell_back) * 2 > reporting:  # none on IB, or most not: job-wide (the transport row)
        return []
    return [{"node": node, "layer": "config", "figure": None, "peers_median": None,
             "reason": f"NCCL fell back to sockets on this node while its peers used {', '.join(ib)} "
                       "(its HCAs down, a missing driver or device in its container?)"} for node in fell_back]


def gather(run_dir: str, manifest_: dict, mode: str, allocation: list[str] | None) -> tuple[list[dict], list[Row]]:
    """Every usable suspect once (localization's first), and the rows for what could not be used."""
    members = set(allocation) if allocation is not None else None
    rows: list[Row] = []
    found: dict[str, dict] = {}
    refused: list[str] = []
    candidates = list(localization_suspects(run_dir)) + hang.suspects(run_dir)
    try:
        candidates += transport_suspects(run_dir, manifest_, mode)
    except Exception as exc:  # noqa: BLE001 - the verdict is still written
        rows.append(Row("transport suspects", WARN, f"not judged ({type(exc).__name__})"))
    for s in candidates:
        why = problem(s, members)
        if why:
            refused.append(why)
        elif s["node"] not in found:
            found[s["node"]] = clean(s)
    if refused:
        rows.append(Row("suspects", WARN, f"{len(refused)} suspect(s) not used: {clip('; '.join(refused[:5]), 400)}"))
    suspects = list(found.values())
    total = len(members) if members is not None else 0
    if suspects and total and len(suspects) * 2 > total and total > 1:
        rows.append(Row("suspects", FAIL, f"{len(suspects)} of {total} nodes named: a job-wide cause, not nodes "
                                          "to exclude (nobody is written to exclude.txt or drain.sh)"))
        return [], rows
    rows += [Row(f"suspect {s['node']}", FAIL, f"{s['layer']}: {s['reason']} ({LAYER_TABLE[s['layer']].what_to_do})")
             for s in suspects]
    return suspects, rows


def write_exclusions(run_dir: str, suspects: list[dict], job: str | None) -> str:
    """exclude.txt (one Slurm hostlist, empty when nobody is suspect) and drain.sh (for an
    operator; the job never runs it), each written by temp file and rename. Returns the hostlist."""
    nodes = slurm.hostlist(s["node"] for s in suspects)
    runfolder.write_text(os.path.join(run_dir, runfolder.EXCLUDE), nodes + "\n" if nodes else "")
    lines = ["#!/bin/sh", "# For an operator, after reading verdict.json: drains the nodes this smoke test named.",
             "# The job never runs this."]
    job = job if job and job.isascii() and job.replace("_", "").isdigit() and len(job) <= 20 else "?"
    for s in suspects:
        figure = "no figure" if s.get("figure") is None else f"{s['figure']:.3g}"
        # single quotes (shlex): nothing in the reason is expanded when an operator runs the file
        reason = shlex.quote(f"smoke {job}: {s['layer']} {figure}")
        lines.append(f"scontrol update NodeName={shlex.quote(s['node'])} State=DRAIN Reason={reason}")
    runfolder.write_text(os.path.join(run_dir, runfolder.DRAIN), "\n".join(lines) + "\n", mode=0o755)
    return nodes
