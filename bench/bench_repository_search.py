"""launch-time-limit's search of the job's repository for a submitter that passes a time limit (issue 28): wall
time of the validator (default profile, no shellcheck) on a job without #SBATCH --time in repositories built to
the search's bounds. Shapes: "many-scripts", 5,000 small scripts of 50 sbatch lines each (the file bound);
"big-notes", 80 notes of 256 KiB of sbatch lines (the 16 MiB read bound); "many-names", 60,000 files no
submitter is looked for in (the bound on names listed); "none", the job alone. Median of 5 runs, one process each.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = "#!/bin/bash\n#SBATCH --nodes=1\nset -euo pipefail\npython train.py\n"
LINE = "sbatch -t 30 --parsable jobs/other_experiment_{i}.sbatch arg\n"


def build(folder: Path, shape: str) -> Path:
    (folder / ".git").mkdir()
    (folder / "jobs").mkdir()
    job = folder / "jobs" / "pretrain_large.sbatch"
    job.write_text(JOB)
    if shape == "many-scripts":
        (folder / "scripts").mkdir()
        text = "".join(LINE.format(i=i) for i in range(50))
        for i in range(5_000):
            (folder / "scripts" / f"submit_{i}.sh").write_text(text)
    elif shape == "big-notes":
        (folder / "notes").mkdir()
        text = "".join(LINE.format(i=i) for i in range(5_000))[:256 * 1024 - 64]
        for i in range(80):
            (folder / "notes" / f"runs_{i}.md").write_text(text)
    elif shape == "many-names":
        (folder / "data").mkdir()
        for i in range(60_000):
            (folder / "data" / f"sample_{i}.npy").write_bytes(b"")
    return job


def main() -> int:
    print("| shape | median wall s (5 runs) |")
    print("|---|---:|")
    for shape in ("none", "many-scripts", "big-notes", "many-names"):
        with tempfile.TemporaryDirectory() as tmp:
            job = build(Path(tmp), shape)
            times = []
            for _ in range(5):
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "validator", "--no-shellcheck", str(job)],
                                      cwd=tmp, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                                      capture_output=True, text=True)
                times.append(time.perf_counter() - start)
                if "[launch-time-limit]" not in done.stdout:
                    print(f"{shape}: the job's finding is missing: {done.stdout} {done.stderr}", file=sys.stderr)
                    return 1
            print(f"| {shape} | {statistics.median(times):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
