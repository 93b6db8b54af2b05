"""--output/--error into a folder that does not exist at submit time: Slurm does not create it and the job fails without a log."""
from pathlib import Path

ID = "sbatch-output-folder"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = ("--output/--error into a folder that exists neither next to the script nor at the repository root: "
               "Slurm does not create it; the job fails at start and writes no log.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --output=%x-%j.out\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --output=logs/%x-%j.out\nset -euo pipefail\n"
                     "mkdir -p logs\necho ok\n"}


def check(target):
    script = target.script
    # the submit folder is unknown: the script's folder or the repository root are the usual ones
    bases = (Path(script.source.path).parent, Path(target.repo_root))
    for name in ("output", "error"):
        for option in script.parsed.get(name):
            value = option.value or ""
            folder = value.rsplit("/", 1)[0] if "/" in value else ""
            # only relative folders can be checked here (the submit folder is taken as the script's)
            if not folder or value.startswith(("/", "~", "$")) or "%" in folder or "$" in folder:
                continue
            if not any((base / folder).is_dir() for base in bases):
                yield (script.display, option.line, option.col,
                       f"--{name}={value}: the folder '{folder}' exists neither next to the script nor at the repository root; Slurm does not "
                       "create it and the job fails without a log (create it before sbatch, or log to the submit folder)")
