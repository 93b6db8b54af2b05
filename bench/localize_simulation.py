"""Localization's scale on paper: the group search against an oracle for N = 4..4096 and 0..4 bad
nodes, beside sqrt(N)-sized groups and all pairs (the table in docs/localization.md).

    .venv/bin/python bench/localize_simulation.py [--step-cost S] [--node-step-cost S] [--json]
"""
from __future__ import annotations

import argparse
import json
import math
import sys

from smoke.localize.search import simulate


def all_pairs_rounds(n: int, max_steps: int) -> tuple[int, int]:
    """All pairs, as a round-robin tournament: n-1 rounds of n/2 concurrent pairs (n even), each
    round cut into waves of max_steps steps. Returns (rounds, steps)."""
    rounds = n - 1 if n % 2 == 0 else n
    per_round = n // 2
    return rounds * math.ceil(per_round / max_steps), n * (n - 1) // 2


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
    parser.add_argument("--step-cost", type=float, default=10.0, help="seconds one round of group steps takes")
    parser.add_argument("--node-step-cost", type=float, default=10.0, help="seconds the per-node step takes")
    parser.add_argument("--max-steps", type=int, default=64)
    parser.add_argument("--json", action="store_true", help="the rows as JSON instead of the docs table")
    args = parser.parse_args(argv)
    if args.json:
        print(json.dumps(simulation_table(args.step_cost, args.node_step_cost, args.max_steps)))
        return 0
    print("| N | bad | found | rounds | srun steps | est. s | sqrt(N) groups: rounds / steps / s | all pairs: rounds / steps / s |")
    print("|---:|---:|:---:|---:|---:|---:|---|---|")
    for r in simulation_table(args.step_cost, args.node_step_cost, args.max_steps):
        print(f"| {r['n']} | {r['bad']} | {'yes' if r['found'] else 'NO'} | {r['rounds']} | {r['steps']} | "
              f"{r['seconds']:.0f} | {r['sqrt_rounds']} / {r['sqrt_steps']} / {r['sqrt_seconds']:.0f}{'' if r['sqrt_found'] else ' (missed)'} | "
              f"{r['pairs_rounds']} / {r['pairs_steps']} / {r['pairs_seconds']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
