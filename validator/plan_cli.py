"""`python -m validator plan PRESET --nodes N`: what the preset will compute, before submitting."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from validator.planner import as_dict, estimate_memory, plan_for
from validator.source import read_source
from validator.yamlload import load_yaml


def node_counts(text: str) -> list[int]:
    """'4', '1,2,8' or '1-8' (or a mix): the node counts to plan for."""
    counts = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a node count, a list (1,2,8) or a range (1-8)") from None
        if first < 1 or last < first or last - first > 4096:
            raise argparse.ArgumentTypeError(f"'{part.strip()}' is not a range of positive node counts")
        counts.extend(range(first, last + 1))
    return counts


def print_summary(display: str, results: list) -> None:
    """One line per node count; a single node count gets the full memory breakdown instead."""
    print(f"{display}: per-GPU estimate in GiB (docs/memory-calibration.md); one node count for the breakdown")
    print(f"  {'nodes':>5} {'world':>6} {'TP':>3} {'PP':>3} {'DP':>5} {'global batch':>12} {'GiB/GPU':>8}  verdict")
    for p, m in results:
        if p.error:
            print(f"  {p.nodes:>5} {p.world:>6}  INVALID: {p.error}")
            continue
        verdict = f"fits ({m.budget_gib:.1f} usable)" if m.fits else f"DOES NOT FIT ({m.budget_gib:.1f} usable)"
        print(f"  {p.nodes:>5} {p.world:>6} {p.tp:>3} {p.pp:>3} {p.dp:>5} {p.global_batch:>12} {m.total_gib:>8.2f}  {verdict}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m validator plan")
    parser.add_argument("preset", help="preset folder or its preset.yaml")
    parser.add_argument("--nodes", type=node_counts, action="extend", required=True,
                        help="node counts: 4, 1,2,8 or 1-8 (repeatable)")
    parser.add_argument("--gpus-per-node", type=int, help="override the manifest's GPUs per node")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    path = Path(args.preset)
    manifest_path = path / "preset.yaml" if path.is_dir() else path
    src = read_source(manifest_path, Path.cwd())
    if not src.usable:
        for problem in src.problems:
            print(problem.as_text(), file=sys.stderr)
        return 2
    doc = load_yaml(src.text, src.display)
    if doc.problems or not isinstance(doc.data, dict):
        for problem in doc.problems:
            print(problem.as_text(), file=sys.stderr)
        print(f"{src.display}: run 'python -m validator {args.preset}' first", file=sys.stderr)
        return 2
    try:
        results = []
        for nodes in args.nodes:
            p = plan_for(doc.data, nodes, args.gpus_per_node)
            results.append((p, None if p.error else estimate_memory(doc.data, p)))
    except (KeyError, TypeError, ValueError) as exc:
        print(f"{src.display}: manifest incomplete for planning ({exc}); run the validator on it", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps([as_dict(p, m) for p, m in results], indent=2))
    elif len(results) > 1:
        print_summary(src.display, results)
    else:
        for p, m in results:
            print(f"{src.display} on {p.nodes} node(s) x {p.gpus_per_node} GPU(s): world {p.world}")
            if p.error:
                print(f"  INVALID: {p.error}")
                continue
            print(f"  TP {p.tp}  PP {p.pp}  DP {p.dp}  global batch {p.global_batch}")
            print(f"  memory per GPU (estimate, GiB; calibrated on an H200, see docs/memory-calibration.md): {m.params_total / 1e9:.2f}B params")
            for label, value in (("weights (bf16)", m.weights_gib), ("gradients (fp32)", m.grads_gib),
                                 ("optimizer (sharded)", m.optimizer_gib), ("buffers (scores, RoPE)", m.other_gib),
                                 ("activations (layers)", m.activations_gib), ("logits, embeddings", m.logits_gib),
                                 ("backward transient", m.backward_gib),
                                 ("optimizer step peak", m.step_peak_gib), ("allocator peak", m.allocated_gib),
                                 ("CUDA/NCCL allowance", m.fixed_gib)):
                print(f"    {label:22} {value:7.2f}")
            verdict = "fits" if m.fits else "DOES NOT FIT"
            print(f"    {'total':22} {m.total_gib:7.2f}  of {m.budget_gib:.1f} usable -> {verdict}")
    return 0 if all(not p.error and m.fits for p, m in results) else 1
