"""--output/--error into a folder that does not exist at submit time, on Slurm before 23.02.

Premise: slurmstepd opens the job's stdout/stderr file with open(); before 23.02 nothing creates its
folder, so the open fails with ENOENT and the job ends at start without a log
(src/slurmd/slurmstepd/io.c, _init_task_stdio_fds, at slurm-22-05-11-1). From 23.02 on slurmstepd
calls mkdirpath() on ENOENT and retries (io.c at slurm-23-02-0-1 and every later tag through
slurm-26-05-1-1; SchedMD commit ecc671a141, NEWS of 23.02: "Automatically create directories for
stdout/stderr output files"). Holds for: 22.05 only, so the rule runs only when the targeted
release (--slurm-version, the manifest's slurm.min_version, the repository config) is older than
23.02; a script nobody here wrote is checked against the newest release and never gets it.
"""
from pathlib import Path

from validator.sbatch import before

ID = "sbatch-output-folder"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = ("Slurm before 23.02: --output/--error into a folder that exists neither next to the script nor at the "
               "repository root; slurmstepd does not create it and the job fails at start without a log "
               "(23.02 and later create it).")
CREATES_FOLDERS = "23.02"  # the first release whose slurmstepd creates missing output folders
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --output=%x-%j.out\nset -euo pipefail\necho ok\n"}
# a preset whose manifest says slurm.min_version "22.05"
BAD = {"train.sbatch": ("replace", "#SBATCH --output=%x-%j.out", "#SBATCH --output=logs/%x-%j.out")}


def check(target):
    script = target.script
    if not before(target.release, CREATES_FOLDERS):
        return
    # the submit folder is unknown: the script's folder or the repository root are the usual ones
    bases = (Path(script.source.path).parent, Path(target.repo_root))
    for name in ("output", "error"):
        for option in script.parsed.get(name):
            value = option.value or ""
            folder = value.rsplit("/", 1)[0] if "/" in value else ""
            # only relative folders can be checked here (the submit folder is taken as the script's)
            if not folder or value.startswith(("/", "~", "$")) or "%" in folder or "$" in folder \
                    or option.line in script.parsed.placeholder_lines:
                continue
            if not any((base / folder).is_dir() for base in bases):
                yield (script.display, option.line, option.col,
                       f"--{name}={value}: the folder '{folder}' exists neither next to the script nor at the repository "
                       f"root; Slurm {target.release} does not create it and the job fails without a log (create it "
                       "before sbatch, log to the submit folder, or require Slurm 23.02+)")
