"""Bounds per file (README "Bounds"): CPU time and peak memory of the validator on 256 KiB hostile
inputs, without and with shellcheck (make bench prints them after the speed benchmark).

Each input is just under the 256 KiB size bound: a real preset script repeated, 20 000 printed
secrets (60 000 findings), 6 000 broken directive lines, 1 500 long launcher lines, and nesting
bombs (40 000 `$(`, 100 000 `(`, 50 000 wrapped `time`). CPU is user+system of the validator and
every process it waited for (shellcheck); memory is the largest single process's peak RSS.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZE = 256 * 1024 - 64
SH = "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"


def inputs() -> dict[str, str]:
    real = (ROOT / "presets" / "gh200" / "train.sbatch").read_text()
    return {name: text[:SIZE] for name, text in {
        "real-preset-repeated": real * (SIZE // len(real) + 1),
        "printed-secrets": SH + "TOKEN=x\n" + 'echo "$TOKEN $TOKEN $TOKEN"\n' * 20000,
        "broken-directives": "#!/bin/bash\n" + "#SBATCH --time=1 --ntasks-per=2 -N 1 --gpus-per\n" * 6000,
        "launcher-lines": SH + ("srun --kill-on-bad-exit=1 torchrun --nproc-per-node=8 --rdzv-endpoint=h:29500 x.py "
                                + "--a=b " * 20 + "\n") * 1500,
        "nested-substitutions": SH + "echo " + "$(" * 40000 + "x" + ")" * 40000 + "\n",
        "nested-subshells": SH + "(" * 100000 + "true" + ")" * 100000 + "\n",
        "wrapper-chain": SH + "time " * 50000 + "srun true\n",
    }.items()}


_PROBE = """
import resource, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True)
wall = time.perf_counter() - start
u = resource.getrusage(resource.RUSAGE_CHILDREN)
bad = int(b"Traceback" in proc.stderr)
print(wall, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, proc.returncode, bad)
"""


def measure(args: list[str], cwd: Path) -> tuple[float, float, float, int]:
    """(wall s, CPU s of the validator and its children, peak RSS MB of the largest process, exit code),
    measured from a fresh process each time (peak RSS of a process's children only ever grows)."""
    out = subprocess.run([sys.executable, "-c", _PROBE, sys.executable, "-m", "validator", *args], cwd=cwd,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    wall, cpu, peak, code, traceback = out.stdout.split()
    assert traceback == "0" and int(code) in (0, 1, 2), out.stdout
    return float(wall), float(cpu), float(peak), int(code)


def main() -> int:
    print("bounds per 256 KiB file: wall s / CPU s / peak MB (largest process) / exit code")
    print(f"  {'input':24} {'validator alone':>28}   {'with shellcheck':>28}")
    with tempfile.TemporaryDirectory(prefix="bench-bounds-") as tmp:
        folder = Path(tmp)
        (folder / ".git").mkdir()
        for name, text in inputs().items():
            path = folder / f"{name}.sbatch"
            path.write_text(text)
            alone = measure(["--no-shellcheck", path.name], folder)
            full = measure(["--strict", path.name], folder)
            print(f"  {name:24} {alone[0]:6.2f} {alone[1]:6.2f} {alone[2]:7.0f} {alone[3]:3d}   "
                  f"{full[0]:6.2f} {full[1]:6.2f} {full[2]:7.0f} {full[3]:3d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
