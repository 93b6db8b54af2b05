"""Benchmark: the validator against bare shellcheck on the same scripts (make bench).

1. The preset matrix: `python -m validator` (all rules, one process) next to one bare
   `shellcheck` call over the same scripts. Target: the matrix validates in under 0.5 s.
2. 300 generated presets: the whole validator next to one bare single-process shellcheck call over
   the same 300 scripts. Target: the validator is no slower (it uses every core for shellcheck).
Medians of several runs, each a fresh process; ratios from the same run.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "7"))


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:3]} failed with {proc.returncode}: {proc.stderr[-500:]}")
    return elapsed


def median_of(cmd, cwd) -> float:
    timed(cmd, cwd)  # warm the page cache
    return statistics.median(timed(cmd, cwd) for _ in range(RUNS))


def shellcheck_cmd(paths: list[str]) -> list[str]:
    binary = str(Path(sys.executable).parent / "shellcheck")
    return [binary, "--format=json1", "--norc", "--shell=bash", "--exclude=SC1091",
            "--enable=check-set-e-suppressed,check-extra-masked-returns", "--", *paths]


def shell_scripts(folder: Path) -> list[Path]:
    from validator.engine import shell_scripts_in
    return shell_scripts_in(folder)


def make_presets(folder: Path, count: int) -> list[str]:
    sources = sorted(p for p in (ROOT / "presets").iterdir() if p.is_dir())
    shutil.copytree(ROOT / "scripts", folder / "scripts")  # a link out of the folder is refused (input-symlink-escape)
    for i in range(count):
        src = sources[i % len(sources)]
        dst = folder / "presets" / f"{src.name}-{i:03d}"
        shutil.copytree(src, dst)
        manifest = dst / "preset.yaml"
        manifest.write_text(manifest.read_text().replace(f"name: {src.name}\n", f"name: {dst.name}\n"))
    return sorted(str(p.relative_to(folder) / "train.sbatch") for p in (folder / "presets").iterdir()) + [
        str(p.relative_to(ROOT)) for p in shell_scripts(ROOT / "scripts")]


def main() -> int:
    py = sys.executable
    folders = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "presets").iterdir() if p.is_dir())
    scripts = [f"{f}/train.sbatch" for f in folders]
    v = median_of([py, "-m", "validator", *folders], ROOT)
    s = median_of(shellcheck_cmd(scripts), ROOT)
    print(f"the preset matrix ({len(folders)} presets), median of {RUNS}:")
    print(f"  validator (all rules)      {v * 1000:8.0f} ms   target < 500 ms: {'met' if v < 0.5 else 'MISSED'}")
    print(f"  bare shellcheck            {s * 1000:8.0f} ms")
    print(f"  ratio validator/shellcheck {v / s:8.2f}")
    everything = scripts + [str(p.relative_to(ROOT)) for p in shell_scripts(ROOT / "scripts")]
    v = median_of([py, "-m", "validator"], ROOT)
    s = median_of(shellcheck_cmd(everything), ROOT)
    print(f"make validate's run (presets and the {len(everything) - len(scripts)} scripts/ shell files), median of {RUNS}:")
    print(f"  validator (all rules)      {v * 1000:8.0f} ms")
    print(f"  bare shellcheck            {s * 1000:8.0f} ms   ratio {v / s:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        many = make_presets(folder, 300)
        runs = max(3, RUNS // 2)
        vm = statistics.median(timed([py, "-m", "validator"], folder) for _ in range(runs))
        sm = statistics.median(timed(shellcheck_cmd(many), folder) for _ in range(runs))
    print(f"300 generated presets, median of {runs} (cores: {os.cpu_count()}):")
    print(f"  validator (all rules)      {vm * 1000:8.0f} ms")
    print(f"  bare shellcheck, 1 process {sm * 1000:8.0f} ms")
    print(f"  ratio validator/shellcheck {vm / sm:8.2f}   target <= 1.00: {'met' if vm <= sm else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
