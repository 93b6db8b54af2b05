"""`python -m validator plan PRESET --nodes N`: what the preset will compute, before submitting."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from types import SimpleNamespace

from validator.engine import find_root
from validator.output import escape
from validator.planner import as_dict, estimate_memory, plan_for
from validator.schema_check import schema_problems
from validator.source import read_source
from validator.yamlload import load_yaml


MAX_NODES = 1_000_000  # a node count beyond any cluster: a typo, refused before any work
MAX_COUNTS = 4096  # node counts planned in one call
MAX_GPUS_PER_NODE = 1024


def _count(text: str, what: str, high: int) -> int:
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(high)) or not 1 <= int(text) <= high:
        raise argparse.ArgumentTypeError(f"'{text[:40]}' is not a {what} from 1 to {high}")
    return int(text)


def node_counts(text: str) -> list[int]:
    """'4', '1,2,8' or '1-8' (or a mix): the node counts to plan for."""
    counts = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.strip():
            raise argparse.ArgumentTypeError(f"'{text[:40]}' is not a node count, a list (1,2,8) or a range (1-8)")
        first = _count(low, "node count", MAX_NODES)
        last = _count(high, "node count", MAX_NODES) if dash else first
        if last < first or len(counts) + last - first + 1 > MAX_COUNTS:
            raise argparse.ArgumentTypeError(f"'{part.strip()[:40]}' is not a range of at most {MAX_COUNTS} node counts")
        counts.extend(range(first, last + 1))
    return counts


def gpus_per_node(text: str) -> int:
    return _count(text, "GPU count per node", MAX_GPUS_PER_NODE)


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
    parser.add_argument("--gpus-per-node", type=gpus_per_node, help="override the manifest's GPUs per node")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    path = Path(args.preset)
    manifest_path = path / "preset.yaml" if path.is_dir() else path
    src = read_source(manifest_path, find_root(manifest_path))
    if not src.usable:
        for problem in src.problems:
            print(escape(problem.as_text()), file=sys.stderr)
        return 2
    display = escape(src.display)
    doc = load_yaml(src.text, display)
    # The planner sees only a manifest that passed the schema (every number bounded there).
    schema = [] if doc.problems else list(schema_problems(SimpleNamespace(document=doc)))
    if doc.problems or schema or doc.data["nodes"]["min"] > doc.data["nodes"]["max"]:
        for problem in doc.problems:
            print(escape(problem.as_text()), file=sys.stderr)
        for line, col, message in schema:
            print(escape(f"{display}:{line}:{col}: error: {message} [manifest-schema]"), file=sys.stderr)
        print(f"{display}: not a valid manifest; run 'python -m validator {escape(args.preset)}' first",
              file=sys.stderr)
        return 2
    try:
        results = []
        for nodes in args.nodes:
            p = plan_for(doc.data, nodes, args.gpus_per_node)
            results.append((p, None if p.error else estimate_memory(doc.data, p)))
    except (KeyError, TypeError, ValueError) as exc:
        print(f"{display}: manifest incomplete for planning ({exc}); run the validator on it", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps([as_dict(p, m) for p, m in results], indent=2))
    elif len(results) > 1:
        print_summary(display, results)
    else:
        for p, m in results:
            print(f"{display} on {p.nodes} node(s) x {p.gpus_per_node} GPU(s): world {p.world}")
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
                                 ("CUDA/NCCL allowance", m.fixed_gib), ("allocator reserve", m.reserve_gib)):
                print(f"    {label:22} {value:7.2f}")
            verdict = "fits" if m.fits else "DOES NOT FIT"
            print(f"    {'total':22} {m.total_gib:7.2f}  of {m.budget_gib:.1f} usable -> {verdict}")
    return 0 if all(not p.error and m.fits for p, m in results) else 1
