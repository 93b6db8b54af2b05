"""Group tests under healthy spread: how often GroupSearch names a healthy node, and how often it
finds a slow one, when healthy groups' figures differ (normal around 1, sigma 1-3 %; repeat noise
0.2 %; the GPU floor 5 %). Simulation only (no Slurm): the numbers in docs/localization.md,
"How a figure is judged".

    python3 bench/group_noise.py [--runs 200]
"""
import argparse
import random

from smoke.localize.search import GroupSearch
from smoke.localize.stats import FLOOR


def trial(n: int, sigma: float, slow: float, runs: int, seed: int = 1) -> tuple[float, float]:
    """(share of runs naming a healthy node, share of runs naming the slow node) with one node `slow`
    below the rest (0: a healthy run)."""
    rng = random.Random(seed)
    false = found = 0
    for _ in range(runs):
        nodes = [f"n{i}" for i in range(n)]
        bad = nodes[rng.randrange(n)] if slow else None
        search = GroupSearch(nodes, 0.002, FLOOR["full"])
        named = search.run(lambda tests: [rng.gauss(1, sigma) * ((1 - slow) if bad in ran_on else 1)
                                          for _, _, ran_on in tests])
        false += any(node != bad for node in named)
        found += bad in named
    return false / runs, found / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    print("| N | healthy spread | healthy runs naming someone | 10 % slow node found | 7 % slow node found |")
    print("|---:|---:|---:|---:|---:|")
    for n in (16, 64, 256, 1024):
        for sigma in (0.01, 0.02, 0.03):
            healthy = trial(n, sigma, 0.0, args.runs)[0]
            ten, seven = trial(n, sigma, 0.10, args.runs)[1], trial(n, sigma, 0.07, args.runs)[1]
            print(f"| {n} | {sigma:.0%} | {healthy:.1%} | {ten:.1%} | {seven:.1%} |")


if __name__ == "__main__":
    main()
