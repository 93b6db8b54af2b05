"""Runs a rank's program with the watchdog's rank side installed (smoke.watchdog.beat):

    python -u -m smoke.watchdog.inrank PROGRAM.py|-m MODULE [ARGS...]

smoke.rank_bind execs this in place of the program; it starts the heartbeat and the stack dump,
then runs the program in this process as Python itself would (runpy: `__main__`, sys.argv).
SMOKE_WATCHDOG=0 or no SMOKE_WATCH_DIR (a rank started by hand): the program runs untouched.
"""
from __future__ import annotations

import os
import runpy
import sys

from smoke.watchdog import beat


def main(argv: list[str]) -> int:
    if not argv or (argv[0] == "-m" and len(argv) < 2):
        print("usage: python -m smoke.watchdog.inrank PROGRAM.py|-m MODULE [ARGS...]", file=sys.stderr)
        return 2
    beat.start()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path[0:0] = [os.path.dirname(os.path.abspath(argv[0]))]  # as `python PROGRAM.py` puts its folder first
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
