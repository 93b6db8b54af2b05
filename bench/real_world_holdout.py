"""Choose the held-out quarter of a real-world corpus, before the validator has seen any of it.

    python3 bench/real_world_holdout.py --corpus DIR [--seed 2028] > docs/real-world-r2-holdout.tsv

Reads DIR/MANIFEST.tsv (repository, path, commit), sorts it, and draws a quarter of the scripts
(rounded up) with random.Random(seed).sample: the same manifest and seed give the same list. The
draw is by script, not by repository, so the held-out part has the corpus's mix of sources. The
held-out scripts are scored separately by bench/real_world.py --holdout and never used to tune rules.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, type=Path)
    p.add_argument("--seed", type=int, default=2028)
    args = p.parse_args(argv)
    rows = sorted(tuple(line.rstrip("\n").split("\t"))
                  for line in open(args.corpus / "MANIFEST.tsv", encoding="utf-8") if line.strip())
    held = sorted(random.Random(args.seed).sample(rows, math.ceil(len(rows) / 4)))
    print("repository\tpath\tcommit")
    for row in held:
        print("\t".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
