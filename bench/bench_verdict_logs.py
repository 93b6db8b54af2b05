"""The verdict's log readers on hostile logs: time against size, to show they are linear.

    .venv/bin/python bench/bench_verdict_logs.py [--runs 3]

Each hostile log is the shape that made an earlier pattern super-linear (issue 24): torchrun's
"Root Cause" header followed by many host/rank lines and no numeric exit code (cubic), iteration
and pyxis lookalikes on long lines (quadratic), NCCL INFO repeated on a line. Each is timed at
1, 4 and 16 MiB; a linear reader keeps seconds per MiB flat (the ratio column near 1).
"""
from __future__ import annotations

import argparse
import statistics
import time

from smoke.verdict import logs

MIB = 2**20


def root_cause(size: int) -> str:
    block = "0: Root Cause (first observed failure):\n" + "0:   host      : node1\n0:   rank      : 3\n" * 50
    return (block * (size // len(block) + 1))[:size]


def long_lines(piece: str, size: int, tail: str = "") -> str:
    """Lines of 8 KiB made of `piece` (then `tail`), up to `size` characters."""
    line = (piece * (8192 // len(piece) + 1))[:8192] + tail + "\n"
    return line * (size // len(line) + 1)


def iteration_line(size: int) -> str:
    return long_lines("iteration 1/ 2 |", size)


def pyxis_line(size: int) -> str:
    return long_lines("slurmstepd-", size, ": error: pyxis: x")


def nccl_line(size: int) -> str:
    return long_lines("NCCL INFO Channel via NET/", size)


CASES = {
    "root cause without exit code": (root_cause, logs.failure_cause),
    "iteration lookalikes": (iteration_line, logs.parse_training_log),
    "pyxis lookalikes": (pyxis_line, logs.failure_cause),
    "NCCL lookalikes (networks)": (nccl_line, logs.nccl_networks),
    "NCCL lookalikes (channels)": (nccl_line, logs.network_channels),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'reader on a hostile log':32} {'1 MiB s':>9} {'4 MiB s':>9} {'16 MiB s':>9} {'s/MiB 16 vs 1':>14}")
    for name, (make, read) in CASES.items():
        medians = []
        for mib in (1, 4, 16):
            text = make(mib * MIB)
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                read(text)
                times.append(time.perf_counter() - start)
            medians.append(statistics.median(times))
        ratio = (medians[2] / 16) / (medians[0] / 1)
        print(f"{name:32} {medians[0]:9.3f} {medians[1]:9.3f} {medians[2]:9.3f} {ratio:14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
