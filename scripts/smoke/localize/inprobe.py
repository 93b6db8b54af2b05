"""Localization's part inside the probe: per-node figures in the probe's own process group, cheap
enough for every job (the trigger of SMOKE_LOCALIZE=auto)."""
from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist

from smoke.localize.search import GroupSearch
from smoke.localize.stats import FLOOR, NET_FLOOR, best, low_outliers, reference, robust_noise
from smoke.localize.worker import allreduce_repeats, gemm_repeats, gpus_seen, node_gemm


def in_probe(hosts: list[str], cuda: bool) -> dict:
    """Per-node figures inside the probe's own process group, cheap enough for every job (the
    trigger of SMOKE_LOCALIZE=auto): each node's slowest GEMM (repeated), the GPU count each node
    sees, and one round of concurrent all-reduces between disjoint pairs of nodes (one rank per
    node). `flagged` names the nodes that stand out; the srun steps then say which one is bad."""
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
